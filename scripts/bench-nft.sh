#!/usr/bin/env bash
# fastwall against the nftables design it replaces: packet rate,
# TCP request/response and connection rate, and control-plane cost, for
# every peer on the same topology, driven by the same harness, interleaved.
# Run by scripts/bench.sh as part C (`make bench`; FULL=1 for the whole
# matrix), or alone. Prints figures and the targets they are compared with;
# never fails on timing.
#
# Peers (each in its own pod namespace, set up once, so nothing is loaded
# or attached between measurements):
#   none              no filter at all (no table, no conntrack hooks)
#   nft-ctonly        one forward chain with `ct state established,related
#                     accept`: the conntrack cost every nftables peer pays
#   trivial           (FULL) a TC program that parses IPv4 and does one hash
#                     lookup (bpf/bench_trivial.bpf.c)
#   nft-reference-N-R the reference design (scripts/nft/reference.sh)
#   nft-best-N-R      verdict maps keyed by source address (scripts/nft/best.sh)
#   fastwall-N-R      fastwalld, subjects bound over its Sandbox Actions
#                     listener (tests/bench/fwpeer), learned addresses written
#                     into the pinned fastwall_learned map
# for N subjects in SCALES and R CIDR rules per subject in RULES_LIST, each
# subject with LEARNED learned addresses (fewer when N x LEARNED would not fit
# fastwall's learned map: then every peer gets the same smaller number).
#
# Topology per peer: SANDBOXES sandbox namespaces (veth ports of the pod's
# bridge br0, each the address of one subject spread over the id range; one
# sandbox when N = 1), the pod (bridge, forward), a sink namespace (UDP sink
# that drops at TC ingress; TCP echo server on 203.0.113.70 behind a second
# link). Documentation ranges only; the initial namespace is never touched.
#
#   1. sanity: every peer passes allowed and learned traffic and drops
#      deny-CIDR, default-deny, port-853 and non-subject traffic;
#   2. per round, every peer in rotated order, in chunks of CHUNK (3) with a
#      no-filter run before and after each chunk: small new-flow UDP from its
#      sandboxes (packets/s per core), TCP request/response on long-lived
#      connections (latency, transactions/s per core), TCP connect/request/
#      close (connections/s per core, latency);
#   3. control plane with N subjects present (CP_SCALES, CP_RULES rules):
#      add a subject, update one subject's policy, learn one address, remove
#      a subject, rebuild everything after a restart.
#
# Env: BUILD (build), FULL (0), SCALES, RULES_LIST, ROUNDS, SECONDS_UDP,
# SECONDS_TCP, SANDBOXES (4), FLOWS (64512: distinct UDP flows over all
# sandboxes), TCP_CONNS (8), CRR_CONC (8), LEARNED (512),
# PEERS (reference,best,fastwall: which of the three to run),
# CP_SCALES, CP_RULES (16), CP_REPS (nft, 3), CP_REPS_FW (fastwall, 10; FULL 20),
# PROFILE (FULL: 1): perf of the UDP path per peer and of fastwalld's
# operations (strace -c, perf), SKIP_TCP=1, SKIP_CP=1, PLOT_ONLY=1 (tables and plots again from the last
# run's raw data). Output: $BUILD/bench-nft/.
# Needs root, nft, python3, gnuplot (plots only), perf and strace (profiles
# only; all from scripts/install-deps.sh), and
# $BUILD/{fastwalld,tests/{udpblast,udpflows,bench_tc,fwpeer,tcprr}}.
set -euo pipefail

BUILD=${BUILD:-build}
FULL=${FULL:-0}
[[ $FULL == 1 ]] || FULL=0
if [[ $FULL == 1 ]]; then
	: "${SCALES:=1,64,1024,4096}" "${RULES_LIST:=16,256}" "${ROUNDS:=5}" "${SECONDS_UDP:=2}"
	: "${SECONDS_TCP:=1.2}" "${CP_SCALES:=64,1024,4096}" "${CP_REPS:=3}" "${CP_REPS_FW:=20}"
	: "${TRIVIAL:=1}" "${PROFILE:=1}"
else
	: "${SCALES:=1,64,1024}" "${RULES_LIST:=16}" "${ROUNDS:=3}" "${SECONDS_UDP:=1.2}"
	: "${SECONDS_TCP:=0.8}" "${CP_SCALES:=64,1024}" "${CP_REPS:=3}" "${CP_REPS_FW:=10}"
	: "${TRIVIAL:=0}" "${PROFILE:=0}"
fi
SANDBOXES=${SANDBOXES:-4}
FLOWS=${FLOWS:-64512}
TCP_CONNS=${TCP_CONNS:-8}
CRR_CONC=${CRR_CONC:-8}
LEARNED=${LEARNED:-512}
CP_RULES=${CP_RULES:-16}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$BUILD/bench-nft
REPORT=$HERE/nft/report.py

if [[ ${PLOT_ONLY:-0} == 1 ]]; then
	exec python3 "$REPORT" "$OUT" all
fi

[[ $EUID -eq 0 ]] || { echo "bench-nft.sh: needs root (namespaces, BPF)" >&2; exit 1; }
for t in nft python3; do
	command -v "$t" >/dev/null || { echo "bench-nft.sh: $t missing (scripts/install-deps.sh)" >&2; exit 1; }
done
BIN=$(cd "$BUILD" && pwd)
FWD=$BIN/fastwalld
BENCH=$BIN/tests/bench_tc
BLAST=$BIN/tests/udpblast
FLOWS_BIN=$BIN/tests/udpflows
PEER=$BIN/tests/fwpeer
TCPRR=$BIN/tests/tcprr
for f in "$FWD" "$BENCH" "$BLAST" "$FLOWS_BIN" "$PEER" "$TCPRR"; do
	[[ -x $f ]] || { echo "bench-nft.sh: $f missing; run 'make bench'" >&2; exit 1; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/fastwalld-*.log
(( SANDBOXES >= 1 && SANDBOXES <= 8 )) || { echo "bench-nft.sh: SANDBOXES 1..8" >&2; exit 2; }

ID=$$
PFX=fwc$ID
RUN=/run/fastwall-cmp-$ID
# fastwall's pins go to a bpffs mounted for this run alone: on a shared
# machine another job may mount a fresh bpffs over /sys/fs/bpf, which hides
# every pin made before it (seen here: three stacked mounts), and a restart
# of fastwalld would then find nothing to adopt
PINS=$RUN/bpffs
TMP=$RUN/tmp
CPU=$(( $(nproc) - 1 ))
KSOFTIRQD=$(pgrep -x "ksoftirqd/$CPU" | head -1)
PIDS=()        # long-lived helpers (tcprr servers), killed on exit
BG=()          # senders of the measurement in progress

cleanup() {
	local rc=$? p ns
	trap - EXIT INT TERM
	for p in "${BG[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	# fastwalld: started by us or, after a restart, by fwpeer replay
	for p in "$RUN"/*.pid; do
		if [[ -f $p ]]; then kill "$(cat "$p")" 2>/dev/null || true; fi
	done
	# a reap or an adoption in progress may take a second to finish
	for _ in $(seq 50); do
		local alive=0
		for p in "$RUN"/*.pid; do
			[[ -f $p ]] && kill -0 "$(cat "$p")" 2>/dev/null && alive=1
		done
		((alive)) || break
		sleep 0.1
	done
	for p in "$RUN"/*.pid; do
		if [[ -f $p ]]; then kill -9 "$(cat "$p")" 2>/dev/null || true; fi
	done
	for ns in $(ip netns list 2>/dev/null | awk -v p="$PFX-" 'index($1, p) == 1 { print $1 }'); do
		ip netns del "$ns" 2>/dev/null || true
	done
	mountpoint -q "$PINS" && umount -l "$PINS"
	# fastwalld's logs stay with the results (they hold no secrets here)
	{ mkdir -p "$OUT" && cp "$RUN"/fastwalld-*.log "$OUT"/; } 2>/dev/null || true
	rm -rf "$RUN"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$PINS" "$TMP"
chmod 700 "$RUN"
mount -t bpf bpf "$PINS" || { log "bench-nft.sh: can't mount a bpffs on $PINS"; exit 1; }

log() { printf '%s\n' "$*" >&2; }

# tcp_server_start j: peer j's TCP echo server in its sink namespace (its
# pid in T_SRV[j]); tcp_server_wait j returns once it listens (it prints
# "listening" then), or ends the run with what the server said.
tcp_server_start() {
	local j=$1
	nsenter --net="/run/netns/$(ns_of "$j" sink)" taskset -c "$CPU" "$TCPRR" server \
		-l 203.0.113.70:5001 >"$TMP/srv-$j.out" 2>&1 &
	T_SRV[j]=$!
	PIDS+=("$!")
}
tcp_server_wait() {
	local j=$1
	for _ in $(seq 100); do grep -q listening "$TMP/srv-$j.out" 2>/dev/null && return 0; sleep 0.05; done
	log "bench-nft.sh: TCP server of ${T_LABEL[j]}: $(cat "$TMP/srv-$j.out")"
	exit 1
}
nsx() { ip netns exec "$1" "${@:2}"; }
now_ns() { date +%s%N; }
runtime_ns() { local a; read -r a _ <"/proc/$1/schedstat" 2>/dev/null && echo "$a" || echo 0; }
ip4() { echo "$(($1 >> 24 & 255)).$(($1 >> 16 & 255)).$(($1 >> 8 & 255)).$(($1 & 255))"; }
subject_ip() { ip4 $((0x0a400802 - $1 / 2 + $2)); }   # N index
# learned addresses per subject: all of them must fit fastwall's learned map
# (FW_MAX_LEARNED, 1,048,576 entries for all subjects together)
learned_for() { local n=$1; (( n * LEARNED < 1048576 )) && echo "$LEARNED" || echo $((1048576 / n - 1)); }

echo "fastwall vs nftables: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
echo "kernel $(uname -r), $(nft --version), $(date -u +%Y-%m-%dT%H:%MZ), FULL=$FULL"
# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"
bench_env "machine"
a0=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat); sleep 1
a1=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)
echo "background load: $(( (a1 - a0) * 100 / $(getconf CLK_TCK) / $(nproc) ))% of $(nproc) cores busy in the second before the run"

# ------------------------------------------------------------- rulesets --
# Learned addresses must outlive the run in every peer: nft's timeout sets drop
# expired elements (and stop fetching them), so the control-plane runs at the
# end would see fewer elements than the sets were loaded with. Two hours for
# the nft sets and fastwall's leases alike.
export FWNFT_TIMEOUT=${FWNFT_TIMEOUT:-7200s}
gen() { # style n rules [mode idx] -> file path (cached)
	local style=$1 n=$2 r=$3 f=$TMP/$1-$2-$3-${4:-full}-${5:-x}.nft
	if [[ ! -s $f ]]; then
		case $style in
		ctonly)
			printf '%s\n' "table inet fwct" "delete table inet fwct" "add table inet fwct" \
				"add chain inet fwct forward { type filter hook forward priority filter; policy accept; }" \
				"add rule inet fwct forward ct state established,related accept" >"$f" ;;
		reference) "$HERE/nft/reference.sh" "$n" "$r" "$(learned_for "$n")" "${@:4}" >"$f" ;;
		best) "$HERE/nft/best.sh" "$n" "$r" "$(learned_for "$n")" "${@:4}" >"$f" ;;
		esac
	fi
	echo "$f"
}

# ------------------------------------------------------------- topology --
# T_*[j]: one per peer topology
T_LABEL=() T_KIND=() T_N=() T_R=() T_NSB=() T_SB=() T_IDX=() T_SRV=() T_PIN=() T_SETUP=() T_ANCHOR=()
IFS=, read -ra SC <<<"$SCALES"
IFS=, read -ra RL <<<"$RULES_LIST"
IFS=, read -ra CS <<<"$CP_SCALES"
IFS=, read -ra KINDS <<<"${PEERS:-reference,best,fastwall}"
has_kind() { [[ " ${KINDS[*]} " == *" $1 "* ]]; }

has_topo() { local l; for l in "${T_LABEL[@]}"; do [[ $l == "$1" ]] && return 0; done; return 1; }
find_topo() { # label -> j
	local j
	for j in "${!T_LABEL[@]}"; do [[ ${T_LABEL[j]} == "$1" ]] && { echo "$j"; return 0; }; done
	return 1
}

add_topo() { # label kind n rules
	local j=${#T_LABEL[@]}
	T_LABEL[j]=$1 T_KIND[j]=$2 T_N[j]=$3 T_R[j]=$4
}
add_topo none none 1024 0
add_topo nft-ctonly ctonly 1024 0
[[ $TRIVIAL == 1 ]] && add_topo trivial trivial 1024 0
for r in "${RL[@]}"; do
	for n in "${SC[@]}"; do
		for kind in "${KINDS[@]}"; do
			l=$kind; [[ $kind != fastwall ]] && l=nft-$kind
			add_topo "$l-$n-$r" "$kind" "$n" "$r"
		done
	done
done
# control-plane scales not in the rate matrix get a pod of their own
for n in "${CS[@]}"; do
	for kind in "${KINDS[@]}"; do
		l=$kind; [[ $kind != fastwall ]] && l=nft-$kind
		has_topo "$l-$n-$CP_RULES" || add_topo "$l-$n-$CP_RULES" "$kind" "$n" "$CP_RULES"
	done
done
is_measured() { # j
	local n=${T_N[$1]} r=${T_R[$1]} k
	[[ ${T_KIND[$1]} == none || ${T_KIND[$1]} == ctonly || ${T_KIND[$1]} == trivial ]] && return 0
	for k in "${SC[@]}"; do [[ $k == "$n" ]] && { [[ ,$RULES_LIST, == *,$r,* ]] && return 0; }; done
	return 1
}

ns_of() { echo "$PFX-$1-$2"; }   # j name

# mk_topo j: namespaces, links, addresses, routes, sink, TCP server
mk_topo() {
	local j=$1 n=${T_N[$1]} nsb k pod sink sb idx addrs="" idxs=""
	nsb=$SANDBOXES; (( n < nsb )) && nsb=$n
	T_NSB[j]=$nsb
	pod=$(ns_of "$j" pod); sink=$(ns_of "$j" sink)
	for ((k = 0; k < nsb; k++)); do
		idx=$(( (2 * k + 1) * n / (2 * nsb) ))
		addrs+="${addrs:+,}$(subject_ip "$n" "$idx")"; idxs+="${idxs:+,}$idx"
	done
	T_SB[j]=$addrs T_IDX[j]=$idxs
	for ns in "$pod" "$sink" $(for ((k = 0; k < nsb; k++)); do ns_of "$j" "sb$k"; done); do
		ip netns add "$ns"
		nsx "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
			net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
		ip -n "$ns" link set lo up
	done
	{
		echo "link add br0 address 02:fb:00:00:00:01 type bridge mcast_snooping 0"
		echo "link add o0 address 02:fb:00:00:00:03 type veth peer name i0 netns $sink"
		echo "link add o1 address 02:fb:00:00:00:05 type veth peer name i1 netns $sink"
		echo "addr add 10.64.0.1/16 dev br0"
		echo "addr add 198.51.100.1/30 dev o0"
		echo "addr add 198.51.100.5/30 dev o1"
		echo "link set br0 up"; echo "link set o0 up"; echo "link set o1 up"
	} | ip -n "$pod" -batch -
	{
		echo "link set i0 address 02:fb:00:00:00:02"
		echo "link set i1 address 02:fb:00:00:00:06"
		echo "addr add 198.51.100.2/30 dev i0"
		echo "addr add 198.51.100.6/30 dev i1"
		echo "addr add 203.0.113.70/32 dev lo"
		echo "link set i0 up"; echo "link set i1 up"
		echo "route add 10.64.0.0/16 via 198.51.100.5 dev i1"
		echo "neigh replace 198.51.100.5 lladdr 02:fb:00:00:00:05 dev i1 nud permanent"
	} | ip -n "$sink" -batch -
	IFS=, read -ra A <<<"$addrs"
	for ((k = 0; k < nsb; k++)); do
		sb=$(ns_of "$j" "sb$k")
		ip -n "$sb" link add s0 address "02:fb:10:00:00:0$k" type veth peer name "p$k" netns "$pod"
		ip -n "$sb" addr add "${A[k]}/16" dev s0
		ip -n "$sb" link set s0 up
		ip -n "$sb" route add default via 10.64.0.1 dev s0
		ip -n "$sb" neigh replace 10.64.0.1 lladdr 02:fb:00:00:00:01 dev s0 nud permanent
		nsx "$sb" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
		ip -n "$pod" link set "p$k" master br0
		ip -n "$pod" link set "p$k" up
		ip -n "$pod" neigh replace "${A[k]}" lladdr "02:fb:10:00:00:0$k" dev br0 nud permanent
	done
	nsx "$pod" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.br0.rp_filter=0
	{
		echo "route add 203.0.113.0/24 via 198.51.100.2 dev o0"
		echo "route add 203.0.113.64/26 via 198.51.100.6 dev o1"
		echo "route add 198.51.100.64/26 via 198.51.100.2 dev o0"
		echo "neigh replace 198.51.100.2 lladdr 02:fb:00:00:00:02 dev o0 nud permanent"
		echo "neigh replace 198.51.100.6 lladdr 02:fb:00:00:00:06 dev o1 nud permanent"
	} | ip -n "$pod" -batch -
	# the UDP sink drops everything at TC ingress; its veth counts arrivals,
	# read through an anchor process living in the sink's namespace
	nsenter --net="/run/netns/$sink" "$BENCH" drop i0
	ip netns exec "$sink" sleep 1d &
	T_ANCHOR[j]=$!
	PIDS+=("$!")
	if is_measured "$j" && [[ ${SKIP_TCP:-0} != 1 ]]; then
		tcp_server_start "$j"
	fi
}

# load_peer j: the filter of peer j (not timed into any figure but setup)
start_fastwalld() { # j -> waits for "fastwalld ready"
	local j=$1 pod lg before
	pod=$(ns_of "$j" pod); lg=$RUN/fastwalld-$j.log
	before=$(grep -c 'fastwalld ready' "$lg" 2>/dev/null || true)
	nsenter --net="/run/netns/$pod" "$FWD" -c "$RUN/fastwalld-$j.yaml" run >>"$lg" 2>&1 &
	echo $! >"$RUN/fastwalld-$j.pid"
	for _ in $(seq 600); do
		[[ $(grep -c 'fastwalld ready' "$lg" 2>/dev/null || true) -gt ${before:-0} ]] && return 0
		kill -0 "$(cat "$RUN/fastwalld-$j.pid")" 2>/dev/null || break
		sleep 0.05
	done
	log "bench-nft.sh: fastwalld of ${T_LABEL[j]} did not start; its log:"
	sed 's/^/  | /' "$lg" >&2
	exit 1
}
veth_map() { # j -> "I=p0,I=p1,..." (the carried subjects' ports)
	local j=$1 k out="" 
	IFS=, read -ra I <<<"${T_IDX[j]}"
	for k in "${!I[@]}"; do out+="${out:+,}${I[k]}=p$k"; done
	echo "$out"
}
load_peer() {
	local j=$1 kind=${T_KIND[$1]} n=${T_N[$1]} r=${T_R[$1]} pod t0 t1 pin
	pod=$(ns_of "$j" pod)
	t0=$(now_ns)
	case $kind in
	none) ;;
	ctonly | reference | best) nsx "$pod" nft -f "$(gen "$kind" "$n" "$r")" ;;
	trivial)
		local ifs=() k
		for ((k = 0; k < T_NSB[j]; k++)); do ifs+=("p$k"); done
		nsenter --net="/run/netns/$pod" "$PEER" trivial -s "${T_SB[j]}" "${ifs[@]}" ;;
	fastwall)
		pin=$PINS/$j
		T_PIN[j]=$pin
		cat >"$RUN/fastwalld-$j.yaml" <<-EOF
			log_level: info
			datapath:
			  bpffs: $pin
			  bridges: [br0]
			actions:
			  listen: 127.0.0.1:18080
			  vault_socket: $RUN/vault-$j.sock
			  grace: 3600
			  bind_host_veth: true
		EOF
		start_fastwalld "$j"
		nsenter --net="/run/netns/$pod" "$PEER" setup -n "$n" -r "$r" -t 4 -H "$(veth_map "$j")" -d p0 \
			>"$TMP/setup-$j.out"
		"$PEER" learn-fill -b "$pin" -l "$(learned_for "$n")" >>"$TMP/setup-$j.out"
		;;
	esac
	t1=$(now_ns)
	T_SETUP[j]=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')
}

echo
echo "== setup: ${#T_LABEL[@]} peer topologies, $SANDBOXES sandboxes each (1 when N = 1) =="
for j in "${!T_LABEL[@]}"; do
	mk_topo "$j"
	load_peer "$j"
	extra=""
	[[ ${T_KIND[j]} == fastwall ]] && extra=" ($(sed -n 's/^bound [0-9]* subjects (\(.*\)) in \([0-9.]*\) s.*/\1: \2 s/p' "$TMP/setup-$j.out"); learned map filled)"
	if [[ ${T_R[j]} == 0 ]]; then
		printf '  %-26s %-35s set up in %6s s\n' "${T_LABEL[j]}" "(no subjects)" "${T_SETUP[j]}"
	else
		printf '  %-26s N=%-5s rules=%-4s learned=%-4s set up in %6s s%s\n' "${T_LABEL[j]}" "${T_N[j]}" \
			"${T_R[j]}" "$(learned_for "${T_N[j]}")" "${T_SETUP[j]}" "$extra"
	fi
	if [[ ${T_KIND[j]} == fastwall ]]; then
		awk -v l="${T_LABEL[j]}" -v n="${T_N[j]}" -v r="${T_R[j]}" \
			'/^bound/ { for (i = 1; i <= NF; i++) if ($i == "in") print "fastwall", n, r, "cold-setup", $(i + 1) * 1000 }' \
			"$TMP/setup-$j.out" >>"$OUT/cp.raw.setup"
	fi
done
[[ -f $OUT/cp.raw.setup ]] || : >"$OUT/cp.raw.setup"
[[ -n ${KSOFTIRQD:-} ]] || { log "bench-nft.sh: no ksoftirqd/$CPU"; exit 1; }
# wait for every TCP server
for j in "${!T_LABEL[@]}"; do
	[[ -n ${T_SRV[j]:-} ]] || continue
	tcp_server_wait "$j"
done

rx_packets() { awk '$1 == "i0:" { print $3 }' "/proc/${T_ANCHOR[$1]}/net/dev"; }

# ------------------------------------------------------------ 1. sanity --
probe() { # j dst dport src -> packets reaching the sink
	local r1 r2
	r1=$(rx_packets "$1")
	nsx "$(ns_of "$1" sb0)" "$BLAST" -d "$2" -P "$3" -s "$4" -k 1 -t 0.05 >/dev/null
	sleep 0.05
	r2=$(rx_packets "$1")
	echo $((r2 - r1))
}
echo
echo "== 1. sanity (packets from sandbox 0 reaching the sink in 0.05 s) =="
bad=0
for j in "${!T_LABEL[@]}"; do
	is_measured "$j" || continue
	src=${T_SB[j]%%,*}
	probe "$j" 203.0.113.10 9 "$src" >/dev/null   # warm-up: ports may just be up
	line=$(printf '%-26s' "${T_LABEL[j]}")
	for c in "allow 203.0.113.10 9 $src 1" "learned 198.51.100.77 9 $src 1" \
		"deny-cidr 203.0.113.130 9 $src 0" "default 203.0.113.200 9 $src 0" \
		"port-853 203.0.113.10 853 $src 0" "non-subj 203.0.113.10 9 10.64.200.2 0"; do
		read -r -a w <<<"$c"
		set -- "${w[@]}"
		p=$(probe "$j" "$2" "$3" "$4")
		want=$5
		case ${T_KIND[j]} in none | ctonly | trivial) want=1 ;; esac
		ok=ok
		if { [[ $want == 1 ]] && ((p == 0)); } || { [[ $want == 0 ]] && ((p != 0)); }; then ok=WRONG; bad=1; fi
		line+=$(printf ' %s=%s(%s)' "$1" "$p" "$ok")
	done
	echo "$line"
done
((bad == 0)) || log "bench-nft.sh: a peer gave a wrong verdict; its figures are not comparable"

# ------------------------------------------------- 2. interleaved rounds --
# measurement entries: label|topology|sandboxes sending
ENTRIES=()
for j in "${!T_LABEL[@]}"; do
	is_measured "$j" || continue
	ENTRIES+=("${T_LABEL[j]}|$j|${T_NSB[j]}")
	# N = 1 peers send from one sandbox: the no-filter baseline for them too
	[[ ${T_KIND[j]} == none ]] && ENTRIES+=("none-1sb|$j|1")
done
{
	echo "# label kind n rules learned sandboxes baseline"
	for e in "${ENTRIES[@]}"; do
		IFS='|' read -r label j nsb <<<"$e"
		base=none; ((nsb == 1 && SANDBOXES > 1)) && base=none-1sb
		echo "$label ${T_KIND[j]} ${T_N[j]} ${T_R[j]} $(learned_for "${T_N[j]}") $nsb $base"
	done
} >"$OUT/peers.txt"
: >"$OUT/udp.raw"
: >"$OUT/tcp.raw"
printf '%s\n' "full=$FULL" "rounds=$ROUNDS" "seconds_udp=$SECONDS_UDP" "seconds_tcp=$SECONDS_TCP" \
	"flows=$FLOWS" "sandboxes=$SANDBOXES" "tcp_conns=$TCP_CONNS" "crr_conc=$CRR_CONC" \
	"cp_rules=$CP_RULES" "cp_reps=$CP_REPS" "cp_reps_fw=$CP_REPS_FW" >"$OUT/meta.txt"

# snapshot PIDS... -> "cpu_ns rx_packets now_ns": CPU time of the senders and
# ksoftirqd, packets the sink's i0 received (from the anchor process's view of
# its namespace, /proc/PID/net/dev), one awk for all of it. A sender that is
# gone reads as "gone": the window was missed and the sample is dropped.
# The fourth field: busy and total jiffies of the other CPUs (/proc/stat),
# to see how much the neighbours ran meanwhile (on this VM a busy sibling
# vCPU slows the measured one down, whatever the CPU-time normalisation).
snapshot() { # anchor pid...
	local anchor=$1 p stats=()
	shift
	for p in "$@"; do stats+=("/proc/$p/schedstat"); done
	awk -v now="$(now_ns)" -v n=$# -v me="cpu$CPU" 'FILENAME ~ /schedstat$/ { cpu += $1; seen++; nextfile }
		FILENAME ~ /net\/dev$/ && $1 == "i0:" { rx = $3 }
		FILENAME == "/proc/stat" && $1 ~ /^cpu[0-9]/ && $1 != me {
			for (i = 2; i <= 9; i++) tot += $i; busy += $2 + $3 + $4 + $7 + $8 + $9 }
		END { if (seen < n) print "gone"; else printf "%.0f %.0f %.0f %.0f:%.0f\n", cpu, rx, now, busy, tot }' \
		"${stats[@]}" "/proc/$anchor/net/dev" /proc/stat 2>/dev/null || echo gone
}

measure_udp() { # label j nsb round
	local label=$1 j=$2 nsb=$3 round=$4 k s1 s2 p nss="" srcs=""
	IFS=, read -ra A <<<"${T_SB[j]}"
	for ((k = 0; k < nsb; k++)); do nss+="${nss:+,}$(ns_of "$j" "sb$k")"; srcs+="${srcs:+,}${A[k]}"; done
	# one sender for all sandboxes (taskset execs: $! is the sender itself)
	taskset -c "$CPU" "$FLOWS_BIN" -d 203.0.113.10 -P 9 -n "$nss" -s "$srcs" -f "$FLOWS" \
		-t "$(awk -v s="$SECONDS_UDP" 'BEGIN { print s + 3 }')" >/dev/null &
	BG=("$!")
	sleep 0.5
	s1=$(snapshot "${T_ANCHOR[j]}" "${BG[@]}" "$KSOFTIRQD")
	sleep "$SECONDS_UDP"
	s2=$(snapshot "${T_ANCHOR[j]}" "${BG[@]}" "$KSOFTIRQD")
	# the window is closed: stop the sender (it would run 3 s longer)
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null || true; done
	BG=()
	if [[ $s1 == gone || $s2 == gone ]]; then
		log "  $label round $round: a sender ended before the window closed (machine overloaded?); sample dropped"
		return 0
	fi
	# label round pps-per-core pps-wall cpu-share packets seq other-cpus-busy
	awk -v l="$label" -v r="$round" -v a="$s1" -v b="$s2" -v q="$SEQ" 'BEGIN {
		split(a, x, " "); split(b, y, " "); cpu = y[1] - x[1]; p = y[2] - x[2]; ns = y[3] - x[3]
		split(x[4], u, ":"); split(y[4], v, ":"); ob = v[2] > u[2] ? (v[1] - u[1]) / (v[2] - u[2]) : 0
		printf("%s %d %.0f %.0f %.3f %.0f %d %.3f\n", l, r, (cpu > 0 ? p * 1e9 / cpu : 0), p * 1e9 / ns,
			cpu / ns, p, q, ob) }' >>"$OUT/udp.raw"
}

measure_tcp() { # label j nsb round
	local label=$1 j=$2 nsb=$3 round=$4 k nss="" mode line
	for ((k = 0; k < nsb; k++)); do nss+="${nss:+,}$(ns_of "$j" "sb$k")"; done
	# a server that ended would cost every later sample of this peer:
	# say why, and start it again
	if ! kill -0 "${T_SRV[j]}" 2>/dev/null; then
		local st=0
		wait "${T_SRV[j]}" 2>/dev/null || st=$?
		log "bench-nft.sh: the TCP server of $label ended (exit $st; it said: $(tr '\n' ' ' <"$TMP/srv-$j.out")); started again"
		tcp_server_start "$j"
		tcp_server_wait "$j"
	fi
	for mode in rr crr; do
		local c=$TCP_CONNS
		[[ $mode == crr ]] && c=$CRR_CONC
		if ! line=$(taskset -c "$CPU" "$TCPRR" "$mode" -d 203.0.113.70:5001 -n "$nss" -c "$c" -w 0.3 \
			-t "$SECONDS_TCP" -p "${T_SRV[j]},$KSOFTIRQD" 2>"$TMP/tcprr.err"); then
			log "bench-nft.sh: tcprr $mode for $label failed: $(cat "$TMP/tcprr.err")"
			continue
		fi
		# label round mode n rate rate_per_core cpu_share p50 p90 p99 max errors seq
		awk -v l="$label" -v r="$round" -v q="$SEQ" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			print l, r, $1, v["n"], v["rate"], v["rate_per_core"], v["cpu_share"], v["p50_us"],
				v["p90_us"], v["p99_us"], v["max_us"], v["errors"], q }' <<<"$line" >>"$OUT/tcp.raw"
	done
}

# Every peer is compared with the no-filter baseline measured right before and
# right after it: peers run in chunks of CHUNK, each chunk bracketed by a
# baseline visit (N = 1 peers send from one sandbox and get the one-sandbox
# baseline). Chunks and the peers in them rotate from round to round.
CHUNK=${CHUNK:-3}
J_NONE=$(find_topo none)
ONE=() MANY=()
for e in "${ENTRIES[@]}"; do
	IFS='|' read -r label j nsb <<<"$e"
	[[ ${T_KIND[j]} == none ]] && continue
	if ((nsb == 1 && SANDBOXES > 1)); then ONE+=("$e"); else MANY+=("$e"); fi
done
SEQ=0
visit() { # label j nsb round
	SEQ=$((SEQ + 1))
	measure_udp "$@"
	[[ ${SKIP_TCP:-0} == 1 ]] || measure_tcp "$@"
}
echo
echo "== 2. interleaved rounds: ${#ENTRIES[@]} peers x $ROUNDS rounds (UDP ${SECONDS_UDP} s$([[ ${SKIP_TCP:-0} == 1 ]] || echo ", TCP rr ${SECONDS_TCP} s, TCP crr ${SECONDS_TCP} s") each), in chunks of $CHUNK between baseline runs, order rotated per round =="
for ((round = 1; round <= ROUNDS; round++)); do
	t0=$(now_ns)
	# chunks: "baseline-label|entry;entry;..." in rotated order
	CH=()
	for grp in ONE MANY; do
		declare -n G=$grp
		ng=${#G[@]}
		((ng)) || continue
		base=none; [[ $grp == ONE ]] && base=none-1sb
		rot=()
		for ((e = 0; e < ng; e++)); do rot+=("${G[$(((e + (round - 1) * 2) % ng))]}"); done
		for ((e = 0; e < ng; e += CHUNK)); do
			CH+=("$base|$(IFS=';'; echo "${rot[*]:e:CHUNK}")")
		done
		unset -n G
	done
	nc=${#CH[@]}
	last=
	for ((c = 0; c < nc; c++)); do
		chunk=${CH[$(((c + round - 1) % nc))]}
		base=${chunk%%|*}
		nb=$SANDBOXES; [[ $base == none-1sb ]] && nb=1
		[[ $last == "$base" ]] || visit "$base" "$J_NONE" "$nb" "$round"
		IFS=';' read -ra PE <<<"${chunk#*|}"
		for e in "${PE[@]}"; do
			IFS='|' read -r label j nsb <<<"$e"
			visit "$label" "$j" "$nsb" "$round"
		done
		visit "$base" "$J_NONE" "$nb" "$round"
		last=$base
	done
	log "  round $round/$ROUNDS done in $(( ($(now_ns) - t0) / 1000000000 )) s"
done

# -------------------------------------------------- profiles (PROFILE=1) --
rm -f "$OUT"/perf-* "$OUT"/strace-*
# perf (cpu-clock, the sender's CPU) while one peer carries the UDP load:
# where the time of a packet goes, by symbol; BPF programs show as
# bpf_prog_<tag>_<name> (net.core.bpf_jit_kallsyms).
profile_udp() { # label j nsb
	local label=$1 j=$2 nsb=$3 k nss="" srcs="" pid
	IFS=, read -ra A <<<"${T_SB[j]}"
	for ((k = 0; k < nsb; k++)); do nss+="${nss:+,}$(ns_of "$j" "sb$k")"; srcs+="${srcs:+,}${A[k]}"; done
	taskset -c "$CPU" "$FLOWS_BIN" -d 203.0.113.10 -P 9 -n "$nss" -s "$srcs" -f "$FLOWS" -t 6 >/dev/null &
	pid=$!
	BG=("$pid")
	sleep 0.5
	perf record -q -e cpu-clock -F 2999 -C "$CPU" -o "$OUT/perf-$label.data" -- sleep 3 >/dev/null 2>&1 || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	BG=()
	perf report -i "$OUT/perf-$label.data" --stdio --no-children --sort sym 2>/dev/null |
		awk '/^ +[0-9.]+%/ { sub("%", "", $1); print }' >"$OUT/perf-$label.txt" || true
	# groups: the BPF programs themselves; the map lookups and helpers they
	# call; the TC hook that runs them; netfilter and conntrack; the GC
	# worker of nftables timeout sets (it runs on this CPU for the tables of
	# every pod, whichever peer is measured)
	awk -v l="$label" '{ p = $1; s = $NF
			if (s ~ /^bpf_prog_/) prog += p
			else if (s ~ /^(trie_lookup_elem|htab_|__htab|lookup_nulls_elem_raw|bpf_|array_map_|percpu_array_|jhash)/) maps += p
			else if (s ~ /^(tc_run|tcf_classify|cls_bpf_classify|sch_handle_ingress|sch_handle_egress|tcx_run|__tcf_)/) hook += p
			else if (s == "nft_rhash_gc") gc += p
			else if (s ~ /^(nft_|nf_|__nf_|ipv4_conntrack|hash_conntrack|nf_ct|ipv4_confirm)/) nf += p
			if (n < 5) top = top sprintf(" %s %.1f%%;", s, p); n++ }
		END { printf "  %-23s BPF prog %4.1f%%  maps %4.1f%%  TC hook %4.1f%%  netfilter %4.1f%%  nft set GC %4.1f%%  top:%s\n",
			l, prog, maps, hook, nf, gc, top }' "$OUT/perf-$label.txt"
}
if [[ ${PROFILE:-0} == 1 ]] && command -v perf >/dev/null; then
	echo
	echo "== profiles: share of the sender CPU's samples during 3 s of UDP (perf, cpu-clock) =="
	big=${SC[${#SC[@]} - 1]}
	for l in none nft-ctonly "nft-reference-$big-${RL[0]}" "nft-best-$big-${RL[0]}" "fastwall-$big-${RL[0]}" trivial; do
		j=$(find_topo "$l") || continue
		profile_udp "$l" "$j" "${T_NSB[j]}"
	done
	echo "  (per-symbol self time: $OUT/perf-*.txt)"
fi

# ------------------------------------------------------- 3. control plane --
CP=$OUT/cp.raw
cp "$OUT/cp.raw.setup" "$CP"
rm -f "$OUT/cp.raw.setup"
timed_nft() { # pod file -> ms (one `ip netns exec POD nft -f FILE`, process start included)
	local t0 t1
	t0=$(now_ns)
	nsx "$1" nft -f "$2"
	t1=$(now_ns)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e6 }'
}
cp_nft() { # style n
	local style=$1 n=$2 j pod T k a_i u_i r_i x_r ip_r f
	j=$(find_topo "nft-$style-$n-$CP_RULES"); pod=$(ns_of "$j" pod)
	T=fwref; [[ $style == best ]] && T=fwbest
	for ((k = 0; k < CP_REPS; k++)); do
		a_i=$((n + k)); u_i=$(((k * 74) % n)); r_i=$(((k * 74 + 37) % n))
		echo "add table inet $T" >"$TMP/noop.nft"
		echo "$style $n $CP_RULES noop $(timed_nft "$pod" "$TMP/noop.nft")" >>"$CP"
		echo "$style $n $CP_RULES add $(timed_nft "$pod" "$(gen "$style" "$n" "$CP_RULES" subject "$a_i")")" >>"$CP"
		echo "add element inet $T learned_$(printf '%08x' $((0x0a400802 - n / 2 + u_i))) { 198.18.0.$((k + 1)) timeout 300s }" >"$TMP/learn.nft"
		echo "$style $n $CP_RULES learn $(timed_nft "$pod" "$TMP/learn.nft")" >>"$CP"
		echo "$style $n $CP_RULES update $(timed_nft "$pod" "$(gen "$style" "$n" "$CP_RULES" swap "$u_i")")" >>"$CP"
		if [[ $style == reference ]]; then
			# the reference removes a subject by rebuilding the table without it
			f=$(gen reference "$n" "$CP_RULES" without "$r_i")
		else
			x_r=$(printf '%08x' $((0x0a400802 - n / 2 + r_i))); ip_r=$(subject_ip "$n" "$r_i")
			f=$TMP/best-rm-$n-$r_i.nft
			printf '%s\n' "delete element inet $T subjects { $ip_r }" "delete chain inet $T s_$x_r" \
				"delete set inet $T deny_$x_r" "delete set inet $T allow_$x_r" \
				"delete set inet $T learned_$x_r" >"$f"
		fi
		echo "$style $n $CP_RULES remove $(timed_nft "$pod" "$f")" >>"$CP"
	done
	# restart: the whole table built again from the controller's state
	for ((k = 0; k < CP_REPS; k++)); do
		echo "$style $n $CP_RULES rebuild $(timed_nft "$pod" "$(gen "$style" "$n" "$CP_RULES")")" >>"$CP"
	done
}
cp_fastwall() { # n
	local n=$1 j pod pin pidf k out mid
	j=$(find_topo "fastwall-$n-$CP_RULES"); pod=$(ns_of "$j" pod); pin=${T_PIN[j]}
	pidf=$RUN/fastwalld-$j.pid
	out=$("$PEER" learn-count -b "$pin") || { log "bench-nft.sh: the pins of fastwall-$n are gone ($pin)"; exit 1; }
	echo "fastwall $n $CP_RULES learned-entries $out" >>"$CP"
	# restart: SIGTERM, start again (fwpeer forks it and times from there),
	# status ready, replay every SET_BINDING + data-plane-ready
	for ((k = 0; k < CP_REPS; k++)); do
		kill -TERM "$(cat "$pidf")"
		for _ in $(seq 200); do kill -0 "$(cat "$pidf")" 2>/dev/null || break; sleep 0.05; done
		if kill -0 "$(cat "$pidf")" 2>/dev/null; then log "bench-nft.sh: fastwalld ignored SIGTERM"; exit 1; fi
		out=$(nsenter --net="/run/netns/$pod" "$PEER" replay -n "$n" -r "$CP_RULES" -t 4 \
			-H "$(veth_map "$j")" -d p0 -L "$RUN/fastwalld-$j.log" -P "$pidf" -- \
			"$FWD" -c "$RUN/fastwalld-$j.yaml" run)
		awk -v n="$n" -v r="$CP_RULES" '/^restart/ { for (i = 2; i <= NF; i++) { split($i, kv, "=")
			if (kv[1] == "start_to_ready_ms") print "fastwall", n, r, "restart-ready", kv[2]
			if (kv[1] == "start_to_replayed_ms") print "fastwall", n, r, "rebuild", kv[2] } }' <<<"$out" >>"$CP"
	done
	# the learned table fills in the background after ready: measure the
	# operations once it is full, as they are in steady state
	for _ in $(seq 600); do
		(( $(grep -c 'adopted [0-9]* learned' "$RUN/fastwalld-$j.log" || true) >=
			$(grep -c 'fastwalld ready' "$RUN/fastwalld-$j.log" || true) )) && break
		sleep 0.1
	done
	mid=${T_SB[j]%%,*}
	"$PEER" learn-time -b "$pin" -s "$mid" -k $((CP_REPS_FW * 10)) |
		awk -v n="$n" -v r="$CP_RULES" '/^op/ { for (i = 3; i <= NF; i++) print "fastwall", n, r, $2, $i }' >>"$CP"
	out=$("$PEER" learn-count -b "$pin") || { log "bench-nft.sh: the pins of fastwall-$n are gone ($pin)"; exit 1; }
	echo "fastwall $n $CP_RULES learned-entries-after-restart $out" >>"$CP"
	nsenter --net="/run/netns/$pod" "$PEER" ops -n "$n" -r "$CP_RULES" -k "$CP_REPS_FW" -d p0 |
		awk -v n="$n" -v r="$CP_RULES" '/^op/ { for (i = 3; i <= NF; i++) print "fastwall", n, r, $2, $i }' >>"$CP"
	if [[ ${PROFILE:-0} == 1 && $n == "${CS[${#CS[@]} - 1]}" ]] && command -v strace >/dev/null; then
		# which system calls the operations cost fastwalld (counts and time)
		local dp sp
		dp=$(cat "$pidf")
		strace -f -c -w -p "$dp" -o "$OUT/strace-fastwalld-$n.txt" 2>/dev/null &
		sp=$!
		sleep 0.5
		nsenter --net="/run/netns/$pod" "$PEER" ops -n "$n" -r "$CP_RULES" -k 1 -o 1000 -d p0 >/dev/null
		kill -INT "$sp" 2>/dev/null || true
		wait "$sp" 2>/dev/null || true
		perf record -q -e cpu-clock -F 2999 -g -p "$dp" -o "$OUT/perf-fastwalld-$n.data" -- sleep 4 \
			>/dev/null 2>&1 &
		sp=$!
		sleep 0.3
		nsenter --net="/run/netns/$pod" "$PEER" ops -n "$n" -r "$CP_RULES" -k 3 -o 2000 -d p0 >/dev/null
		wait "$sp" 2>/dev/null || true
		perf report -i "$OUT/perf-fastwalld-$n.data" --stdio --no-children --sort sym -g none 2>/dev/null |
			awk '/^ +[0-9.]+%/' | head -25 >"$OUT/perf-fastwalld-$n.txt" || true
	fi
}
if [[ ${SKIP_CP:-0} != 1 ]]; then
	echo
	echo "== 3. control plane, N subjects present ($CP_RULES rules each; nft: $CP_REPS repetitions, fastwall: $CP_REPS_FW) =="
	for n in "${CS[@]}"; do
		t0=$(now_ns)
		# interleaved per scale: the peers of one N back to back
		! has_kind fastwall || cp_fastwall "$n"
		! has_kind best || cp_nft best "$n"
		! has_kind reference || cp_nft reference "$n"
		log "  N=$n done in $(( ($(now_ns) - t0) / 1000000000 )) s"
	done
	for f in "$OUT"/strace-fastwalld-*.txt; do
		[[ -f $f ]] || continue
		n=${f##*-}; n=${n%.txt}
		echo
		echo "fastwalld system calls during one add + update + remove, N=$n (strace -c -w, $f):"
		sed -n '1,12p' "$f" | sed 's/^/  /'
		echo "fastwalld CPU during 3 x (add + update + remove), N=$n (perf, self time):"
		sed -n '1,12p' "$OUT/perf-fastwalld-$n.txt" 2>/dev/null | sed 's/^/  /'
	done
else
	mv "$CP" "$CP.skipped"
fi

echo
python3 "$REPORT" "$OUT" all
