#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# DNS benchmark (make bench, part D): dnsperf from a sandbox namespace on
# the pod bridge, against three peers that reach the same upstream:
#   direct    the upstream (unbound, authoritative for bench.test) itself,
#             on its second port so redirection leaves it alone;
#   dnsmasq   dnsmasq in the pod as a plain non-caching forwarder;
#   unbound   unbound in the pod as a forwarder (2 threads, as the proxy's
#             2 workers), its caches emptied at once (cache-max-ttl 0);
#   fastwall  fastwalld's proxy through the gateway's port 53: the policy
#             decision and the learned-map write for every answer.
# All three cross the same veth, bridge and TC program (fastwall attached
# for all of them), so the differences are the resolvers'. The peers are
# interleaved per round so noise hits them alike. Reported: queries/s at
# saturation (median of ROUNDS, with min-max) and, at each fixed rate of
# RATES, the p50 and p99 latency from dnsperf's per-query output, with what
# each forwarder adds to the direct path, and the CPU time each forwarder
# process spent per answered query at saturation (user + system, from
# /proc/PID/stat; the kernel's work on its sockets counts to it, the
# softirq work of the veth and bridge mostly does not).
#
# Env: BUILD (build), ROUNDS (3), SECONDS_SAT (5), RATES ("2000 10000"),
# SECONDS_LAT (4), CLIENTS (4), OUTSTANDING (200), OUT ($BUILD/bench-dns),
# PROFILE (0; 1: after the rounds, `perf record -g` of fastwalld under one
# more saturation run, report in $OUT/perf.txt).
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
DNSMASQ_PID=${PIDS[-1]}

cat >"$TMP/unbound-fwd.conf" <<EOF
server:
  interface: 10.42.0.1@5301
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
  cache-max-ttl: 0
  cache-max-negative-ttl: 0
  prefetch: no
  module-config: "iterator"
  local-zone: "test." nodefault
forward-zone:
  name: "."
  forward-addr: 198.51.100.53
EOF
bg $POD unbound -c "$TMP/unbound-fwd.conf"
UNBOUND_PID=${PIDS[-1]}

cat >"$TMP/fastwalld.yaml" <<EOF
log_level: warn
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  local_ports: ["udp/5300", "tcp/5300", "udp/5301", "tcp/5301"]
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
FASTWALLD_PID=${PIDS[-1]}
for ((i = 0; i < 100; i++)); do
	in_ns $CL dig +short +time=1 +tries=1 @10.42.0.1 q0.bench.test 2>/dev/null | grep -q 198.51.100.77 && break
	sleep 0.1
done
PEERS=("direct 198.51.100.53 5353" "dnsmasq 10.42.0.1 5300" "unbound 10.42.0.1 5301" "fastwall 10.42.0.1 53")
declare -A PID_OF=([dnsmasq]=$DNSMASQ_PID [unbound]=$UNBOUND_PID [fastwall]=$FASTWALLD_PID)
for peer in "${PEERS[@]}"; do
	read -r name srv port <<<"$peer"
	in_ns $CL dig +short +time=2 +tries=2 -p "$port" @"$srv" q1.bench.test | grep -q 198.51.100.77 ||
		{ echo "bench-dns.sh: peer $name ($srv:$port) does not answer" >&2; cat "$TMP/bg.log" >&2; exit 1; }
done

for i in $(seq 1 20000); do echo "q$i.bench.test A"; done >"$TMP/queries"

cpu_ticks() { # PID -> utime + stime of every thread, in clock ticks
	[[ -n ${1:-} ]] || { echo 0; return; }
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
sat() { # SRV PORT PID -> "queries/s cpu_us_per_query"
	local t0 t1 out
	t0=$(cpu_ticks "${3:-}")
	out=$(in_ns $CL dnsperf -s "$1" -p "$2" -d "$TMP/queries" -l "$SECONDS_SAT" -c "$CLIENTS" \
		-q "$OUTSTANDING" 2>&1)
	t1=$(cpu_ticks "${3:-}")
	awk -v dt=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v pid="${3:-}" '
		/Queries completed/ { n = $3 } /Queries per second/ { q = $4 }
		END { printf "%d %.2f\n", q, (pid != "" && n) ? dt / hz * 1e6 / n : 0 }' <<<"$out"
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
: >"$TMP/raw"
for ((r = 1; r <= ROUNDS; r++)); do
	for peer in "${PEERS[@]}"; do
		read -r name srv port <<<"$peer"
		read -r q cpu <<<"$(sat "$srv" "$port" "${PID_OF[$name]:-}")"
		echo "sat $name $r $q $cpu" >>"$TMP/raw"
		line=$(printf '  round %d %-9s %8s q/s %6s us CPU/q' "$r" "$name" "$q" "$cpu")
		for rate in $RATES; do
			read -r p50 p99 lost <<<"$(lat "$srv" "$port" "$rate")"
			echo "lat $name $r $rate $p50 $p99 $lost" >>"$TMP/raw"
			line+=$(printf '   @%s: p50 %5s us p99 %6s us (lost %s)' "$rate" "$p50" "$p99" "$lost")
		done
		echo "$line"
	done
done

{
	echo "# peer qps_median qps_min qps_max cpu_ns_per_query then per rate: rate p50_us p99_us (medians)"
	for name in direct dnsmasq unbound fastwall; do
		read -r qm qmin qmax <<<"$(awk -v n=$name '$1 == "sat" && $2 == n { print $4 }' "$TMP/raw" | median)"
		read -r cpu _ _ <<<"$(awk -v n=$name '$1 == "sat" && $2 == n { printf "%d\n", $5 * 1000 }' "$TMP/raw" | median)"
		line="$name $qm $qmin $qmax $cpu"
		for rate in $RATES; do
			read -r p50 _ _ <<<"$(awk -v n="$name" -v r="$rate" '$1 == "lat" && $2 == n && $4 == r { print $5 }' "$TMP/raw" | median)"
			read -r p99 _ _ <<<"$(awk -v n="$name" -v r="$rate" '$1 == "lat" && $2 == n && $4 == r { print $6 }' "$TMP/raw" | median)"
			line+=" $rate $p50 $p99"
		done
		echo "$line"
	done
} >"$OUT/dns.dat"

echo
printf '%-9s %12s %17s %9s' peer "q/s median" "(min-max)" "CPU ns/q"
for rate in $RATES; do printf ' | @%-6s %7s %7s %8s %8s' "$rate" "p50 us" "p99 us" "+p50" "+p99"; done
echo
read -ra D < <(awk '$1 == "direct"' "$OUT/dns.dat")
while read -ra F; do
	[[ ${F[0]} == \#* ]] && continue
	printf '%-9s %12s %17s %9s' "${F[0]}" "${F[1]}" "(${F[2]}-${F[3]})" "${F[4]}"
	for ((i = 5; i < ${#F[@]}; i += 3)); do
		printf ' | @%-6s %7s %7s %8s %8s' "${F[i]}" "${F[i + 1]}" "${F[i + 2]}" \
			"+$((F[i + 1] - D[i + 1]))" "+$((F[i + 2] - D[i + 2]))"
	done
	echo
done <"$OUT/dns.dat"
read -ra M < <(awk '$1 == "dnsmasq"' "$OUT/dns.dat")
read -ra U < <(awk '$1 == "unbound"' "$OUT/dns.dat")
read -ra W < <(awk '$1 == "fastwall"' "$OUT/dns.dat")
echo
awk -v f="${W[1]}" -v m="${M[1]}" 'BEGIN { printf "fastwall / dnsmasq queries/s: %.2fx (target >= 1.5)\n", m ? f / m : 0 }'
awk -v f="${W[1]}" -v u="${U[1]}" 'BEGIN { printf "fastwall / unbound (forwarder) queries/s: %.2fx (target >= 1)\n", u ? f / u : 0 }'
awk -v f="${W[1]}" -v d="${D[1]}" 'BEGIN { printf "fastwall / the upstream answering directly: %.2fx\n", d ? f / d : 0 }'
for ((i = 5; i < ${#W[@]}; i += 3)); do
	echo "added at ${W[i]} q/s, fastwall vs dnsmasq: p50 +$((W[i + 1] - D[i + 1])) us vs +$((M[i + 1] - D[i + 1])) us, p99 +$((W[i + 2] - D[i + 2])) us vs +$((M[i + 2] - D[i + 2])) us (target: no worse)"
done
if [[ ${PROFILE:-0} == 1 ]]; then
	command -v perf >/dev/null || { echo "bench-dns.sh: PROFILE=1 needs perf" >&2; exit 1; }
	perf record -q -g -p "$FASTWALLD_PID" -o "$TMP/perf.data" -- sleep "$SECONDS_SAT" 2>/dev/null &
	PERF_PID=$!
	sat 10.42.0.1 53 "$FASTWALLD_PID" >/dev/null
	wait "$PERF_PID" || true
	perf report -q -i "$TMP/perf.data" --no-children --sort symbol --percent-limit 0.7 \
		--stdio -g none >"$OUT/perf.txt" 2>/dev/null || true
	perf report -q -i "$TMP/perf.data" --children --sort symbol --percent-limit 3 \
		--stdio -g none >"$OUT/perf-children.txt" 2>/dev/null || true
	echo "profile of fastwalld under saturation: $OUT/perf.txt (self), $OUT/perf-children.txt (with callees)"
	if command -v strace >/dev/null; then
		# system calls per query at a fixed rate (strace slows them; counts only)
		timeout -s INT 3 strace -c -f -p "$FASTWALLD_PID" -o "$TMP/strace.txt" 2>/dev/null &
		STRACE_PID=$!
		sleep 0.3
		in_ns $CL dnsperf -s 10.42.0.1 -p 53 -d "$TMP/queries" -l 2 -Q 5000 -c 1 >"$TMP/st.out" 2>&1 || true
		wait "$STRACE_PID" || true
		awk -v n="$(awk '/Queries completed/ { print $3 }' "$TMP/st.out")" '
			NF >= 5 && $NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" && n {
				printf "%-16s %6.2f per query\n", $NF, $4 / n }' "$TMP/strace.txt" |
			sort -k2 -rn >"$OUT/syscalls.txt"
		echo "system calls per query at 5000 q/s: $OUT/syscalls.txt"
	fi
fi
echo "results in $OUT/dns.dat"
