#!/usr/bin/env bash
# fastwall benchmarks (`make bench`): ratios measured side by side in one
# run. Prints figures and the targets they are compared with; never fails
# on timing (exit status is non-zero only when the benchmark itself breaks).
#
#   A) per-packet cost of fw_from_sandbox (bpf_prog_test_run) at 1, 64,
#      1024 and 4096 subjects against a trivial and an empty TC program;
#   B) packets/s of small new-flow UDP through veth -> bridge (TC ingress on
#      the bridge port) -> routed -> veth -> sink, all in namespaces this
#      script creates: no program, the trivial program, fastwall at 1, 64
#      and 1024 subjects, and traffic from every one of 1024 or 4096
#      subjects in turn ("spread") with no program, the trivial program
#      holding those sources and fastwall, interleaved over rounds, then
#      a profile pass (each program's own time per packet, from the
#      kernel's BPF run-time statistics); part A adds a spread table (one
#      packet per call, the source cycling over every subject);
#   C) fastwall against the nftables design it replaces and the strongest
#      nftables form, on one topology, interleaved: packets/s, TCP
#      request/response and connection rate, control-plane cost
#      (scripts/bench-nft.sh; quick matrix: 1, 64, 1024 subjects, 16 rules;
#      FULL=1: 1 to 4096 subjects, 16 and 256 rules, more rounds);
#   D) the DNS proxy: dnsperf through fastwalld's proxy against dnsmasq as a
#      plain forwarder and the upstream itself (scripts/bench-dns.sh);
#   then the control plane of the actions protocol (scripts/bench-actions.sh).
#
# Environment: BUILD (default build), FULL=1 (the whole matrix and more
# rounds everywhere), ROUNDS_A (11; FULL 15), REPEAT_A (1000000),
# SCALES_A (1,64,1024,4096), SPREAD_A (calls of part A's spread table,
# 16384; 0 = none), ROUNDS_B (5; FULL 9), SECONDS_B (3), PEERS_B (regex of
# part B's peers to run), PROFILE_B (rounds of the profile pass, 3; 0 = none), SKIP_A=1, SKIP_B=1, SKIP_C=1, SKIP_D=1,
# BASE_BUILD (part A against another build's bench_tc, ALT_A turns each;
# part B runs its spread peers in the same rounds), SKIP_E=1 (the port
# guard, scripts/bench-guard.sh), SKIP_INGRESS=1 (the
# ingress gateway part, scripts/bench-ingress.sh), SKIP_CGROUP=1 (the process
# sandboxes' part, scripts/bench-cgroup.sh), SKIP_L7=1 (layer-7 pinning,
# scripts/bench-l7.sh), SKIP_INJECT=1 (layer-7 credential injection,
# scripts/bench-inject.sh), SKIP_ACTIONS=1 (the control-plane part,
# scripts/bench-actions.sh, run last, after tests/cp_kernel with CP_OPS
# operations, 300), PLOT_ONLY=1 (redraw the plots from
# the last run's data), PARTS (the parts to run, every other skipped:
# letters A-G, I and L as docs/benchmarks.md names them, F the ingress
# gateway, G the process sandboxes, I layer-7 credential injection, L
# layer-7 pinning, and "actions" for
# the control plane; PARTS="D G").
# Part C reads its own variables (see bench-nft.sh).
# Results, the plot data and SVG plots go to $BUILD/bench/ and
# $BUILD/bench-nft/.
set -euo pipefail

BUILD=${BUILD:-build}
FULL=${FULL:-0}

# PARTS names what runs; it sets every SKIP_ variable
if [[ -n ${PARTS:-} ]]; then
	declare -A part_var=([A]=SKIP_A [B]=SKIP_B [C]=SKIP_C [D]=SKIP_D [E]=SKIP_E
		[F]=SKIP_INGRESS [INGRESS]=SKIP_INGRESS [G]=SKIP_CGROUP [CGROUP]=SKIP_CGROUP
		[L]=SKIP_L7 [L7]=SKIP_L7 [I]=SKIP_INJECT [INJECT]=SKIP_INJECT [ACTIONS]=SKIP_ACTIONS)
	for v in SKIP_A SKIP_B SKIP_C SKIP_D SKIP_E SKIP_INGRESS SKIP_CGROUP SKIP_L7 SKIP_INJECT SKIP_ACTIONS; do
		export "$v=1"
	done
	for p in ${PARTS//,/ }; do
		v=${part_var[${p^^}]:-}
		if [[ -z $v ]]; then
			echo "bench.sh: PARTS: unknown part '$p' (A B C D E F G I L actions)" >&2
			exit 2
		fi
		export "$v=0"
	done
fi
[[ $FULL == 1 ]] || FULL=0
if [[ $FULL == 1 ]]; then
	ROUNDS_A=${ROUNDS_A:-15}
	ROUNDS_B=${ROUNDS_B:-9}
fi
ROUNDS_A=${ROUNDS_A:-11}
REPEAT_A=${REPEAT_A:-1000000}
SCALES_A=${SCALES_A:-1,64,1024,4096}
SPREAD_A=${SPREAD_A:-16384}
ROUNDS_B=${ROUNDS_B:-5}
SECONDS_B=${SECONDS_B:-3}
OUT=$BUILD/bench
BENCH=$BUILD/tests/bench_tc
BLAST=$BUILD/tests/udpblast

[[ $EUID -eq 0 ]] || { echo "bench.sh: needs root (BPF, namespaces)" >&2; exit 1; }
for f in "$BENCH" "$BLAST"; do
	[[ -x $f ]] || { echo "bench.sh: $f missing; run 'make bench'" >&2; exit 1; }
done
mkdir -p "$OUT"

ID=$$
PIN=/sys/fs/bpf/fastwall-bench-$ID
SND=fwb$ID-snd
POD=fwb$ID-pod
SINK=fwb$ID-sink
SRV_PIDS=()
BLAST_PID=
STATS_PID=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $BLAST_PID ]]; then kill "$BLAST_PID" 2>/dev/null || true; fi
	if [[ -n $STATS_PID ]]; then kill "$STATS_PID" 2>/dev/null || true; fi
	for p in "${SRV_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	for ns in "$SND" "$POD" "$SINK"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	# bench_tc purges its pins itself; this catches a crash
	rm -rf "$PIN"-a-n* "$PIN"-b-n* "$PIN"-base-n* 2>/dev/null || true
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CPU=$(( $(nproc) - 1 ))
log() { printf '%s\n' "$*" >&2; }

# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"
bench_env "fastwall benchmarks"

plot_cost() {
	if command -v gnuplot >/dev/null; then
		for t in "svg size 760,460 dynamic font 'sans,12'|svg" "pngcairo size 760,460 font 'sans,10'|png"; do
			gnuplot <<-EOF
				set terminal ${t%|*}
				set output "$OUT/cost.${t#*|}"
				set title "fastwall ingress: ns per packet vs subjects (bpf_prog_test_run; median, bars min-max)" noenhanced
				set logscale x 2
				set xlabel "subjects (64 CIDR rules + up to 512 learned addresses each)"
				set ylabel "ns per packet"
				set yrange [0:*]
				set xrange [0.7:6000]
				set key at graph 0.98, graph 0.47 right box opaque
				set grid ytics
				plot "$OUT/cost.dat" using 1:2:3:4 with yerrorlines lw 2 pt 7 title "UDP to allow CIDR", \\
				     "" using 1:5:6:7 with yerrorlines lw 2 pt 5 title "UDP to learned address", \\
				     "" using 1:8:9:10 with yerrorlines lw 2 pt 9 title "UDP default-deny (drop)", \\
				     "" using 1:11 with lines dt 2 lw 2 title "trivial program (parse + 1 hash lookup)", \\
				     "" using 1:14 with lines dt 3 lw 2 title "empty program", \\
				     150 with lines lc rgb "red" dt 4 title "target at 1024 subjects: 150 ns"
			EOF
		done
		echo "plot: $OUT/cost.svg, $OUT/cost.png"
	fi
}

plot_rate() {
	if command -v gnuplot >/dev/null; then
		for t in "svg size 760,420 dynamic font 'sans,12'|svg" "pngcairo size 760,420 font 'sans,10'|png"; do
			gnuplot <<-EOF
				set terminal ${t%|*}
				set output "$OUT/rate.${t#*|}"
				set title "share of the no-program packet rate (median of per-round ratios)" noenhanced
				set style data histogram
				set style fill solid 0.6 border -1
				set ylabel "% of no program (same traffic)"
				set yrange [0:110]
				set xtics rotate by -20 noenhanced
				set grid ytics
				unset key
				set arrow from graph 0, first 90 to graph 1, first 90 nohead lc rgb "red" dt 2
				set label "target 90 %" at graph 0.01, first 93 tc rgb "red"
				plot "$OUT/rate.dat" using 7:xtic(1) title "% of the no-program rate"
			EOF
		done
		echo "plot: $OUT/rate.svg, $OUT/rate.png"
	fi
}

if [[ ${PLOT_ONLY:-0} == 1 ]]; then
	plot_cost
	plot_rate
	if [[ -f $OUT/../bench-nft/peers.txt ]]; then
		BUILD=$BUILD PLOT_ONLY=1 "$(dirname "${BASH_SOURCE[0]}")/bench-nft.sh" >/dev/null
	fi
	exit 0
fi
T_START=$(date +%s)

# bench_tc cost for SCALES_A in one process when it can hold them: a data
# plane keeps a descriptor per rule slot (8,192), and RLIMIT_NOFILE is per
# process. Below 5 x 8,300 descriptors the first scale runs with each of
# the others in turn (so every table keeps its ratios to it), and the data
# files (-o, -O) are joined, the first scale's rows once.
for_scales() { # binary args...
	local bin=$1 groups=() orig args outs=() i k first f
	shift
	orig=("$@")
	IFS=, read -r -a sc <<<"$SCALES_A"
	first=${sc[0]}
	if (($(ulimit -n) >= (${#sc[@]} + 1) * 8300)) || ((${#sc[@]} <= 2)); then
		groups=("$SCALES_A")
	else
		for ((i = 1; i < ${#sc[@]}; i++)); do groups+=("$first,${sc[i]}"); done
	fi
	for ((k = 0; k < ${#groups[@]}; k++)); do
		args=()
		for ((i = 0; i < ${#orig[@]}; i++)); do
			args+=("${orig[i]}")
			if [[ ${orig[i]} == -[oO] ]] && ((${#groups[@]} > 1)); then
				i=$((i + 1))
				args+=("${orig[i]}.$k")
				((k == 0)) && outs+=("${orig[i]}")
			fi
		done
		taskset -c "$CPU" "$bin" cost -s "${groups[k]}" "${args[@]}"
	done
	for f in "${outs[@]}"; do
		{
			cat "$f.0"
			for ((k = 1; k < ${#groups[@]}; k++)); do grep -v -e '^#' -e "^$first " "$f.$k"; done
		} >"$f"
		rm -f "$f".[0-9]*
	done
}

# Part A against another build (BASE_BUILD=dir holding tests/bench_tc, e.g.
# the previous release built in a git worktree): both binaries run in turn,
# ALT_A times each (default 3), and the medians are printed side by side.
compare_cost() {
	local base=$BASE_BUILD/tests/bench_tc i
	[[ -x $base ]] || { echo "bench.sh: $base missing" >&2; return 1; }
	echo
	echo "== A': this build against $BASE_BUILD, alternating ${ALT_A:-3} times =="
	: >"$OUT/cost-pair.txt"
	# the spread table too when both binaries have it (-S)
	local bs=() ts=()
	if [[ $SPREAD_A != 0 ]]; then
		ts=(-S "$SPREAD_A")
		[[ $("$base" -h 2>&1) == *'-S CALLS'* ]] && bs=(-S "$SPREAD_A")
	fi
	for ((i = 0; i < ${ALT_A:-3}; i++)); do
		for_scales "$base" -r 3 -n "$REPEAT_A" -p "$PIN-b" "${bs[@]}" |
			sed 's/^/base /' >>"$OUT/cost-pair.txt"
		for_scales "$BENCH" -r 3 -n "$REPEAT_A" -p "$PIN-a" "${ts[@]}" |
			sed 's/^/this /' >>"$OUT/cost-pair.txt"
	done
	awk '
	$1 == "base" || $1 == "this" {
		if ($2 ~ /^[0-9]+$/ && $4 ~ /^[a-z-]+$/ && ($5 == "one" || $5 == "spread") && $6 ~ /^[0-9.]+$/) {
			k = $2 " " $3 " " $4 "/" $5
			if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			v[$1, k] = v[$1, k] " " $6
		} else if ($2 ~ /^[0-9]+$/ && $4 ~ /^[a-z-]+$/ && $5 ~ /^[0-9.]+$/) {
			k = $2 " " $3 " " $4
			if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			v[$1, k] = v[$1, k] " " $5
		}
	}
	function med(list,   a, m, i, j, t) {
		m = split(list, a, " ")
		for (i = 1; i <= m; i++)
			for (j = i + 1; j <= m; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m ? a[int((m + 1) / 2)] : 0
	}
	END {
		printf "%-9s %-27s %10s %10s %8s\n", "subjects", "packet", "base ns", "this ns", "ratio"
		for (i = 1; i <= n; i++) {
			split(order[i], f, " ")
			b = med(v["base", order[i]]); t = med(v["this", order[i]])
			printf "%-9s %-27s %10.1f %10.1f %7.2fx\n", f[1], f[2] " " f[3], b, t, b ? t / b : 0
		}
	}' "$OUT/cost-pair.txt" | tee "$OUT/cost-compare.txt"
}

# ---------------------------------------------------------------- part A --
if [[ ${SKIP_A:-0} != 1 ]]; then
	echo
	echo "== A: per-packet cost (bpf_prog_test_run_opts) =="
	echo "Drops emit deny events through the per-subject GCRA budget at fastwalld's"
	echo "defaults (100 events/s, burst 200): in a 1e6-packet run nearly every drop"
	echo "is rate-limited, as in a flood, so the figure is budget check + counter."
	echo
	spread=()
	[[ $SPREAD_A != 0 ]] && spread=(-S "$SPREAD_A" -O "$OUT/cost-spread.dat")
	for_scales "$BENCH" -r "$ROUNDS_A" -n "$REPEAT_A" -p "$PIN-a" -o "$OUT/cost.dat" \
		"${spread[@]}" | tee "$OUT/cost.txt"
	plot_cost
	[[ -n ${BASE_BUILD:-} ]] && compare_cost
fi

# part C, the nftables comparison: scripts/bench-nft.sh
run_compare() {
	[[ ${SKIP_C:-0} == 1 ]] && return 0
	echo
	echo "== C: fastwall vs nftables (scripts/bench-nft.sh, FULL=$FULL) =="
	BUILD=$BUILD FULL=$FULL "$(dirname "${BASH_SOURCE[0]}")/bench-nft.sh"
}

# part D, the DNS proxy: scripts/bench-dns.sh
run_dns() {
	[[ ${SKIP_D:-0} == 1 ]] && return 0
	echo
	echo "== D: DNS proxy vs dnsmasq vs the upstream (scripts/bench-dns.sh) =="
	if [[ $FULL == 1 ]]; then
		BUILD=$BUILD ROUNDS=${ROUNDS_D:-5} SECONDS_SAT=8 SECONDS_LAT=6 \
			"$(dirname "${BASH_SOURCE[0]}")/bench-dns.sh"
	else
		BUILD=$BUILD ROUNDS=${ROUNDS_D:-2} SECONDS_SAT=3 SECONDS_LAT=3 \
			"$(dirname "${BASH_SOURCE[0]}")/bench-dns.sh"
	fi
}

# process sandboxes' cgroup programs: scripts/bench-cgroup.sh
run_cgroup() {
	[[ ${SKIP_CGROUP:-0} == 1 ]] && return 0
	echo
	echo "== process sandboxes: cgroup programs vs none vs a trivial one; DNS socket vs TC redirect (scripts/bench-cgroup.sh) =="
	BUILD=$BUILD ROUNDS=$((FULL == 1 ? 9 : 5)) "$(dirname "${BASH_SOURCE[0]}")/bench-cgroup.sh" ||
		echo "bench.sh: bench-cgroup.sh failed"
}

# layer-7 pinning (the egress proxy): scripts/bench-l7.sh
run_l7() {
	[[ ${SKIP_L7:-0} == 1 ]] && return 0
	echo
	echo "== L: layer-7 pinning: direct vs pinned through fastwalld's proxy vs plain ssl_preread (scripts/bench-l7.sh) =="
	BUILD=$BUILD FULL=$FULL "$(dirname "${BASH_SOURCE[0]}")/bench-l7.sh" || echo "bench.sh: bench-l7.sh failed"
}

# layer-7 credential injection (terminating proxies): scripts/bench-inject.sh
run_inject() {
	[[ ${SKIP_INJECT:-0} == 1 ]] && return 0
	echo
	echo "== I: layer-7 credential injection: direct vs mitmproxy vs plain nginx vs fastwalld's proxy (scripts/bench-inject.sh) =="
	BUILD=$BUILD FULL=$FULL "$(dirname "${BASH_SOURCE[0]}")/bench-inject.sh" || echo "bench.sh: bench-inject.sh failed"
}

# control plane (actions protocol), last: scripts/bench-actions.sh
run_actions() {
	if [[ ${SKIP_ACTIONS:-0} != 1 ]]; then
		echo
		echo "== control plane per operation in this kernel (tests/cp_kernel) =="
		if [[ -x $BUILD/tests/cp_kernel ]]; then
			"$BUILD/tests/cp_kernel" -n "${CP_OPS:-300}" | tee "$OUT/cp_kernel.txt" ||
				echo "bench.sh: cp_kernel failed"
		else
			echo "bench.sh: $BUILD/tests/cp_kernel missing; run 'make bench'"
		fi
		echo
		ACT_QUICK=$((1 - FULL)) BUILD=$BUILD "$(dirname "${BASH_SOURCE[0]}")/bench-actions.sh"
	fi
	echo
	echo "bench.sh: done in $(( $(date +%s) - T_START )) s (FULL=$FULL)"
}

# ---------------------------------------------------------------- part B --
# part E, the port guard against nftables: scripts/bench-guard.sh (< 3 min)
run_guard() {
	[[ ${SKIP_E:-0} == 1 ]] && return 0
	echo
	echo "== E: the port guard under an untrusted flood (scripts/bench-guard.sh) =="
	BUILD=$BUILD "$(dirname "${BASH_SOURCE[0]}")/bench-guard.sh" || echo "bench.sh: bench-guard.sh failed"
}

# the ingress gateway (nginx module): scripts/bench-ingress.sh
run_ingress() {
	if [[ ${SKIP_INGRESS:-0} != 1 ]]; then
		echo
		BUILD=$BUILD "$(dirname "${BASH_SOURCE[0]}")/bench-ingress.sh" || echo "bench.sh: bench-ingress.sh failed"
	fi
}

[[ ${SKIP_B:-0} == 1 ]] && { run_compare; run_dns; run_guard; run_cgroup; run_ingress; run_l7; run_inject; run_actions; exit 0; }

echo
echo "== B: packets/s through veth + bridge + forward (one sender on CPU $CPU) =="

nsx() { ip netns exec "$1" "${@:2}"; }

for ns in "$SND" "$POD" "$SINK"; do
	ip netns add "$ns"
	nsx "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" link set lo up
done
# sandbox side: 10.64.0.0/16 behind the bridge; "internet": documentation
# ranges only (198.51.100.0/30 pod<->sink link, 203.0.113.0/24 destination)
ip -n "$SND" link add s0 type veth peer name p0 netns "$POD"
ip -n "$POD" link add o0 type veth peer name i0 netns "$SINK"
ip -n "$POD" link add br0 address 02:fb:00:00:00:01 type bridge
ip -n "$POD" link set p0 master br0
ip -n "$SINK" link set i0 address 02:fb:00:00:00:02
ip -n "$SND" addr add 10.64.8.2/16 dev s0
ip -n "$POD" addr add 10.64.0.1/16 dev br0
ip -n "$POD" addr add 198.51.100.1/30 dev o0
ip -n "$SINK" addr add 198.51.100.2/30 dev i0
for l in "$SND s0" "$POD p0" "$POD br0" "$POD o0" "$SINK i0"; do
	read -r -a w <<<"$l"
	set -- "${w[@]}"
	ip -n "$1" link set "$2" up
done
nsx "$POD" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
	net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.br0.rp_filter=0
ip -n "$SND" route add default via 10.64.0.1 dev s0
ip -n "$POD" route add 203.0.113.0/24 via 198.51.100.2 dev o0
# static neighbours: no ARP in the measured path, and the sink may drop all
ip -n "$SND" neigh replace 10.64.0.1 lladdr 02:fb:00:00:00:01 dev s0 nud permanent
ip -n "$POD" neigh replace 198.51.100.2 lladdr 02:fb:00:00:00:02 dev o0 nud permanent
# the sink drops everything at TC ingress; its veth counts what arrived
nsenter --net=/run/netns/"$SINK" "$BENCH" drop i0

# bench_tc serve processes hold the fastwall data planes and switch what
# runs on p0 (nsenter, not ip netns exec, so /sys/fs/bpf stays visible).
# Two data planes per process at most: each holds a descriptor per rule
# slot (8,192), and RLIMIT_NOFILE is per process. Server "a" holds 1 and
# 64 subjects, "b" 1,024 and 4,096, "base" (BASE_BUILD) the same as b from
# the other build, so spread traffic runs old and new side by side.
declare -A SRV_W SRV_R
start_serve() { # name binary scales
	local name=$1 bin=$2 scales=$3 reply w r
	rm -f "$OUT/srv-$name.in" "$OUT/srv-$name.out"
	mkfifo "$OUT/srv-$name.in" "$OUT/srv-$name.out"
	nsenter --net=/run/netns/"$POD" "$bin" serve -i p0 -s "$scales" -p "$PIN-$name" \
		<"$OUT/srv-$name.in" >"$OUT/srv-$name.out" 2>"$OUT/serve-$name.log" &
	SRV_PIDS+=("$!")
	exec {w}>"$OUT/srv-$name.in"
	exec {r}<"$OUT/srv-$name.out"
	SRV_W[$name]=$w
	SRV_R[$name]=$r
	read -r -t 600 -u "$r" reply || reply=timeout
	if [[ $reply != ready ]]; then
		log "bench.sh: bench_tc serve ($name) failed ($reply):"
		cat "$OUT/serve-$name.log" >&2
		exit 1
	fi
	grep 'set up' "$OUT/serve-$name.log" | sed "s/^bench_tc: /  [$name] /" || true
}
SRV_PIDS=()
start_serve a "$BENCH" 1,64
start_serve b "$BENCH" 1024,4096
if [[ -n ${BASE_BUILD:-} ]]; then
	[[ -x $BASE_BUILD/tests/bench_tc ]] || { log "bench.sh: $BASE_BUILD/tests/bench_tc missing"; exit 1; }
	start_serve base "$BASE_BUILD/tests/bench_tc" 1024,4096
fi

srv() { # server command...
	local r name=$1
	shift
	echo "$*" >&"${SRV_W[$name]}"
	read -r -t 60 -u "${SRV_R[$name]}" r || r="timeout"
	[[ $r == ok* ]] || { log "bench.sh: serve $name '$*': $r"; cat "$OUT/serve-$name.log" >&2; exit 1; }
	REPLY=$r
}

rx_packets() { ip -n "$SINK" -s -j link show dev i0 | jq '.[0].stats64.rx.packets'; }
now_ns() { date +%s%N; }
runtime_ns() { local a; read -r a _ <"/proc/$1/schedstat" 2>/dev/null && echo "$a" || echo 0; }
KSOFTIRQD=$(pgrep -x "ksoftirqd/$CPU" | head -1)

# peer: label, server, program command, source base, number of sources.
# '-spread' peers send from every subject's address in turn; each is
# compared with none-spread-N, the same traffic and no program, and
# fastwall's also with trivial-N-spread, the trivial program looking up
# each of those sources.
ALL_PEERS=(
	"none|a|none|10.64.8.2|1"
	"trivial|a|trivial|10.64.8.2|1"
	"fastwall-1|a|fw 1|10.64.8.2|1"
	"fastwall-64|a|fw 64|10.64.8.2|1"
	"fastwall-1024|b|fw 1024|10.64.8.2|1"
	"none-spread-1024|a|none|10.64.6.2|1024"
	"trivial-1024-spread|a|trivial 1024|10.64.6.2|1024"
	"fastwall-1024-spread|b|fw 1024|10.64.6.2|1024"
	"none-spread-4096|a|none|10.64.0.2|4096"
	"trivial-4096-spread|a|trivial 4096|10.64.0.2|4096"
	"fastwall-4096-spread|b|fw 4096|10.64.0.2|4096"
)
if [[ -n ${BASE_BUILD:-} ]]; then
	ALL_PEERS+=(
		"base-fastwall-1024-spread|base|fw 1024|10.64.6.2|1024"
		"base-fastwall-4096-spread|base|fw 4096|10.64.0.2|4096"
	)
fi
# PEERS_B: an extended regex of the labels to run (e.g. 'spread' for the
# many-subject peers only); none and trivial always run, the ratios need them
PEERS=()
for p in "${ALL_PEERS[@]}"; do
	l=${p%%|*}
	if [[ $l == none || $l == trivial || -z ${PEERS_B:-} || $l =~ ${PEERS_B} ]]; then
		PEERS+=("$p")
	fi
done
RES=$OUT/rate.raw
: >"$RES"

# The whole path (sender syscall, veth, bridge, TC, forward, veth, sink
# drop) runs on the sender's CPU: inline in the sender's softirq, or in
# ksoftirqd when deferred. Neighbours on this shared machine take CPU time
# away from the sender, so besides packets/s of wall time we divide the
# packets delivered by the CPU time the path used (sender + ksoftirqd of its
# CPU, from /proc/PID/schedstat, which includes softirq time on this kernel
# without IRQ_TIME_ACCOUNTING): packets/s per core, the figure compared.
measure() { # label server cmd src nsrc round
	local label=$1 sv=$2 cmd=$3 src=$4 nsrc=$5 round=$6 r1 r2 t1 t2 c1 c2 k1 k2 sent a1=0 a2=0 n
	srv "$sv" "$cmd"
	if [[ $cmd == fw* ]]; then
		n=${cmd#fw }
		srv "$sv" "stats $n"
		a1=$(sed -n 's/.*allow_cidr=\([0-9]*\).*/\1/p' <<<"$REPLY")
	fi
	ip netns exec "$SND" taskset -c "$CPU" "$BLAST" -d 203.0.113.10 -P 9 -s "$src" -k "$nsrc" \
		-t "$(awk -v s="$SECONDS_B" 'BEGIN { print s + 0.8 }')" >"$OUT/blast.out" &
	BLAST_PID=$!
	sleep 0.5
	c1=$(runtime_ns "$BLAST_PID"); k1=$(runtime_ns "$KSOFTIRQD"); r1=$(rx_packets); t1=$(now_ns)
	sleep "$SECONDS_B"
	c2=$(runtime_ns "$BLAST_PID"); k2=$(runtime_ns "$KSOFTIRQD"); r2=$(rx_packets); t2=$(now_ns)
	wait "$BLAST_PID"
	BLAST_PID=
	sent=$(awk '{ print $2 }' "$OUT/blast.out")
	if [[ $cmd == fw* ]]; then
		srv "$sv" "stats $n"
		a2=$(sed -n 's/.*allow_cidr=\([0-9]*\).*/\1/p' <<<"$REPLY")
	fi
	# label round pps-per-core pps-wall sent allowed cpu-share
	awk -v l="$label" -v r="$round" -v p=$((r2 - r1)) -v ns=$((t2 - t1)) -v s="$sent" \
		-v a=$((a2 - a1)) -v cpu=$((c2 - c1 + k2 - k1)) \
		'BEGIN { printf("%s %d %.0f %.0f %d %d %.3f\n", l, r, (cpu > 0 ? p * 1e9 / cpu : 0),
			p * 1e9 / ns, s, a, cpu / ns) }' >>"$RES"
}

for ((round = 1; round <= ROUNDS_B; round++)); do
	n=${#PEERS[@]}
	# rotate the order each round so drift and neighbours' noise hit all alike
	for ((j = 0; j < n; j++)); do
		IFS='|' read -r label sv cmd src nsrc <<<"${PEERS[$(((j + round - 1) % n))]}"
		measure "$label" "$sv" "$cmd" "$src" "$nsrc" "$round"
	done
	log "  round $round/$ROUNDS_B done"
done
srv a none

# The profile pass (PROFILE_B rounds, 3; 0 skips it): each peer with a
# program again, SECONDS_B per round, with the kernel's run-time statistics of BPF programs
# on (BPF_ENABLE_STATS, held by a child; they cost every program a clock
# read, so never during the rounds above). What the program on p0's TC
# ingress spent per packet, on its own: the CPU the rates above compare
# includes the whole path, and a noisy neighbour moves it more.
# "run_time_ns run_cnt" of the program at p0's TC ingress
p0_prog_ns() {
	local id
	id=$(ip netns exec "$POD" bpftool -j net show dev p0 2>/dev/null |
		jq -r '[.[].tc[]? | select(.kind == "clsact/ingress") | .id][0] // empty')
	[[ -n $id ]] || { echo "0 0"; return; }
	bpftool -j prog show id "$id" | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"'
}
PROF=$OUT/rate-prog.txt
: >"$PROF"
PROF_PEERS=()
for p in "${PEERS[@]}"; do [[ $p == *'|none|'* ]] || PROF_PEERS+=("$p"); done
if ((${PROFILE_B:-3} > 0)) && stats_on; then
	for ((round = 1; round <= ${PROFILE_B:-3}; round++)); do
		n=${#PROF_PEERS[@]}
		for ((j = 0; j < n; j++)); do
			IFS='|' read -r label sv cmd src nsrc <<<"${PROF_PEERS[$(((j + round - 1) % n))]}"
			srv "$sv" "$cmd"
			ip netns exec "$SND" taskset -c "$CPU" "$BLAST" -d 203.0.113.10 -P 9 -s "$src" -k "$nsrc" \
				-t "$(awk -v s="$SECONDS_B" 'BEGIN { print s + 0.8 }')" >/dev/null &
			BLAST_PID=$!
			sleep 0.5
			read -r t1 n1 < <(p0_prog_ns)
			sleep "$SECONDS_B"
			read -r t2 n2 < <(p0_prog_ns)
			wait "$BLAST_PID"
			BLAST_PID=
			awk -v l="$label" -v t=$((t2 - t1)) -v n=$((n2 - n1)) \
				'BEGIN { if (n > 0) printf("%s %.0f %d\n", l, t / n, n) }' >>"$PROF"
		done
	done
	srv a none
	stats_off
fi

# summary: median and min-max pps per peer; ratios of medians, and the
# median of per-round ratios (each round's peers ran back to back)
echo
echo "Small UDP (64-byte payload, new source port every packet), ${ROUNDS_B} rounds x ${SECONDS_B} s"
echo "per peer, interleaved. Packets counted at the sink's veth; pps/core = packets"
echo "delivered per second of CPU time used by the sender and ksoftirqd on its CPU"
echo "(medians; 'paired' = median of per-round ratios; wall pps and the CPU share"
echo "the path got are shown for reference)."
echo "fastwall: 64 CIDR rules + 512 learned addresses per subject; the traffic's"
echo "subject (the middle one) is allowed by an allow CIDR. '-N-spread': the same"
echo "traffic from all N subjects' addresses in turn (compared with the same"
echo "traffic and no program: none-spread-N; and with the trivial program's one lookup"
echo "of each source: trivial-N-spread, the 'vs triv' of fastwall-N-spread)."
[[ -n ${BASE_BUILD:-} ]] && echo "'base-': the same data plane from $BASE_BUILD, in the same rounds."
echo
awk -v datf="$OUT/rate.dat" -v peers="$(printf '%s\n' "${PEERS[@]}" | cut -d'|' -f1 | tr '\n' ' ')" '
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
# a run that got no CPU time or delivered nothing (the sender died, the
# machine stalled it) is left out, and said so, rather than counted as 0
$3 <= 0 || $7 <= 0 { bad[$1]++; nbad++; sent[$1] += $5; allowed[$1] += $6; next }
{ pps[$1, $2] = $3; wall[$1, $2] = $4; share[$1, $2] = $7; sent[$1] += $5; allowed[$1] += $6; if ($2 > rounds) rounds = $2 }
END {
	np = split(peers, P, " ")
	for (i = 1; i <= np; i++) {
		n = 0; mn = 1e18; mx = 0
		for (r = 1; r <= rounds; r++) { if (!((P[i], r) in pps)) continue; v = pps[P[i], r]; a[++n] = v; if (v < mn) mn = v; if (v > mx) mx = v }
		med[P[i]] = n ? median(a, n) : 0; lo[P[i]] = mn; hi[P[i]] = mx
		base[P[i]] = "none"; tb[P[i]] = "trivial"
		if (P[i] ~ /-spread$/ && P[i] != "none-spread") {
			nn = P[i]; sub(/-spread$/, "", nn); sub(/.*-/, "", nn)
			if (("none-spread-" nn, 1) in pps) base[P[i]] = "none-spread-" nn
			if (P[i] !~ /^trivial/ && ("trivial-" nn "-spread", 1) in pps) tb[P[i]] = "trivial-" nn "-spread"
		}
		nb = nc = nw = 0
		for (r = 1; r <= rounds; r++) {
			if (!((P[i], r) in pps)) continue
			if ((base[P[i]], r) in pps) b[++nb] = pps[P[i], r] / pps[base[P[i]], r]
			if ((tb[P[i]], r) in pps) c[++nc] = pps[P[i], r] / pps[tb[P[i]], r]
			nw++; w[nw] = wall[P[i], r]; sh[nw] = share[P[i], r]
		}
		rn[P[i]] = nb ? median(b, nb) : 0; rt[P[i]] = nc ? median(c, nc) : 0
		wmed[P[i]] = nw ? median(w, nw) : 0; shmed[P[i]] = nw ? median(sh, nw) : 0
	}
	printf "%-21s %9s %19s %8s %9s %8s  %9s %5s\n", "peer", "pps/core", "(min-max)", "vs none", "(paired)", "vs triv", "wall pps", "CPU"
	for (i = 1; i <= np; i++) {
		p = P[i]
		printf "%-21s %9.0f %19s %7.1f%% %8.1f%% %7.1f%%  %9.0f %4.0f%%\n", p, med[p], sprintf("(%.0f-%.0f)", lo[p], hi[p]),
			100 * med[p] / med[base[p]], 100 * rn[p], 100 * med[p] / med[tb[p]], wmed[p], 100 * shmed[p]
		printf("%s %.0f %.0f %.0f %.4f %.4f %.2f\n", p, med[p], lo[p], hi[p], med[p] / med[base[p]], med[p] / med[tb[p]], 100 * rn[p]) > datf
	}
	if (nbad) {
		printf "\n%d runs left out (no CPU time or nothing delivered):", nbad
		for (p in bad) printf " %s x%d", p, bad[p]
		print ""
	}
	print ""
	print "Targets: fastwall >= 90% of no program, and within 5% of trivial."
	for (i = 1; i <= np; i++) {
		p = P[i]
		if (p !~ /fastwall/) continue
		vn = 100 * med[p] / med[base[p]]; vt = 100 * med[p] / med[tb[p]]
		printf("  %-20s %5.1f%% of %s (%s), paired %5.1f%% (%s), %+5.1f%% vs %s (%s)\n", p, vn, base[p],
			(vn >= 90 ? "meets" : sprintf("MISSES by %.1f points", 90 - vn)),
			100 * rn[p], (100 * rn[p] >= 90 ? "meets" : sprintf("MISSES by %.1f points", 90 - 100 * rn[p])),
			vt - 100, tb[p], (vt >= 95 ? "meets" : sprintf("MISSES by %.1f points", 95 - vt)))
	}
	print ""
	print "Check: packets fastwall counted as allow-cidr during its runs / packets sent:"
	for (i = 1; i <= np; i++) {
		p = P[i]
		if (p !~ /fastwall/) continue
		printf "  %-20s %d / %d\n", p, allowed[p], sent[p]
	}
}' "$RES" | tee "$OUT/rate.txt"

if [[ -s $PROF ]]; then
	echo
	echo "Profile pass (${PROFILE_B:-3} rounds x ${SECONDS_B} s per peer, interleaved, BPF run-time"
	echo "statistics on): the program's own time per packet at p0's TC ingress, median"
	echo "(min-max) over rounds, and its excess over the trivial program seeing the same"
	echo "sources (trivial-N-spread for fastwall-N-spread):"
	awk 'function median(arr, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
		return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
	}
	{ if (!($1 in cnt)) o[++k] = $1; v[$1, ++cnt[$1]] = $2 }
	END {
		for (i = 1; i <= k; i++) {
			p = o[i]; lo[p] = 1e18; hi[p] = 0
			for (r = 1; r <= cnt[p]; r++) { a[r] = v[p, r]; if (a[r] < lo[p]) lo[p] = a[r]; if (a[r] > hi[p]) hi[p] = a[r] }
			ns[p] = median(a, cnt[p])
		}
		for (i = 1; i <= k; i++) {
			p = o[i]; t = "trivial"
			if (p ~ /^fastwall-[0-9]+-spread$/) { nn = p; sub(/^fastwall-/, "", nn); sub(/-spread$/, "", nn); if (("trivial-" nn "-spread") in ns) t = "trivial-" nn "-spread" }
			line = sprintf("  %-26s %6d ns/packet %13s", p, ns[p], sprintf("(%d-%d)", lo[p], hi[p]))
			if (p !~ /^trivial/ && (t in ns)) line = line sprintf(", %+d ns vs %s", ns[p] - ns[t], t)
			print line
		}
	}' "$PROF" | tee -a "$OUT/rate.txt"
fi

plot_rate

# part B's namespaces and data planes are idle from here; free them first
for name in "${!SRV_W[@]}"; do echo quit >&"${SRV_W[$name]}" || true; done
for p in "${SRV_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
SRV_PIDS=()
for ns in "$SND" "$POD" "$SINK"; do ip netns del "$ns" 2>/dev/null || true; done

run_compare
run_dns
run_guard
run_cgroup
run_ingress
run_l7
run_inject
run_actions
