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
#            thirteen cgroup programs and an allowing policy of 8 rules
# each as calls per second and per second of the caller's own CPU time
# (which the machine's other load changes far less); and DNS through
# fastwalld's proxy (the same upstream, the same policy), with dnsperf
# (64 queries outstanding, one socket, a query lost after 1 s): answers
# per second, queries lost and the mean latency, for
#   socket   from the process subject to a resolver nowhere, redirected at
#            the socket layer (sendmsg4 out, recvmsg4 back)
#   tc       from a slot subject's namespace on the pod bridge to the
#            gateway, redirected by the TC programs
# Prints every measurement, the ratios of each round (fastwall/none,
# socket/tc: the peers of a round share its noise) and their medians
# (targets: fastwall >= 90 % of none; socket >= tc), and what each of
# fastwall's programs cost per call (the kernel's BPF run-time statistics,
# in a profile pass after the rounds). Figures only: never fails on timing.
# DURATION (default 3) seconds per measurement, ROUNDS (default 5).
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
for t in dnsmasq dnsperf bpftool; do
	command -v $t >/dev/null || fw_die "$t not found (scripts/install-deps.sh)"
done

bcg_cleanup() {
	set +e
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	for p in "${FW_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${STATS_PID:-}" ] && kill "$STATS_PID" 2>/dev/null
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
        - { action: allow, target: "*.bench.test" }
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
    keep_caps: true # the bench's own root processes
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

# prog_ns NAME: "run_time_ns run_cnt" of fastwall's program NAME on $CG/fw
prog_ns() {
	local id
	id=$(bpftool -j cgroup show "$CG/fw" 2>/dev/null | "$FW_PY" -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name") == sys.argv[1]:
        print(p["id"]); break' "$1")
	[ -n "$id" ] || { echo "0 0"; return; }
	bpftool -j prog show id "$id" | "$FW_PY" -c '
import json, sys
p = json.load(sys.stdin)
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

# DNS queries for dnsperf: distinct names (every one allowed, *.bench.test)
for ((i = 0; i < 2000; i++)); do echo "q$i.bench.test A"; done >"$FW_TMP/queries"

sr() { fw_ns "$NS_POD" "$SR" "$@" -t "$DURATION"; }
# dnsperf NS [CGROUP] SERVER: "answers/s lost mean-latency-us"
dnsperf_in() {
	local ns=$1 cg=$2 srv=$3
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$ns" sh -c '[ -z "$0" ] || echo $$ >"$0/cgroup.procs" || exit 1; shift; exec "$@"' \
		"$cg" - dnsperf -s "$srv" -p 53 -d "$FW_TMP/queries" -l "$DURATION" -c 1 -q 64 -t 1 \
		2>&1 | awk '/Queries lost/ { l = $3 } /Queries per second/ { q = $4 }
			/Average Latency/ { t = $4 * 1e6 } END { printf "%.0f %d %.0f\n", q, l, t }'
}
# measure PEER KIND: "per-second per-CPU-second" (tcp, udp) or
# "answers/s lost latency-us" (dns)
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
	socket) dnsperf_in "$NS_POD" "$SVC" 192.0.2.99 ;;
	tc) dnsperf_in "$(fw_sb_ns a)" "" 10.42.0.1 ;;
	esac | sed -n 's/.*_per_s=\([0-9]*\) [a-z]*_per_cpu_s=\([0-9]*\).*/\1 \2/p; /^[0-9]/p'
}
# the programs of the fastwall peer, per call, in a profile pass after the
# rounds (with the statistics on, apart from the figures)
declare -A PROG_T PROG_N
PROGS="fw_cg_connect4 fw_cg_sendmsg4 fw_cg_sock_create fw_cg_egress"
prog_snap() { # SIGN KIND: subtract (-1) or add (1) each program's counters
	local p t n k
	for p in $PROGS; do
		read -r t n < <(prog_ns "$p")
		k=${2}_$p
		PROG_T[$k]=$((${PROG_T[$k]:-0} + $1 * t))
		PROG_N[$k]=$((${PROG_N[$k]:-0} + $1 * n))
	done
}

RES=$FW_TMP/results
: >"$RES"
printf '%-6s %-9s %-6s %14s %14s %8s %10s\n' kind peer round "per second" "per CPU-second" lost latency
for ((r = 0; r < ROUNDS; r++)); do
	for kind in tcp udp dns; do
		if [ "$kind" = dns ]; then peers=(socket tc); else peers=(none trivial fastwall); fi
		for ((i = 0; i < ${#peers[@]}; i++)); do
			p=${peers[$(((i + r) % ${#peers[@]}))]}
			read -r a b c < <(measure "$p" "$kind") || true
			if [ "$kind" = dns ]; then
				printf '%-6s %-9s %-6s %14s %14s %8s %8s us\n' "$kind" "$p" "$((r + 1))" \
					"${a:-failed}" - "${b:--}" "${c:--}"
			else
				printf '%-6s %-9s %-6s %14s %14s\n' "$kind" "$p" "$((r + 1))" "${a:-failed}" "${b:--}"
			fi
			echo "$r $kind $p ${a:-0} ${b:-0} ${c:-0}" >>"$RES"
		done
	done
done

echo
bench_env "after"
echo "medians of $ROUNDS rounds, ${DURATION}s each (min-max); ratios paired per round:"
awk '
function med(s,   n, i, j, t, a) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	LO = a[1]; HI = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ R[$1] = 1; A[$2, $3, $1] = $4; B[$2, $3, $1] = $5; C[$2, $3, $1] = $6 }
END {
	for (ki = 1; ki <= 2; ki++) {
		kind = ki == 1 ? "tcp" : "udp"
		what = ki == 1 ? "TCP connects/s" : "UDP sendto/s"
		for (pi = 1; pi <= 3; pi++) {
			p = pi == 1 ? "none" : pi == 2 ? "trivial" : "fastwall"
			s = ""; c = ""
			for (r in R) { s = s " " A[kind, p, r]; c = c " " B[kind, p, r] }
			m = med(s); line = sprintf("%s %s %.0f (%s-%s)", line, p, m, LO, HI)
			m = med(c); cline = sprintf("%s %s %.0f (%s-%s)", cline, p, m, LO, HI)
		}
		printf "  %-15s %s\n  %-15s %s  per CPU-second\n", what, line, "", cline
		line = ""; cline = ""
		for (pi = 2; pi <= 3; pi++) {
			p = pi == 2 ? "trivial" : "fastwall"
			s = ""; c = ""
			for (r in R) if (A[kind, "none", r] > 0 && B[kind, "none", r] > 0) {
				s = s " " 100 * A[kind, p, r] / A[kind, "none", r]
				c = c " " 100 * B[kind, p, r] / B[kind, "none", r]
			}
			m = med(s); out = sprintf("%s  %s/none %5.1f %% (%.1f-%.1f)", out, p, m, LO, HI)
			m = med(c); cout = sprintf("%s  %s/none %5.1f %% (%.1f-%.1f)", cout, p, m, LO, HI)
		}
		printf "  %-15s%s  (target: fastwall >= 90 %%)\n  %-15s%s  per CPU-second\n", "", out, "", cout
		out = ""; cout = ""
	}
	for (pi = 1; pi <= 2; pi++) {
		p = pi == 1 ? "socket" : "tc"
		s = ""; l = ""; t = ""
		for (r in R) { s = s " " A["dns", p, r]; l = l " " B["dns", p, r]; t = t " " C["dns", p, r] }
		m = med(s); q = sprintf("%.0f (%s-%s)", m, LO, HI)
		m = med(l); lo = sprintf("%d (%s-%s)", m, LO, HI)
		m = med(t); printf "  %-15s %-7s %s answers/s, lost %s, mean latency %.0f us (%s-%s)\n",
			pi == 1 ? "DNS (dnsperf)" : "", p, q, lo, m, LO, HI
	}
	s = ""
	for (r in R) if (A["dns", "tc", r] > 0) s = s " " 100 * A["dns", "socket", r] / A["dns", "tc", r]
	if (s != "") { m = med(s); printf "  %-15s  socket/tc %5.1f %% (%.1f-%.1f)  (target: >= 100 %%)\n", "", m, LO, HI }
}' "$RES"
stats_on || true
for kind in tcp udp; do
	prog_snap -1 "$kind"
	measure fastwall "$kind" >/dev/null
	prog_snap 1 "$kind"
done
stats_off
echo "fastwall's programs per call, in a profile pass of the fastwall peer (BPF run-time statistics):"
for kind in tcp udp; do
	for p in $PROGS; do
		n=${PROG_N[${kind}_$p]:-0}
		((n > 0)) && printf '  %-4s %-18s %12d calls %8d ns per call\n' "$kind" "$p" "$n" \
			$((${PROG_T[${kind}_$p]} / n))
	done
done
# the check that the fastwall peer ran through the policy: its verdicts
echo "Check: the subjects' verdict counters after the runs (fastwall subjects):"
"$FASTWALL" --bpffs "$BPFFS" subjects 2>&1 | grep -E '^[0-9]+ +(proc|slot) |pass|drop' | sed 's/^/  /' | head -12
