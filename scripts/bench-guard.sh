#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The port guard against the other ways of doing its job, on one topology:
# a flooder (192.0.2.20, untrusted) and a trusted client (192.0.2.10, in
# the trusted 192.0.2.8/29) reach the pod (192.0.2.1) through a bridge,
# over the pod's veth uplink gu0, where each form sits:
#   none      no program (the yardstick)
#   auto      fastwalld's guard as a default configuration gets it (mode:
#             auto; the summary says which hook that took: TC ingress on
#             this veth)
#   xdp       fastwalld's guard, native XDP (mode: xdp)
#   tc        fastwalld's guard, TC ingress (mode: tc)
#   nft-dev   nftables, a netdev ingress chain on gu0: a set of the
#             trusted prefixes, TCP/UDP to the guarded port from outside it
#             counted and dropped
#   nft-inet  nftables, the same rule in an inet prerouting chain at raw
#             priority (before conntrack)
# For each form, in rounds with the forms' order rotated:
#   pass   the trusted client alone: the rate the pod's receiver
#          (tests/bench/udpsink) gets, as a share of the same with no
#          program (the pass path's cost)
#   flood  the flooder alone (tests/bench/udpblast, small UDP to the
#          guarded port, a new source port each): drops counted where
#          they happen (the guard's guard-untrusted counter, the nft rule's
#          counter), per second and per busy second of the flooder's CPU,
#          which runs the sender and the whole receive path up to the drop
#   both   flood and trusted client at once: the trusted flow's rate
# Ratios between forms are paired: taken within a round (the forms of a
# round run back to back), then the median over rounds, so a load that
# comes and goes on a shared machine moves both sides of a ratio.
# Each sender is pinned to its CPU, the receiver to its own where there
# are enough (FLOOD_CPU, CLIENT_CPU, SINK_CPU). Figures only: never fails
# on timing; it fails when a form does not do the job (a flood packet
# reaching the receiver, or the trusted flow not reaching it). DURATION
# (2) seconds per phase, ROUNDS (3); the run refuses more than 170 s of
# phases. Documentation ranges only, in namespaces it creates.
# GUARD_NICS="FLOOD POD" runs it on two given interfaces joined by a wire
# instead of the bridge and veths (tests/vm/guard-nic.sh: two virtio-net
# NICs of a guest): FLOOD moves into the flooder's namespace, which
# sends the trusted flow too, POD into the pod's as gu0; both come back
# when the namespaces go.
#   BUILD=build scripts/bench-guard.sh   (after make all build/tests/udpblast build/tests/udpsink)
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

DURATION=${DURATION:-2}
ROUNDS=${ROUNDS:-3}
FORMS=${FORMS:-none auto xdp tc nft-dev nft-inet}
BLAST=$FW_BUILD/tests/udpblast
SINK=$FW_BUILD/tests/udpsink
NS_FLOOD=fwflood-$FW_ID NS_CLIENT=fwcli-$FW_ID NS_SW=fwsw-$FW_ID
PORT=9443 POD=192.0.2.1 TRUSTED=192.0.2.10 FLOODER=192.0.2.20
ncpu=$(nproc)
if [ "$ncpu" -ge 4 ]; then
	FLOOD_CPU=${FLOOD_CPU:-1} CLIENT_CPU=${CLIENT_CPU:-2} SINK_CPU=${SINK_CPU:-3}
else
	FLOOD_CPU=${FLOOD_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-$((ncpu - 1))} SINK_CPU=${SINK_CPU:-$((ncpu - 1))}
fi
for b in "$BLAST" "$SINK"; do
	[ -x "$b" ] || fw_die "$b missing: make $BUILD/tests/udpblast $BUILD/tests/udpsink"
done
command -v nft >/dev/null || fw_die "nft not found"
command -v taskset >/dev/null || fw_die "taskset not found"
read -ra forms <<<"$FORMS"
budget=$((ROUNDS * ${#forms[@]} * 3 * DURATION))
[ "$budget" -le 170 ] || fw_die "ROUNDS x forms x 3 phases x DURATION = ${budget}s: keep it under 170s"

# ---- topology ----------------------------------------------------------------
if [ -n "${GUARD_NICS:-}" ]; then
	read -r nic_flood nic_pod extra <<<"$GUARD_NICS"
	{ [ -n "$nic_pod" ] && [ -z "$extra" ]; } || fw_die "GUARD_NICS: two interfaces, the flooder's and the pod's"
	for n in "$nic_flood" "$nic_pod"; do
		ip link show dev "$n" >/dev/null 2>&1 || fw_die "GUARD_NICS: no interface $n"
	done
	# sysfs shows the initial namespace's devices: read it before the move
	nic_driver=$(readlink "/sys/class/net/$nic_pod/device/driver" 2>/dev/null || true)
	nic_driver=${nic_driver##*/}
	NS_CLIENT=$NS_FLOOD
	for ns in "$NS_POD" "$NS_FLOOD"; do fw_netns_add "$ns"; done
	ip link set dev "$nic_flood" netns "$NS_FLOOD" name eth0
	ip link set dev "$nic_pod" netns "$NS_POD" name gu0
	ip -n "$NS_FLOOD" addr add $TRUSTED/24 dev eth0
else
	for ns in "$NS_POD" "$NS_SW" "$NS_FLOOD" "$NS_CLIENT"; do fw_netns_add "$ns"; done
	ip -n "$NS_SW" link add br0 type bridge
	ip -n "$NS_SW" link set br0 up
	ip -n "$NS_SW" link add sw-pod type veth peer name gu0 netns "$NS_POD"
	ip -n "$NS_SW" link add sw-fl type veth peer name eth0 netns "$NS_FLOOD"
	ip -n "$NS_SW" link add sw-cl type veth peer name eth0 netns "$NS_CLIENT"
	for p in sw-pod sw-fl sw-cl; do
		ip -n "$NS_SW" link set "$p" master br0 up
	done
	ip -n "$NS_CLIENT" addr add $TRUSTED/24 dev eth0
	ip -n "$NS_CLIENT" link set eth0 up
fi
ip -n "$NS_POD" addr add $POD/24 dev gu0
ip -n "$NS_POD" link set gu0 up
ip -n "$NS_FLOOD" addr add $FLOODER/24 dev eth0
ip -n "$NS_FLOOD" link set eth0 up
# static neighbours: nobody waits on ARP, and the pod answers none
mac=$(ip -n "$NS_POD" -br link show gu0 | awk '{ print $3 }')
ip -n "$NS_FLOOD" neigh replace $POD lladdr "$mac" dev eth0 nud permanent
[ "$NS_CLIENT" = "$NS_FLOOD" ] || ip -n "$NS_CLIENT" neigh replace $POD lladdr "$mac" dev eth0 nud permanent

config() { # MODE
	cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  events: { rate: 0, burst: 1 }
dns:
  proxy: false
guard:
  interfaces: [gu0]
  ports: [$PORT]
  trusted: [192.0.2.8/29]
  mode: $1
EOF
}

nft_form() { # FAMILY HOOKLINE
	fw_ns "$NS_POD" nft -f - <<EOF
table $1 fwguard {
	set trusted4 { type ipv4_addr; flags interval; elements = { 192.0.2.8/29 } }
	set trusted6 { type ipv6_addr; flags interval; elements = { 2001:db8:1::10/124 } }
	chain in {
		$2
		th dport $PORT meta l4proto { tcp, udp } ip saddr != @trusted4 counter drop
		th dport $PORT meta l4proto { tcp, udp } ip6 saddr != @trusted6 counter drop
	}
}
EOF
}

# form_on FORM / form_off FORM: put the form on gu0 and take it off
form_on() {
	case $1 in
	none) ;;
	auto | xdp | tc)
		config "$1"
		fw_start_daemon >/dev/null
		fw_ns "$NS_POD" ip -d link show gu0 >"$FW_TMP/gu0" 2>&1
		fw_ns "$NS_POD" tc filter show dev gu0 ingress >>"$FW_TMP/gu0" 2>&1
		grep -q fw_guard "$FW_TMP/gu0" || fw_die "$1: the guard is not on gu0"
		if [ "$1" = xdp ] && ! grep -q 'prog/xdp' "$FW_TMP/gu0"; then
			fw_die "xdp: gu0 has no native XDP program"
		fi
		if [ "$1" = auto ]; then
			# the hook and the reason, as fastwall status gives them
			auto_hook=$(fw_cli status | sed -n 's/^guard: *gu0 (\(.*\))$/\1/p')
			[ -n "$auto_hook" ] || fw_die "auto: fastwall status names no hook on gu0"
		fi
		;;
	nft-dev) nft_form netdev "type filter hook ingress device gu0 priority -500;" ;;
	nft-inet) nft_form inet "type filter hook prerouting priority -300;" ;;
	esac
}
form_off() {
	case $1 in
	auto | xdp | tc)
		fw_stop_daemon
		fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach --purge >/dev/null 2>&1
		;;
	nft-*) fw_ns "$NS_POD" nft delete table "$( [ "$1" = nft-dev ] && echo netdev || echo inet)" fwguard ;;
	esac
}

# drops FORM: the packets the form dropped so far, counted where it drops
drops() {
	case $1 in
	auto | xdp | tc) fw_counter "drop guard-untrusted" ;;
	nft-*)
		fw_ns "$NS_POD" nft -j list table "$( [ "$1" = nft-dev ] && echo netdev || echo inet)" fwguard |
			grep -o '"packets": [0-9]*' | awk '{ n += $2 } END { print n + 0 }'
		;;
	*) echo 0 ;;
	esac
}

# busy CPU...: jiffies those CPUs (each counted once) spent not idle
busy() {
	awk -v l=" $* " '$1 ~ /^cpu[0-9]/ && index(l, " " substr($1, 4) " ") {
		n += $2 + $3 + $4 + $7 + $8 + $9 } END { print n + 0 }' /proc/stat
}
secs() { awk -v j="$1" -v h="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", j / h }'; }

# phase FORM PHASE: runs one phase; prints "offered dropped trusted_sent
# trusted_rx other_rx overflow flood_busy_s trusted_busy_s", the busy
# seconds those of the flooder's CPU and of the client's and receiver's
phase() {
	local form=$1 ph=$2 d0 d1 b0 b1 c0 c1 offered=0 sent=0 sink pids=()
	d0=$(drops "$form")
	fw_ns "$NS_POD" taskset -c "$SINK_CPU" "$SINK" -a $POD -P $PORT -T $TRUSTED \
		-t "$(awk -v d="$DURATION" 'BEGIN { print d + 0.6 }')" >"$FW_TMP/sink" &
	sink=$!
	# time for the receiver to bind (SINK_WAIT: longer under emulation)
	sleep "${SINK_WAIT:-0.2}"
	# the flooder's CPU, from the senders' start to their end
	b0=$(busy "$FLOOD_CPU")
	c0=$(busy "$CLIENT_CPU" "$SINK_CPU")
	if [ "$ph" != pass ]; then
		fw_ns "$NS_FLOOD" taskset -c "$FLOOD_CPU" "$BLAST" -d $POD -P $PORT -s $FLOODER \
			-t "$DURATION" >"$FW_TMP/flood" &
		pids+=($!)
	fi
	if [ "$ph" != flood ]; then
		fw_ns "$NS_CLIENT" taskset -c "$CLIENT_CPU" "$BLAST" -d $POD -P $PORT -s $TRUSTED \
			-t "$DURATION" >"$FW_TMP/client" &
		pids+=($!)
	fi
	wait "${pids[@]}"
	b1=$(busy "$FLOOD_CPU")
	c1=$(busy "$CLIENT_CPU" "$SINK_CPU")
	wait "$sink"
	d1=$(drops "$form")
	if [ "$ph" != pass ]; then
		offered=$(sed -n 's/^sent \([0-9]*\) packets.*/\1/p' "$FW_TMP/flood")
	fi
	if [ "$ph" != flood ]; then
		sent=$(sed -n 's/^sent \([0-9]*\) packets.*/\1/p' "$FW_TMP/client")
	fi
	read -r _ tr _ ot _ ov _ <"$FW_TMP/sink"
	echo "${offered:-0} $((d1 - d0)) ${sent:-0} $tr $ot $ov $(secs $((b1 - b0))) $(secs $((c1 - c0)))"
	rm -f "$FW_TMP/flood" "$FW_TMP/client" "$FW_TMP/sink"
}

declare -A drop_pps drop_core pass_pps pass_core both_pps
# per round, for paired ratios: [form,round]
declare -A r_drop_core r_pass_core r_kept
auto_hook=
bad=0
echo "# $(bench_env "bench-guard")"
echo "# CPUs: flooder $FLOOD_CPU, trusted client $CLIENT_CPU, receiver $SINK_CPU; $DURATION s per phase, $ROUNDS rounds"
printf '%-9s %-5s %-6s %10s %10s %10s %10s %10s %8s %7s %7s\n' form round phase "flood" "dropped" \
	"trust tx" "trust rx" "other rx" "overflow" "busy F" "busy T"
T0=$(date +%s)
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < ${#forms[@]}; i++)); do
		f=${forms[$(((i + r) % ${#forms[@]}))]}
		form_on "$f"
		for ph in pass flood both; do
			read -r offered dropped sent tr ot ov bs bt <<<"$(phase "$f" "$ph")"
			printf '%-9s %-5s %-6s %10s %10s %10s %10s %10s %8s %7s %7s\n' "$f" $((r + 1)) "$ph" \
				"$offered" "$dropped" "$sent" "$tr" "$ot" "$ov" "$bs" "$bt"
			case $ph in
			pass)
				v=$(awk -v n="$tr" -v b="$bt" 'BEGIN { printf "%.0f", (b > 0 ? n / b : 0) }')
				pass_pps[$f]+="$(awk -v n="$tr" -v d="$DURATION" 'BEGIN { printf "%.0f", n / d }') "
				pass_core[$f]+="$v "
				# shellcheck disable=SC2034 # read through paired's nameref
				r_pass_core[$f,$r]=$v
				;;
			flood)
				v=$(awk -v n="$dropped" -v b="$bs" 'BEGIN { printf "%.0f", (b > 0 ? n / b : 0) }')
				drop_pps[$f]+="$(awk -v n="$dropped" -v d="$DURATION" 'BEGIN { printf "%.0f", n / d }') "
				drop_core[$f]+="$v "
				# shellcheck disable=SC2034 # read through paired's nameref
				r_drop_core[$f,$r]=$v
				;;
			both)
				both_pps[$f]+="$(awk -v n="$tr" -v d="$DURATION" 'BEGIN { printf "%.0f", n / d }') "
				# this round's trusted rate under the flood against without it
				r_kept[$f,$r]=$(awk -v a="$tr" -v b="${last_pass_tr:-0}" \
					'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print 0 }')
				;;
			esac
			[ "$ph" = pass ] && last_pass_tr=$tr
			# the job: no flood packet reaches the receiver, the trusted flow does
			if [ "$f" != none ] && [ "$ph" != pass ] && [ "$ot" -gt 0 ]; then
				echo "bench-guard: $f let $ot flood packets reach the receiver" >&2
				bad=1
			fi
			if [ "$ph" != flood ] && [ "$tr" -eq 0 ]; then
				echo "bench-guard: $f: the trusted flow did not reach the receiver ($ph)" >&2
				bad=1
			fi
			if [ "$f" != none ] && [ "$ph" = flood ] && [ "$dropped" -lt "$offered" ]; then
				echo "# $f round $((r + 1)): $((offered - dropped)) of $offered sent were not counted as drops" \
					"(lost before the form: the uplink's queue)"
			fi
		done
		form_off "$f"
	done
done

med() { tr ' ' '\n' | { grep . || true; } | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
# paired ARRAY A B [SCALE]: the median over rounds of ARRAY[A,r] / ARRAY[B,r]
# (times SCALE, 1 unless given), "-" when a round lacks either
paired() {
	local -n arr=$1
	local a=$2 b=$3 scale=${4:-1} r x y out=
	for ((r = 0; r < ROUNDS; r++)); do
		x=${arr[$a,$r]:-} y=${arr[$b,$r]:-}
		if [ -z "$x" ] || [ -z "$y" ]; then
			echo -
			return
		fi
		out+="$(awk -v x="$x" -v y="$y" -v s="$scale" 'BEGIN { printf "%.4f", (y > 0 ? s * x / y : 0) }') "
	done
	med <<<"$out"
}
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "-") print "-"; else printf f, v }'; }
has() { [[ " ${forms[*]} " == *" $1 "* ]]; }
echo
echo "# medians over $ROUNDS rounds. drops/s/core: per busy second of the flooder's CPU;"
echo "# trusted/core: trusted packets received per busy second of the client's and receiver's CPUs;"
echo "# pass %: trusted/core against none's in the same round; kept %: the trusted rate under the"
echo "# flood against the same form's without it, in the same round (both paired, then the median)"
printf '%-9s %12s %14s %12s %14s %8s %14s %8s\n' form "drops/s" "drops/s/core" "trusted pps" \
	"trusted/core" "pass %" "trusted, flood" "kept %"
for f in "${forms[@]}"; do
	dp=$(med <<<"${drop_pps[$f]}") dc=$(med <<<"${drop_core[$f]}")
	pp=$(med <<<"${pass_pps[$f]}") pc=$(med <<<"${pass_core[$f]}") bp=$(med <<<"${both_pps[$f]}")
	kept=$(med <<<"$(for ((r = 0; r < ROUNDS; r++)); do printf '%s ' "${r_kept[$f,$r]:-0}"; done)")
	pass=-
	has none && pass=$(fmt "$(paired r_pass_core "$f" none 100)" %.1f)
	if [ "$f" = none ]; then dp=- dc=-; fi
	printf '%-9s %12s %14s %12s %14s %8s %14s %8s\n' "$f" "$dp" "$dc" "$pp" "$pc" \
		"$pass" "$bp" "$kept"
done
echo
[ -n "$auto_hook" ] && echo "auto (the default) on gu0, as fastwall status says it: $auto_hook"
for o in auto tc nft-dev nft-inet; do
	if ! has xdp || ! has "$o"; then continue; fi
	echo "xdp / $o, drops per core (paired): x$(fmt "$(paired r_drop_core xdp "$o")" %.2f)"
done
for o in xdp nft-dev nft-inet; do
	if ! has tc || ! has "$o"; then continue; fi
	echo "tc / $o, drops per core (paired): x$(fmt "$(paired r_drop_core tc "$o")" %.2f)"
done
if has auto && has tc && [[ $auto_hook == "TC ingress"* ]]; then
	echo "auto / tc, drops per core (paired; one hook here: the run's noise floor):" \
		"x$(fmt "$(paired r_drop_core auto tc)" %.2f)"
fi
echo "targets: on a driver whose XDP runs in place, xdp ahead of every form in drops per core;"
if [ -n "${GUARD_NICS:-}" ]; then
	echo "on these interfaces (driver ${nic_driver:-unknown}) auto takes the hook the line above names"
else
	echo "on this veth (native XDP copies each packet) auto takes TC ingress: pass % of auto >= 95,"
	echo "and kept % (the trusted flow under the flood) of auto at least that of every other form"
fi
echo "# $(bench_env "bench-guard") ; phases took $(($(date +%s) - T0)) s"
exit "$bad"
