#!/usr/bin/env bash
# nftables peers for issue 6 (groundwork): packets/s of the reference
# nftables design and of the strongest nftables form (scripts/nft/) on the
# topology of scripts/bench.sh part B, and the control-plane cost of both.
# fastwall is not in this run; compare with part B's figures for scale.
#
#   1. sanity: with 64 subjects, each ruleset passes allowed traffic and
#      drops deny-CIDR, default-deny, port-853 and non-subject traffic;
#   2. packets/s (per core, as bench.sh part B) for none, nft-reference-N,
#      nft-best-N, N in SCALES (1,64,1024), ROUNDS x SECONDS, interleaved,
#      and nft-ctonly (a forward chain holding only `ct state
#      established,related accept`: the conntrack cost both designs pay);
#      each ruleset is loaded before its run and deleted after it (loading
#      not timed), so "none" runs with no table and no conntrack hooks;
#   3. control plane with N subjects present (CP_SCALES 64,1024): add a
#      subject, remove one, learn one address, swap one subject's policy,
#      each `nft -f` timed with date +%s%N, CP_REPS times (median, min-max).
#
# Env: BUILD (build), ROUNDS (2), SECONDS_B (2), SCALES (1,64,1024),
# CP_SCALES (64,1024), CP_REPS (3), RULES (16), LEARNED (512).
# Needs root, nft (apt-get install nftables), jq, $BUILD/tests/{udpblast,bench_tc}.
set -euo pipefail

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-2}
SECONDS_B=${SECONDS_B:-2}
SCALES=${SCALES:-1,64,1024}
CP_SCALES=${CP_SCALES:-64,1024}
CP_REPS=${CP_REPS:-3}
RULES=${RULES:-16}
LEARNED=${LEARNED:-512}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GEN_REF=$HERE/nft/reference.sh
GEN_BEST=$HERE/nft/best.sh
BENCH=$BUILD/tests/bench_tc
BLAST=$BUILD/tests/udpblast
OUT=$BUILD/bench-nft

[[ $EUID -eq 0 ]] || { echo "bench-nft.sh: needs root (namespaces)" >&2; exit 1; }
command -v nft >/dev/null || { echo "bench-nft.sh: nft missing (apt-get install -y nftables)" >&2; exit 1; }
for f in "$BENCH" "$BLAST"; do
	[[ -x $f ]] || { echo "bench-nft.sh: $f missing; run 'make bench'" >&2; exit 1; }
done
mkdir -p "$OUT"
TMP=$(mktemp -d)

ID=$$
SND=fwn$ID-snd
POD=fwn$ID-pod
SINK=fwn$ID-sink
BLAST_PID=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[[ -n $BLAST_PID ]] && kill "$BLAST_PID" 2>/dev/null || true
	# the nft tables live in $POD and go with it
	for ns in "$SND" "$POD" "$SINK"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CPU=$(( $(nproc) - 1 ))
log() { printf '%s\n' "$*" >&2; }
nsx() { ip netns exec "$1" "${@:2}"; }
now_ns() { date +%s%N; }

echo "nftables peers (issue 6 groundwork): $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
echo "kernel $(uname -r), $(nft --version), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "policy per subject: $RULES CIDR rules (allow + deny interval sets), $LEARNED learned addresses (timeout set)"

# ------------------------------------------------ topology (as bench.sh B) --
for ns in "$SND" "$POD" "$SINK"; do
	ip netns add "$ns"
	nsx "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" link set lo up
done
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
	set -- $l
	ip -n "$1" link set "$2" up
done
nsx "$POD" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
	net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.br0.rp_filter=0
ip -n "$SND" route add default via 10.64.0.1 dev s0
ip -n "$POD" route add 203.0.113.0/24 via 198.51.100.2 dev o0
ip -n "$SND" neigh replace 10.64.0.1 lladdr 02:fb:00:00:00:01 dev s0 nud permanent
ip -n "$POD" neigh replace 198.51.100.2 lladdr 02:fb:00:00:00:02 dev o0 nud permanent
# the sink drops everything at TC ingress; its veth counts what arrived
nsenter --net=/run/netns/"$SINK" "$BENCH" drop i0

rx_packets() { ip -n "$SINK" -s -j link show dev i0 | jq '.[0].stats64.rx.packets'; }
runtime_ns() { local a; read -r a _ <"/proc/$1/schedstat" 2>/dev/null && echo "$a" || echo 0; }
KSOFTIRQD=$(pgrep -x "ksoftirqd/$CPU" | head -1)

gen() { # style n [mode idx] -> file path
	local style=$1 n=$2 f=$TMP/$1-$2-${3:-full}-${4:-x}.nft
	if [[ $style == ctonly && ! -s $f ]]; then
		# the conntrack tax alone: one forward chain with the ct state rule
		printf '%s\n' "table inet fwct" "delete table inet fwct" "add table inet fwct" \
			"add chain inet fwct forward { type filter hook forward priority filter; policy accept; }" \
			"add rule inet fwct forward ct state established,related accept" >"$f"
	fi
	[[ -s $f ]] || { if [[ $style == reference ]]; then "$GEN_REF" "$n" "$RULES" "$LEARNED" "${@:3}"; else "$GEN_BEST" "$n" "$RULES" "$LEARNED" "${@:3}"; fi >"$f"; }
	echo "$f"
}
load() { # style n
	nsx "$POD" nft -f "$(gen "$1" "$2")"
}
unload() { nsx "$POD" nft flush ruleset; }

# ------------------------------------------------------------ 1. sanity --
probe() { # dst dport src -> packets arriving at the sink in 0.3 s of blasting
	local r1 r2
	r1=$(rx_packets)
	nsx "$SND" "$BLAST" -d "$1" -P "$2" -s "$3" -k 1 -t 0.3 >/dev/null
	sleep 0.1
	r2=$(rx_packets)
	echo $((r2 - r1))
}
echo
echo "== 1. sanity (64 subjects; packets reaching the sink in 0.3 s) =="
LA=198.51.100.$((LEARNED > 77 ? 77 : LEARNED - 1))   # a learned address (k < 256)
((LEARNED >= 5)) || LA=
ip -n "$POD" route replace 198.51.100.64/26 via 198.51.100.2 dev o0
ip -n "$POD" route replace 198.51.100.4/30 via 198.51.100.2 dev o0
ip -n "$POD" route replace 198.51.100.8/29 via 198.51.100.2 dev o0
probe 203.0.113.10 9 10.64.8.2 >/dev/null   # warm-up: the bridge port may just be coming up
sleep 0.5
bad=0
for style in none reference best; do
	[[ $style != none ]] && load "$style" 64
	line=$(printf '%-10s' "$style")
	for c in "allow 203.0.113.10 9 10.64.8.2 1" ${LA:+"learned $LA 9 10.64.8.2 1"} \
		"deny-cidr 203.0.113.130 9 10.64.8.2 0" "default 203.0.113.200 9 10.64.8.2 0" \
		"port-853 203.0.113.10 853 10.64.8.2 0" "non-subj 203.0.113.10 9 10.64.200.2 0"; do
		set -- $c
		p=$(probe "$2" "$3" "$4")
		want=$5
		[[ $style == none ]] && want=1
		ok=ok
		if { [[ $want == 1 ]] && ((p == 0)); } || { [[ $want == 0 ]] && ((p != 0)); }; then ok=WRONG; bad=1; fi
		line+=$(printf '  %s=%s(%s)' "$1" "$p" "$ok")
	done
	echo "$line"
	[[ $style != none ]] && unload
done
for r in 198.51.100.64/26 198.51.100.4/30 198.51.100.8/29; do ip -n "$POD" route del "$r" 2>/dev/null || true; done
((bad == 0)) || { log "bench-nft.sh: a ruleset gave a wrong verdict; figures below are not comparable"; }

# ---------------------------------------------------------- 2. packets/s --
PEERS=(none nft-ctonly-1)
IFS=, read -ra SC <<<"$SCALES"
for n in "${SC[@]}"; do PEERS+=("nft-reference-$n" "nft-best-$n"); done
RES=$OUT/rate.raw
: >"$RES"

measure() { # label round
	local label=$1 round=$2 r1 r2 t1 t2 c1 c2 k1 k2 sent n style ct
	if [[ $label != none ]]; then
		n=${label##*-}; style=${label#nft-}; style=${style%-*}
		load "$style" "$n"
	fi
	# ip netns exec and taskset exec: $! is the sender itself (schedstat)
	ip netns exec "$SND" taskset -c "$CPU" "$BLAST" -d 203.0.113.10 -P 9 -s 10.64.8.2 -k 1 \
		-t "$(awk -v s="$SECONDS_B" 'BEGIN { print s + 0.8 }')" >"$TMP/blast.out" &
	BLAST_PID=$!
	sleep 0.5
	c1=$(runtime_ns "$BLAST_PID"); k1=$(runtime_ns "$KSOFTIRQD"); r1=$(rx_packets); t1=$(now_ns)
	sleep "$SECONDS_B"
	c2=$(runtime_ns "$BLAST_PID"); k2=$(runtime_ns "$KSOFTIRQD"); r2=$(rx_packets); t2=$(now_ns)
	ct=$(nsx "$POD" cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null || echo 0)
	wait "$BLAST_PID"
	BLAST_PID=
	sent=$(awk '{ print $2 }' "$TMP/blast.out")
	[[ $label != none ]] && unload
	awk -v l="$label" -v r="$round" -v p=$((r2 - r1)) -v ns=$((t2 - t1)) -v s="$sent" \
		-v cpu=$((c2 - c1 + k2 - k1)) -v ct="$ct" \
		'BEGIN { printf("%s %d %.0f %.0f %d %.3f %d\n", l, r, (cpu > 0 ? p * 1e9 / cpu : 0),
			p * 1e9 / ns, s, cpu / ns, ct) }' >>"$RES"
}

echo
echo "== 2. packets/s through veth + bridge + forward (one sender on CPU $CPU) =="
for n in "${SC[@]}"; do gen reference "$n" >/dev/null; gen best "$n" >/dev/null; done
for ((round = 1; round <= ROUNDS; round++)); do
	np=${#PEERS[@]}
	for ((j = 0; j < np; j++)); do
		measure "${PEERS[$(((j + round - 1) % np))]}" "$round"
	done
	log "  round $round/$ROUNDS done"
done
echo "Small UDP (64-byte payload, new source port every packet) from 10.64.8.2"
echo "(subject N/2) to 203.0.113.10 (allowed by its allow CIDR), ${ROUNDS} rounds x ${SECONDS_B} s"
echo "per peer, interleaved; pps/core as bench.sh part B (median; paired = median of"
echo "per-round ratios to none)."
echo
awk -v peers="${PEERS[*]}" -v datf="$OUT/rate.dat" '
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
{ pps[$1, $2] = $3; wall[$1, $2] = $4; share[$1, $2] = $6; if ($2 > rounds) rounds = $2 }
END {
	np = split(peers, P, " ")
	printf "%-20s %9s %19s %8s %9s  %9s %5s\n", "peer", "pps/core", "(min-max)", "vs none", "(paired)", "wall pps", "CPU"
	for (i = 1; i <= np; i++) {
		p = P[i]; mn = 1e18; mx = 0
		for (r = 1; r <= rounds; r++) { v = pps[p, r]; a[r] = v; if (v < mn) mn = v; if (v > mx) mx = v
			b[r] = pps[p, r] / pps["none", r]; w[r] = wall[p, r]; s[r] = share[p, r] }
		med[p] = median(a, rounds); rn = median(b, rounds)
		printf "%-20s %9.0f %19s %7.1f%% %8.1f%%  %9.0f %4.0f%%\n", p, med[p], sprintf("(%.0f-%.0f)", mn, mx),
			100 * med[p] / med["none"], 100 * rn, median(w, rounds), 100 * median(s, rounds)
		printf "%s %.0f %.0f %.0f %.4f %.4f\n", p, med[p], mn, mx, med[p] / med["none"], rn > datf
	}
}' "$RES" | tee "$OUT/rate.txt"

# ------------------------------------------------------- 3. control plane --
echo
echo "== 3. control plane: one nft -f transaction each, N subjects present (ms, median (min-max) of $CP_REPS) =="
timed() { # file -> ms
	local t0 t1
	t0=$(now_ns)
	nsx "$POD" nft -f "$1"
	t1=$(now_ns)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e6 }'
}
summ() { # values... -> "median (min-max)"
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
		printf "%8.1f (%.1f-%.1f)", m, v[1], v[NR] }'
}
IFS=, read -ra CS <<<"$CP_SCALES"
printf '%-10s %6s  %-20s %-20s %-20s %-20s %-20s\n' peer N "no-op (add table)" "add subject" "remove subject" "learn 1 address" "policy swap"
for n in "${CS[@]}"; do
	for style in reference best; do
		T=fwref; [[ $style == best ]] && T=fwbest
		x_new=$(printf '%08x' $((0x0a400802 - n / 2 + n)))
		x_rm=$(printf '%08x' $((0x0a400802 - n / 2)))
		ip_new=$(printf '%d.%d.%d.%d' 10 64 $(((0x0802 - n / 2 + n) >> 8)) $(((0x0802 - n / 2 + n) & 255)))
		ip_rm=$(printf '%d.%d.%d.%d' 10 64 $(((0x0802 - n / 2) >> 8)) $(((0x0802 - n / 2) & 255)))
		fadd=$(gen "$style" "$n" subject "$n")
		fswap=$(gen "$style" "$n" swap $((n / 2)))
		echo "add element inet $T learned_0a400802 { 203.0.113.222 timeout 300s }" >"$TMP/learn.nft"
		echo "delete element inet $T learned_0a400802 { 203.0.113.222 }" >"$TMP/unlearn.nft"
		if [[ $style == reference ]]; then
			frm=$(gen reference "$n" without 0)    # removal = rebuild without subject 0
			frestore=$(gen reference "$n")
		else
			frm=$TMP/best-rm-$n.nft
			printf '%s\n' "delete element inet $T subjects { $ip_rm }" "delete chain inet $T s_$x_rm" \
				"delete set inet $T deny_$x_rm" "delete set inet $T allow_$x_rm" "delete set inet $T learned_$x_rm" >"$frm"
			frestore=$(gen best "$n" subject 0)
		fi
		# undo of "add subject"
		fundo=$TMP/$style-undo-$n.nft
		if [[ $style == reference ]]; then
			# the reference removes by rebuilding; to undo the add cheaply here we
			# reload the table (untimed)
			cp "$(gen reference "$n")" "$fundo"
		else
			printf '%s\n' "delete element inet $T subjects { $ip_new }" "delete chain inet $T s_$x_new" \
				"delete set inet $T deny_$x_new" "delete set inet $T allow_$x_new" "delete set inet $T learned_$x_new" >"$fundo"
		fi
		load "$style" "$n"
		echo "add table inet $T" >"$TMP/noop.nft"
		A=() R=() L=() S=() Z=()
		for ((k = 0; k < CP_REPS; k++)); do
			Z+=("$(timed "$TMP/noop.nft")")
			A+=("$(timed "$fadd")"); nsx "$POD" nft -f "$fundo"
			R+=("$(timed "$frm")"); nsx "$POD" nft -f "$frestore"
			L+=("$(timed "$TMP/learn.nft")"); nsx "$POD" nft -f "$TMP/unlearn.nft"
			S+=("$(timed "$fswap")")
		done
		printf '%-10s %6s  %-20s %-20s %-20s %-20s %-20s\n' "$style" "$n" "$(summ "${Z[@]}")" "$(summ "${A[@]}")" "$(summ "${R[@]}")" \
			"$(summ "${L[@]}")" "$(summ "${S[@]}")"
		unload
		: "$ip_new"
	done
done | tee "$OUT/control.txt"
echo
echo "reference: add = sets + mark/subj chains + 2 dispatch rules; remove = rebuild the"
echo "whole table without the subject (delete table + add, one transaction); best: add ="
echo "sets + chain + 1 vmap element; remove = delete element, chain and sets. learn ="
echo "add element with timeout to the traffic subject's learned set; swap = flush and"
echo "refill that subject's allow and deny sets in one transaction. Each figure is the"
echo "wall time of one 'ip netns exec POD nft -f FILE' (process start included;"
echo "the no-op column, 'add table' of the existing table, is that fixed part plus"
echo "nft's cache fetch)."
