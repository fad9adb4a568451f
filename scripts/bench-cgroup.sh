#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Process sandboxes (make bench, SKIP_CGROUP=1 to leave out): what the
# cgroup programs cost a process, from tests/bench/sockrate in a cgroup.
#   tcp   connects per second (socket, connect, close) to a local server
#   udp   sendto per second on one unconnected socket to a local sink
# each from three cgroups, interleaved per round so noise hits them alike:
#   none     a cgroup with no program
#   trivial  a cgroup with a connect4 and a sendmsg4 program that return 1
#            (the floor of having any program)
#   fastwall a static process subject below fastwalld's parent, with all
#            twelve cgroup programs and an allowing policy of 8 rules
# and DNS answers per second through fastwalld's proxy (the same upstream,
# the same policy, 64 queries in flight):
#   socket   from the process subject to a resolver nowhere, redirected at
#            the socket layer (sendmsg4 out, recvmsg4 back)
#   tc       from a slot subject's namespace on the pod bridge to the
#            gateway, redirected by the TC programs
# Prints medians of ROUNDS with their min-max and the ratios (targets:
# fastwall >= 90 % of none; socket >= tc). Figures only: never fails on
# timing. DURATION (default 3) seconds per measurement, ROUNDS (default 5).
# Documentation ranges only, in namespaces and a cgroup2 mount it makes.
#   BUILD=build scripts/bench-cgroup.sh   (after make all build/tests/sockrate build/tests/tcprr)
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"
fw_require

DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-5}
SR=$FW_BUILD/tests/sockrate
TCPRR=$FW_BUILD/tests/tcprr
CG_MNT=/tmp/fastwall-bcg-$FW_ID
BASE=fwbench-$FW_ID
CG=$CG_MNT/$BASE
for b in "$SR" "$TCPRR"; do [ -x "$b" ] || fw_die "$b missing: make $b"; done
command -v dnsmasq >/dev/null || fw_die "dnsmasq not found"

bcg_cleanup() {
	set +e
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	for p in "${FW_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	if [ -d "$CG" ]; then
		[ -w "$CG/cgroup.kill" ] && echo 1 >"$CG/cgroup.kill"
		sleep 0.2
		find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	mountpoint -q "$CG_MNT" && umount "$CG_MNT"
	rmdir "$CG_MNT" 2>/dev/null
	fw_cleanup
}
trap bcg_cleanup EXIT
trap 'exit 130' INT TERM

bench_env "process sandboxes"
mkdir -p "$CG_MNT"
mount -t cgroup2 none "$CG_MNT" || fw_die "can't mount cgroup2 at $CG_MNT"
mkdir -p "$CG/none"

fw_topology
fw_sandbox a 2
ip -n "$NS_POD" link set lo up
ip -n "$NS_INET" addr add 198.51.100.53/32 dev lo
cat >"$FW_TMP/dnsmasq.conf" <<EOF
no-resolv
no-hosts
no-poll
bind-interfaces
listen-address=198.51.100.53
port=53
user=root
pid-file=
cache-size=0
address=/bench.test/203.0.113.10
EOF
fw_bg "$NS_INET" dnsmasq -k -C "$FW_TMP/dnsmasq.conf"

POLICY='
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: deny, target: 198.51.100.66 }
        - { action: allow, target: 203.0.113.0/24, ports: [443] }
        - { action: allow, target: "2001:db8::/32" }
        - { action: deny, target: 192.0.2.128/25 }
        - { action: allow, target: 192.0.2.0/24 }
        - { action: allow, target: bench.test }
        - { action: allow, target: 127.0.0.1 }'
cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: true, port: 15353, upstreams: [198.51.100.53] }
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 0, burst: 1 }
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $BASE/fw
  socket: $FW_TMP/run.sock
subjects:
  - name: proc
    cgroup: svc
    policy:$POLICY
  - name: slot
    addresses: [10.42.0.2]
    interface: sb-a
    gateway: [10.42.0.1]
    private_cidr: [10.42.0.0/24]
    policy:$POLICY
EOF
fw_start_daemon >/dev/null || { cat "$FW_LOG" >&2; fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" check >&2; fw_die "fastwalld did not start"; }
SVC=$CG/fw/svc
[ -d "$SVC" ] || fw_die "fastwalld made no cgroup $SVC"

# the servers, in the pod namespace and in no sandbox cgroup
fw_bg "$NS_POD" "$TCPRR" server -l 127.0.0.1:18081
fw_bg "$NS_POD" "$SR" sink -l 127.0.0.1:18082
sleep 0.3

sr() { fw_ns "$NS_POD" "$SR" "$@" -t "$DURATION"; }
# measure PEER KIND: the figure sockrate reports
measure() {
	local peer=$1 kind=$2 dst t=""
	case $kind in
	tcp) dst=127.0.0.1:18081 ;;
	udp) dst=127.0.0.1:18082 ;;
	esac
	case $peer in
	none) sr "$kind" -d $dst -j "$CG/none" ;;
	trivial)
		t=$CG/trivial-$RANDOM
		mkdir "$t"
		sr "$kind" -d $dst -j "$t" -T
		rmdir "$t"
		;;
	fastwall) sr "$kind" -d $dst -j "$SVC" ;;
	socket) fw_ns "$NS_POD" "$SR" dns -d 192.0.2.99:53 -j "$SVC" -q a.bench.test -t "$DURATION" ;;
	tc) fw_ns "$(fw_sb_ns a)" "$SR" dns -d 10.42.0.1:53 -q a.bench.test -t "$DURATION" ;;
	esac | sed -n 's/.*_per_s=\([0-9]*\).*/\1/p'
}

RES=$FW_TMP/results
: >"$RES"
printf '%-6s %-9s %-6s %14s\n' kind peer round "per second"
for ((r = 0; r < ROUNDS; r++)); do
	for kind in tcp udp dns; do
		if [ "$kind" = dns ]; then peers=(socket tc); else peers=(none trivial fastwall); fi
		for ((i = 0; i < ${#peers[@]}; i++)); do
			p=${peers[$(((i + r) % ${#peers[@]}))]}
			v=$(measure "$p" "$kind")
			printf '%-6s %-9s %-6s %14s\n' "$kind" "$p" "$((r + 1))" "${v:-failed}"
			echo "$kind $p ${v:-0}" >>"$RES"
		done
	done
done

echo
bench_env "after"
echo "medians of $ROUNDS rounds, ${DURATION}s each (min-max):"
awk '
function median(k,   n, i, j, t, a) {
	n = split(V[k], a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	MIN[k] = a[1]; MAX[k] = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ V[$1 " " $2] = V[$1 " " $2] " " $3 }
END {
	for (k in V) M[k] = median(k)
	for (ki = 1; ki <= 2; ki++) {
		kind = ki == 1 ? "tcp" : "udp"
		what = ki == 1 ? "TCP connects/s" : "UDP sendto/s"
		printf "  %-15s none %9.0f (%s-%s)  trivial %9.0f (%s-%s)  fastwall %9.0f (%s-%s)\n", what,
			M[kind " none"], MIN[kind " none"], MAX[kind " none"],
			M[kind " trivial"], MIN[kind " trivial"], MAX[kind " trivial"],
			M[kind " fastwall"], MIN[kind " fastwall"], MAX[kind " fastwall"]
		if (M[kind " none"] > 0)
			printf "  %-15s trivial/none %5.1f %%  fastwall/none %5.1f %%  (target: fastwall >= 90 %%)\n", "",
				100 * M[kind " trivial"] / M[kind " none"], 100 * M[kind " fastwall"] / M[kind " none"]
	}
	printf "  %-15s socket %9.0f (%s-%s)  tc %9.0f (%s-%s)\n", "DNS answers/s",
		M["dns socket"], MIN["dns socket"], MAX["dns socket"], M["dns tc"], MIN["dns tc"], MAX["dns tc"]
	if (M["dns tc"] > 0)
		printf "  %-15s socket/tc %5.1f %%  (target: >= 100 %%)\n", "", 100 * M["dns socket"] / M["dns tc"]
}' "$RES"
# the check that the fastwall peer ran through the policy: its verdicts
echo "Check: the subjects' verdict counters after the runs (fastwall subjects):"
"$FASTWALL" --bpffs "$BPFFS" subjects 2>&1 | grep -E '^[0-9]+ +(proc|slot) |pass|drop' | sed 's/^/  /' | head -12
