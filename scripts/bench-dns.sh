#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# DNS benchmark (make bench, part D): dnsperf from a sandbox namespace on
# the pod bridge, against three peers that reach the same upstream:
#   direct    the upstream (unbound, authoritative for bench.test) itself,
#             on its second port so redirection leaves it alone;
#   dnsmasq   dnsmasq in the pod as a plain non-caching forwarder;
#   fastwall  fastwalld's proxy through the gateway's port 53: the policy
#             decision and the learned-map write for every answer.
# All three cross the same veth, bridge and TC program (fastwall attached
# for all of them), so the differences are the resolvers'. The peers are
# interleaved per round so noise hits them alike. Reported: queries/s at
# saturation (median of ROUNDS, with min-max) and, at each fixed rate of
# RATES, the p50 and p99 latency from dnsperf's per-query output, with what
# each forwarder adds to the direct path.
#
# Env: BUILD (build), ROUNDS (3), SECONDS_SAT (5), RATES ("2000 10000"),
# SECONDS_LAT (4), CLIENTS (4), OUTSTANDING (200), OUT ($BUILD/bench-dns).
set -euo pipefail

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
SECONDS_SAT=${SECONDS_SAT:-5}
RATES=${RATES:-2000 10000}
SECONDS_LAT=${SECONDS_LAT:-4}
CLIENTS=${CLIENTS:-4}
OUTSTANDING=${OUTSTANDING:-200}
OUT=${OUT:-$BUILD/bench-dns}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
FASTWALLD=$BUILD/fastwalld

[[ $EUID -eq 0 ]] || { echo "bench-dns.sh: needs root (namespaces)" >&2; exit 1; }
for t in dnsperf unbound dnsmasq dig; do
	command -v $t >/dev/null || { echo "bench-dns.sh: $t missing (scripts/install-deps.sh)" >&2; exit 1; }
done
[[ -x $FASTWALLD ]] || { echo "bench-dns.sh: $FASTWALLD missing; run make" >&2; exit 1; }
mkdir -p "$OUT"

ID=$$
POD=fwd$ID-pod UP=fwd$ID-up CL=fwd$ID-cl
TMP=$(mktemp -d "/tmp/fastwall-bench-dns.XXXXXX")
BPFFS=/sys/fs/bpf/fastwall-bench-dns-$ID
PIDS=()

cleanup() {
	set +e
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for ns in $CL $POD $UP; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$BPFFS" "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }
bg() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@" >>"$TMP/bg.log" 2>&1 & PIDS+=($!); }

# topology: client -- br0 (pod, 10.42.0.1) -- up0 192.0.2.1 <-> 192.0.2.254 (up)
for ns in $POD $UP $CL; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n $POD link add br0 address 02:fa:57:00:00:01 type bridge
ip -n $POD addr add 10.42.0.1/24 dev br0
ip -n $POD link set br0 up
ip -n $POD link add sb-c type veth peer name eth0 netns $CL
ip -n $POD link set sb-c master br0
ip -n $POD link set sb-c up
ip -n $CL addr add 10.42.0.2/24 dev eth0
ip -n $CL link set eth0 up
ip -n $CL route add default via 10.42.0.1
ip -n $POD link add up0 type veth peer name eth0 netns $UP
ip -n $POD addr add 192.0.2.1/24 dev up0
ip -n $POD link set up0 up
ip -n $POD route add default via 192.0.2.254
ip -n $UP addr add 192.0.2.254/24 dev eth0
ip -n $UP link set eth0 up
ip -n $UP addr add 198.51.100.53/32 dev lo
ip -n $UP route add 10.42.0.0/24 via 192.0.2.1
in_ns $POD sysctl -qw net.ipv4.ip_forward=1

cat >"$TMP/unbound.conf" <<EOF
server:
  interface: 198.51.100.53
  interface: 198.51.100.53@5353
  port: 53
  do-ip6: no
  username: ""
  chroot: ""
  directory: "$TMP"
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 0
  do-daemonize: no
  num-threads: 2
  so-reuseport: yes
  access-control: 0.0.0.0/0 allow
  module-config: "iterator"
  local-zone: "bench.test." redirect
  local-data: "bench.test. 300 IN A 198.51.100.77"
EOF
bg $UP unbound -c "$TMP/unbound.conf"

cat >"$TMP/dnsmasq.conf" <<EOF
no-resolv
no-hosts
no-poll
bind-interfaces
listen-address=10.42.0.1
port=5300
user=root
pid-file=
cache-size=0
server=198.51.100.53
dns-forward-max=1000
EOF
bg $POD dnsmasq -k -C "$TMP/dnsmasq.conf" --log-facility="$TMP/dnsmasq.log"

cat >"$TMP/fastwalld.yaml" <<EOF
log_level: warn
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  local_ports: ["udp/5300", "tcp/5300"]
  events: { rate: 0 }
dns:
  upstreams: [198.51.100.53]
  workers: 2
  probe_interval: 0
subjects:
  - name: client
    addresses: [10.42.0.2]
    interface: sb-c
    gateway: 10.42.0.1
    private_cidr: 10.42.0.0/24
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: "*.bench.test" }
        - { action: allow, target: 198.51.100.53 }
EOF
bg $POD "$FASTWALLD" -c "$TMP/fastwalld.yaml" run
for ((i = 0; i < 100; i++)); do
	in_ns $CL dig +short +time=1 +tries=1 @10.42.0.1 q0.bench.test 2>/dev/null | grep -q 198.51.100.77 && break
	sleep 0.1
done
for peer in "direct 198.51.100.53 5353" "dnsmasq 10.42.0.1 5300" "fastwall 10.42.0.1 53"; do
	read -r name srv port <<<"$peer"
	in_ns $CL dig +short +time=2 +tries=2 -p "$port" @"$srv" q1.bench.test | grep -q 198.51.100.77 ||
		{ echo "bench-dns.sh: peer $name ($srv:$port) does not answer" >&2; cat "$TMP/bg.log" >&2; exit 1; }
done

for i in $(seq 1 20000); do echo "q$i.bench.test A"; done >"$TMP/queries"

sat() { # SRV PORT -> queries/s
	in_ns $CL dnsperf -s "$1" -p "$2" -d "$TMP/queries" -l "$SECONDS_SAT" -c "$CLIENTS" \
		-q "$OUTSTANDING" 2>&1 | awk '/Queries per second/ { printf "%d\n", $4 }'
}
lat() { # SRV PORT RATE -> "p50_us p99_us lost"
	in_ns $CL dnsperf -s "$1" -p "$2" -d "$TMP/queries" -l "$SECONDS_LAT" -Q "$3" -c 1 -v \
		>"$TMP/lat.out" 2>&1 || true
	awk '/^> / { printf "%d\n", $NF * 1e6 }' "$TMP/lat.out" | sort -n >"$TMP/lat.sorted"
	awk -v lost="$(awk '/Queries lost/ { print $3 }' "$TMP/lat.out")" '
		{ v[NR] = $1 } END { if (!NR) { print "0 0 " lost; exit }
		printf "%d %d %d\n", v[int(NR * 0.50) + 1], v[int(NR * 0.99) + 1], lost }' "$TMP/lat.sorted"
}
median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d %d %d\n", m, v[1], v[NR] }'; }

# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"
bench_env "bench-dns"
echo "bench-dns: dnsperf ${CLIENTS} clients x ${OUTSTANDING} outstanding, ${SECONDS_SAT} s, $ROUNDS rounds; latency at $RATES q/s for ${SECONDS_LAT} s"
PEERS=("direct 198.51.100.53 5353" "dnsmasq 10.42.0.1 5300" "fastwall 10.42.0.1 53")
: >"$TMP/raw"
for ((r = 1; r <= ROUNDS; r++)); do
	for peer in "${PEERS[@]}"; do
		read -r name srv port <<<"$peer"
		q=$(sat "$srv" "$port")
		echo "sat $name $r $q" >>"$TMP/raw"
		line=$(printf '  round %d %-9s %8s q/s' "$r" "$name" "$q")
		for rate in $RATES; do
			read -r p50 p99 lost <<<"$(lat "$srv" "$port" "$rate")"
			echo "lat $name $r $rate $p50 $p99 $lost" >>"$TMP/raw"
			line+=$(printf '   @%s: p50 %5s us p99 %6s us (lost %s)' "$rate" "$p50" "$p99" "$lost")
		done
		echo "$line"
	done
done

{
	echo "# peer qps_median qps_min qps_max then per rate: rate p50_us p99_us (medians)"
	for name in direct dnsmasq fastwall; do
		read -r qm qmin qmax <<<"$(awk -v n=$name '$1 == "sat" && $2 == n { print $4 }' "$TMP/raw" | median)"
		line="$name $qm $qmin $qmax"
		for rate in $RATES; do
			read -r p50 _ _ <<<"$(awk -v n="$name" -v r="$rate" '$1 == "lat" && $2 == n && $4 == r { print $5 }' "$TMP/raw" | median)"
			read -r p99 _ _ <<<"$(awk -v n="$name" -v r="$rate" '$1 == "lat" && $2 == n && $4 == r { print $6 }' "$TMP/raw" | median)"
			line+=" $rate $p50 $p99"
		done
		echo "$line"
	done
} >"$OUT/dns.dat"

echo
printf '%-9s %12s %17s' peer "q/s median" "(min-max)"
for rate in $RATES; do printf ' | @%-6s %7s %7s %8s %8s' "$rate" "p50 us" "p99 us" "+p50" "+p99"; done
echo
read -ra D < <(awk '$1 == "direct"' "$OUT/dns.dat")
while read -ra F; do
	[[ ${F[0]} == \#* ]] && continue
	printf '%-9s %12s %17s' "${F[0]}" "${F[1]}" "(${F[2]}-${F[3]})"
	for ((i = 4; i < ${#F[@]}; i += 3)); do
		printf ' | @%-6s %7s %7s %8s %8s' "${F[i]}" "${F[i + 1]}" "${F[i + 2]}" \
			"+$((F[i + 1] - D[i + 1]))" "+$((F[i + 2] - D[i + 2]))"
	done
	echo
done <"$OUT/dns.dat"
read -ra M < <(awk '$1 == "dnsmasq"' "$OUT/dns.dat")
read -ra W < <(awk '$1 == "fastwall"' "$OUT/dns.dat")
echo
awk -v f="${W[1]}" -v m="${M[1]}" 'BEGIN { printf "fastwall / dnsmasq queries/s: %.2fx (target >= 1)\n", m ? f / m : 0 }'
for ((i = 4; i < ${#W[@]}; i += 3)); do
	echo "added at ${W[i]} q/s, fastwall vs dnsmasq: p50 +$((W[i + 1] - D[i + 1])) us vs +$((M[i + 1] - D[i + 1])) us, p99 +$((W[i + 2] - D[i + 2])) us vs +$((M[i + 2] - D[i + 2])) us (target: no worse)"
done
echo "results in $OUT/dns.dat"
