#!/usr/bin/env bash
# fastwall control-plane benchmark (the Sandbox Actions protocol); run by
# scripts/bench.sh at the end of `make bench` (SKIP_ACTIONS=1 skips it), or
# alone. Prints figures; never fails on timing (the exit status is non-zero
# only when the benchmark itself breaks). About a minute.
#
# Everything runs in namespaces this script creates (pod with its own
# loopback and bridge, one sandbox, an "internet" sink), a pin directory
# /sys/fs/bpf/fastwall-bench-act-PID and a vault socket under
# /run/fastwall-bench-act-PID; all of it is removed on exit.
#
#   scales   at each of ACT_SCALES subjects (64, 1024, 4096; a daemon of its
#            own), 4 connections: add (SET_BINDING + data-plane-ready),
#            update and remove (REMOVE_BINDING) of ACT_CHURN new subjects,
#            p50/p99 each; whole-policy replacements per second for
#            ACT_REPLACE_SECONDS; first allowed packet after
#            data-plane-ready (ACT_FIRST_ITER subjects), p50; each beside
#            its target (met / not met), and a table of all scales
#   setup    1024 subjects: SET_BINDING + data-plane-ready each (4 connections)
#   a) latency  for ACT_ITER new subjects on the sandbox's address: from
#               sending SET_BINDING to the first packet of a 20 us UDP stream
#               from that address that reaches the sink; HTTP round trips
#   b) updates  SET_BINDING with a changed policy for active subjects,
#               ACT_THREADS keep-alive connections for ACT_SECONDS; then
#               PATCH /policy for ACT_PATCH_SECONDS
#   c) restart  SIGTERM, start again, replay SET_BINDING + ready for all
#   d) memory   VmRSS / VmHWM of fastwalld with the subjects
#
# Environment: BUILD (build), ACT_SUBJECTS (1024), ACT_ITER (200),
# ACT_THREADS (4), ACT_SECONDS (10), ACT_PATCH_SECONDS (5), ACT_PERF=1
# (perf record fastwalld during the update run; report in actions-perf.txt),
# ACT_SCALES (64,1024,4096; empty skips the part), ACT_CHURN (200),
# ACT_REPLACE_SECONDS (5), ACT_FIRST_ITER (100), ACT_ONLY_SCALES=1 (only
# the scales part), ACT_QUICK=1 (the scales part shorter: churn 100, 3 s,
# 50; what scripts/bench.sh runs unless FULL=1).
# Output also goes to $BUILD/bench/actions.txt.
set -euo pipefail

BUILD=${BUILD:-build}
if [[ ${ACT_QUICK:-0} == 1 ]]; then
	: "${ACT_CHURN:=100}" "${ACT_REPLACE_SECONDS:=3}" "${ACT_FIRST_ITER:=50}"
fi
SCALES=${ACT_SCALES-64,1024,4096}
SCALES=${SCALES//,/ }
CHURN=${ACT_CHURN:-200}
REPLACE_SECS=${ACT_REPLACE_SECONDS:-5}
FIRST_ITER=${ACT_FIRST_ITER:-100}
N=${ACT_SUBJECTS:-1024}
ITER=${ACT_ITER:-200}
THREADS=${ACT_THREADS:-4}
SECS=${ACT_SECONDS:-10}
PATCH_SECS=${ACT_PATCH_SECONDS:-5}
OUT=$BUILD/bench
FWD=$BUILD/fastwalld
CLI=$BUILD/fastwall
AB=$BUILD/tests/actions_bench

[[ $EUID -eq 0 ]] || { echo "bench-actions.sh: needs root (BPF, namespaces)" >&2; exit 1; }
for f in "$FWD" "$CLI" "$AB"; do
	[[ -x $f ]] || { echo "bench-actions.sh: $f missing; run 'make bench'" >&2; exit 1; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
FWD=$(cd "$(dirname "$FWD")" && pwd)/fastwalld

ID=$$
PIN=/sys/fs/bpf/fastwall-bench-act-$ID
RUN=/run/fastwall-bench-act-$ID
POD=fwba$ID-pod
SB=fwba$ID-sb
INET=fwba$ID-inet
CFG=$RUN/fastwalld.yaml
LOG=$OUT/actions-fastwalld.log
DPID=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	if [[ -n $DPID ]]; then
		kill "$DPID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$DPID" 2>/dev/null || true
	fi
	for ns in "$SB" "$INET" "$POD"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$PIN" "$RUN"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '%s\n' "$*" >&2; }
nsx() { nsenter --net="/run/netns/$1" "${@:2}"; }
# the client runs in the pod namespace: the listener is the pod's loopback
ab() { nsx "$POD" "$AB" "$@"; }

mkdir -p "$RUN"
chmod 700 "$RUN"
# one binary for both starts, even if build/ is relinked meanwhile
cp "$FWD" "$RUN/fastwalld"
FWD=$RUN/fastwalld
: >"$LOG"

# --- topology: sandbox 10.64.200.1 -- br0 (pod, 10.64.0.1/16) -- sink ------
for ns in "$POD" "$SB" "$INET"; do
	ip netns add "$ns"
	nsx "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
	ip -n "$ns" link set lo up
done
ip -n "$POD" link add br0 address 02:fb:a0:00:00:01 type bridge mcast_snooping 0
ip -n "$SB" link add s0 type veth peer name p0 netns "$POD"
ip -n "$POD" link set p0 master br0
ip -n "$POD" link add o0 type veth peer name i0 netns "$INET"
ip -n "$INET" link set i0 address 02:fb:a0:00:00:02
ip -n "$SB" addr add 10.64.200.1/16 dev s0
ip -n "$POD" addr add 10.64.0.1/16 dev br0
ip -n "$POD" addr add 198.51.100.1/30 dev o0
ip -n "$INET" addr add 198.51.100.2/30 dev i0
ip -n "$INET" addr add 203.0.113.10/32 dev lo
for l in "$SB s0" "$POD p0" "$POD br0" "$POD o0" "$INET i0"; do
	read -r -a w <<<"$l"
	set -- "${w[@]}"
	ip -n "$1" link set "$2" up
done
nsx "$POD" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.br0.rp_filter=0
ip -n "$SB" route add default via 10.64.0.1 dev s0
ip -n "$POD" route add 203.0.113.0/24 via 198.51.100.2 dev o0
ip -n "$INET" route add 10.64.0.0/16 via 198.51.100.1 dev i0
# static neighbours: no ARP in the measured path
ip -n "$SB" neigh replace 10.64.0.1 lladdr 02:fb:a0:00:00:01 dev s0 nud permanent
ip -n "$POD" neigh replace 198.51.100.2 lladdr 02:fb:a0:00:00:02 dev o0 nud permanent

# bind_host_veth off: the 1024 bulk subjects name host veths that do not
# exist (fwbv-bench-N); with anti-spoof on, their traffic would be dropped
# as spoofed, and the latency subject would need its real port named.
cat >"$CFG" <<EOF
datapath:
  bpffs: $PIN
  bridges: [br0]
actions:
  listen: 127.0.0.1:18080
  vault_socket: $RUN/vault.sock
  grace: 10
  bind_host_veth: false
EOF

start_daemon() {
	local before
	before=$(grep -c 'fastwalld ready' "$LOG" || true)
	# nsenter execs fastwalld: $! is the daemon itself
	nsenter --net="/run/netns/$POD" "$FWD" -c "$CFG" run >>"$LOG" 2>&1 &
	DPID=$!
	for _ in $(seq 300); do
		[[ $(grep -c 'fastwalld ready' "$LOG" || true) -gt $before ]] && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	log "bench-actions.sh: fastwalld did not start; its log:"
	sed 's/^/  | /' "$LOG" >&2
	exit 1
}

stop_daemon() {
	kill -TERM "$DPID"
	for _ in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$DPID" 2>/dev/null; then
		log "bench-actions.sh: fastwalld ignored SIGTERM for 5 s"
		exit 1
	fi
	wait "$DPID" 2>/dev/null || true
	DPID=
}

# CPU time (user + system, clock ticks) of a process, and of the machine
# (all but idle and iowait, summed over CPUs)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
cpu_all() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
# cpu_run LABEL CMD...: runs CMD and prints how busy fastwalld and the machine were
cpu_run() {
	local label=$1 d0 a0 t0 d1 a1 t1
	shift
	d0=$(cpu_of "$DPID"); a0=$(cpu_all); t0=$(date +%s%N)
	"$@"
	d1=$(cpu_of "$DPID"); a1=$(cpu_all); t1=$(date +%s%N)
	awk -v d=$((d1 - d0)) -v a=$((a1 - a0)) -v ns=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
		-v n="$(nproc)" -v l="$label" 'BEGIN { s = ns / 1e9
		printf "  %-34s fastwalld %.0f%% of one core, machine %.0f%% of %d cores busy\n",
			l, 100 * d / hz / s, 100 * a / hz / s / n, n }'
}

mem() { awk '/^VmRSS|^VmHWM/ { printf "%s %s %s  ", $1, $2, $3 }' "/proc/$1/status"; }

# subject identity in the kernel: id, name, state, interface, addresses
# (the per-verdict counter lines left out)
snapshot() {
	nsx "$POD" "$CLI" --bpffs "$PIN" subjects 2>/dev/null | awk '/^[0-9]/' | sort
}
# which rule trie each subject slot holds (one for good since the first start)
rules_snapshot() {
	bpftool -j map dump pinned "$PIN/fastwall_rules_v2" 2>/dev/null |
		jq -r '.[] | select(.value != null) | "\(.key) \(.value)"' 2>/dev/null | sort
}

# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"

exec > >(tee "$OUT/actions.txt") 2>&1
FAILED=0
# a broken step is reported and the rest still runs; the exit status says so
ab_run() { ab "$@" || { echo "  (actions_bench $1 failed: status $?)"; FAILED=1; }; }

{
	echo "fastwall control-plane benchmark (actions protocol): $(nproc) CPUs" \
		"($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), kernel $(uname -r)," \
		"$(date -u +%Y-%m-%dT%H:%MZ)"
	echo "policy per subject: default deny, 16 CIDR rules (15 allow, 1 deny), 4 domain rules;"
	echo "client: tests/bench/actions_bench, HTTP/1.1 keep-alive, one connection per thread"
	bench_env "machine"

	a0=$(cpu_all); sleep 1; a1=$(cpu_all)
	echo "background load: machine $(( (a1 - a0) * 100 / $(getconf CLK_TCK) / $(nproc) ))% of $(nproc) cores busy" \
		"in the second before the run (other work shares these CPUs)"
	if [[ -n ${SCALES// /} ]]; then
		echo
		echo "== control plane at ${SCALES// /, } subjects ($THREADS connections; targets: add/update/remove" \
			"p50 < 0.5 ms, p99 < 2 ms; replacement >= 5,000/s; first packet p50 < 1 ms) =="
		start_daemon
		: >"$OUT/actions-scales.txt"
		prev=0
		for S in $SCALES; do
			echo "  -- $S subjects present"
			if [[ $S -gt $prev ]]; then
				ab setup -n "$S" -t "$THREADS" >/dev/null || { echo "  (setup of $S failed)"; FAILED=1; }
			fi
			prev=$S
			step=$OUT/actions-step.txt
			ab_run churn -n "$S" -k "$CHURN" -t "$THREADS" >"$step"
			cat "$step"
			ab_run update -n "$S" -t "$THREADS" -D "$REPLACE_SECS" >>"$step"
			ab_run latency -k "$FIRST_ITER" -S "$SB" -I "$INET" -s 10.64.200.1 -d 203.0.113.10:9999 \
				-g 20 >>"$step"
			awk '/calls ok|replacement|first passing packet \(send|after data-plane-ready|without a passing|failed: status/' "$step"
			sed -n "s/^act first_packet/act N=$S first_packet/; /^act /p" "$step" >>"$OUT/actions-scales.txt"
		done
		echo
		echo "  summary (ms; * = target not met; replacement: whole policies per second):"
		awk 'function cell(v, lim) { return sprintf("%.3f%s", v, v < lim ? " " : "*") }
			/^act N=/ { split($2, a, "="); n = a[2]; if (!(n in seen)) { seen[n] = 1; order[++k] = n }
				for (i = 4; i <= NF; i++) { split($i, kv, "="); v[n, $3, kv[1]] = kv[2] } }
			END {
				printf "  %-8s %-19s %-19s %-19s %-12s %s\n", "subjects", "add p50/p99", "update p50/p99",
					"remove p50/p99", "replace/s", "first packet p50"
				for (j = 1; j <= k; j++) { n = order[j]
					printf "  %-8s", n
					for (o = 1; o <= 3; o++) { op = o == 1 ? "add" : o == 2 ? "update" : "remove"
						printf " %-19s", cell(v[n, op, "p50_ms"], 0.5) "/" cell(v[n, op, "p99_ms"], 2) }
					r = v[n, "replace", "per_s"]
					printf " %-12s %s\n", sprintf("%d%s", r, r >= 5000 ? "" : "*"),
						cell(v[n, "first_packet", "p50_ms"], 1)
				} }' "$OUT/actions-scales.txt"
		stop_daemon
		# the parts below start from an empty data plane
		rm -rf "$PIN"
		[[ ${ACT_ONLY_SCALES:-0} == 1 ]] && exit "$FAILED"
		echo
	fi
	start_daemon
	echo "  fastwalld started, no subjects: $(mem "$DPID")"
	echo
	echo "== setup: $N subjects (SET_BINDING + data-plane-ready each, $THREADS connections) =="
	ab_run setup -n "$N" -t "$THREADS"
	echo "  fastwalld with $N subjects: $(mem "$DPID")"

	echo
	echo "== a) SET_BINDING + data-plane-ready -> first allowed packet ($ITER new subjects, $N present) =="
	ab_run latency -k "$ITER" -S "$SB" -I "$INET" -s 10.64.200.1 -d 203.0.113.10:9999 -g 20

	echo
	echo "== b) policy updates for active subjects ($THREADS connections, ${SECS} s) =="
	if [[ ${ACT_PERF:-0} == 1 ]] && command -v perf >/dev/null; then
		# profile the daemon during the update run (kernel and user)
		perf record -q -F 1999 -g -p "$DPID" -o "$OUT/actions-perf.data" -- sleep "$SECS" \
			>/dev/null 2>&1 &
		PERF_PID=$!
	fi
	cpu_run "CPU during the run:" ab_run update -n "$N" -t "$THREADS" -D "$SECS"
	if [[ -n ${PERF_PID:-} ]]; then
		wait "$PERF_PID" || true
		perf report -i "$OUT/actions-perf.data" --stdio --no-children --sort sym \
			--percent-limit 0.7 -g none 2>/dev/null | grep -E '^ +[0-9]' | head -40 \
			>"$OUT/actions-perf.txt" || true
		echo "  profile of fastwalld during the run (self time): $OUT/actions-perf.txt"
		sed -n 1,15p "$OUT/actions-perf.txt" | sed 's/^/    /'
	fi
	cpu_run "CPU during the run:" ab_run update -n "$N" -t 1 -D 3
	if [[ $PATCH_SECS != 0 ]]; then
		echo "  -- policy push: PATCH /policy (merge one rule), ${PATCH_SECS} s"
		cpu_run "CPU during the run:" ab_run patch -n "$N" -t "$THREADS" -D "$PATCH_SECS"
	fi
	# the final state the Fastlet would replay: one more SET_BINDING each
	echo "  -- final SET_BINDING for all (the state replayed in c)"
	ab_run setup -n "$N" -t "$THREADS" -V 7777

	echo
	echo "== d) memory =="
	echo "  fastwalld with $N active subjects after a) and b): $(mem "$DPID")"

	echo
	echo "== c) restart: SIGTERM, start, replay SET_BINDING + data-plane-ready for $N =="
	before=$(snapshot)
	rbefore=$(rules_snapshot)
	stop_daemon
	ab_run replay -n "$N" -t "$THREADS" -V 7777 -L "$LOG" -P "$RUN/pid" -- "$FWD" -c "$CFG" run
	DPID=$(cat "$RUN/pid")
	after=$(snapshot)
	nbefore=$(grep -c . <<<"$before" || true)
	if [[ $before == "$after" ]]; then
		echo "  kernel subjects (id, name, state, interface, addresses) before and after: identical ($nbefore)"
	else
		echo "  kernel subjects changed across the restart: $nbefore before, $(grep -c . <<<"$after" || true) after; diff:"
		diff <(echo "$before") <(echo "$after") | head -10 | sed 's/^/    /'
	fi
	rafter=$(rules_snapshot)
	nr=$(grep -c . <<<"$rbefore" || true)
	if [[ $nr == 0 ]]; then
		echo "  rule tries: could not read $PIN/fastwall_rules_v2 (bpftool, jq)"
	else
		echo "  rule tries (subject slot -> inner map id): $nr before," \
			"$(comm -13 <(echo "$rbefore") <(echo "$rafter") | grep -c . || true) replaced by the replay"
	fi
	echo "  fastwalld after the replay: $(mem "$DPID")"
	awk '/adopted [0-9]+ subjects/ { n = NR } { l[NR] = $0 } END { for (i = n; n && i <= NR; i++) if (l[i] ~ /adopted|restart|grace/) print "  log: " l[i] }' "$LOG"
}
exit "$FAILED"
