#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The port guard under an untrusted flood: how many packets per second each
# way of refusing them drops, on one veth uplink, driven by the same sender.
#   xdp   fastwalld's guard, native XDP (mode: xdp)
#   tc    fastwalld's guard, TC ingress (mode: tc)
#   nft   an nftables netdev ingress chain on the uplink doing the same
#         (udp dport to the guarded port, source outside the trusted CIDR:
#         counter drop)
# A flood namespace sends small UDP datagrams (tests/bench/udpblast, one
# thread, a new source port each) from an untrusted address to a guarded
# port of the pod; each peer's drop counter over the run gives its drop
# rate, next to what the sender offered. Figures only: never fails on
# timing. DURATION (default 10) seconds per peer, ROUNDS (default 3)
# rounds in rotated order, SENDERS (default 1) sender processes. While
# every peer drops all the sender offers, the figures measure the sender:
# the comparison needs SENDERS high enough (and cores enough) that the
# dropped rate falls behind the offered one. Documentation ranges only, in namespaces it
# creates; the initial namespace is never touched.
#   BUILD=build scripts/bench-guard.sh         (after make all build/tests/udpblast)
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
SENDERS=${SENDERS:-1} # one sender thread saturates before any peer does: raise it on a big machine
BLAST=$FW_BUILD/tests/udpblast
NS_FLOOD=fwflood-$FW_ID
PORT=9443
[ -x "$BLAST" ] || fw_die "$BLAST missing: make $BUILD/tests/udpblast"
command -v nft >/dev/null || fw_die "nft not found"

fw_netns_add "$NS_POD"
fw_netns_add "$NS_FLOOD"
ip -n "$NS_FLOOD" link add eth0 type veth peer name gu0 netns "$NS_POD"
ip -n "$NS_POD" addr add 192.0.2.1/24 dev gu0
ip -n "$NS_POD" link set gu0 up
ip -n "$NS_FLOOD" addr add 192.0.2.20/24 dev eth0
ip -n "$NS_FLOOD" link set eth0 up
# the pod's neighbour entry, so the flood never waits on ARP
mac=$(ip -n "$NS_POD" -br link show gu0 | awk '{ print $3 }')
ip -n "$NS_FLOOD" neigh replace 192.0.2.1 lladdr "$mac" dev eth0 nud permanent

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

# flood: SENDERS senders at once; their packets per second together
flood() {
	local i
	for ((i = 0; i < SENDERS; i++)); do
		fw_ns "$NS_FLOOD" "$BLAST" -d 192.0.2.1 -P $PORT -s 192.0.2.20 -t "$DURATION" \
			>"$FW_TMP/flood.$i" &
	done
	wait
	sed -n 's/.*(\([0-9.]*\) pps.*/\1/p' "$FW_TMP"/flood.* | awk '{ n += $1 } END { printf "%.0f\n", n }'
	rm -f "$FW_TMP"/flood.*
}

nft_drops() {
	fw_ns "$NS_POD" nft -j list chain netdev fwguard in 2>/dev/null |
		grep -o '"packets": [0-9]*' | awk '{ n += $2 } END { print n + 0 }'
}

# measure PEER: "offered_pps dropped_pps"
measure() {
	local peer=$1 before after offered
	case $peer in
	xdp | tc)
		config "$peer"
		fw_start_daemon >/dev/null
		before=$(fw_counter "drop guard-untrusted")
		offered=$(flood)
		after=$(fw_counter "drop guard-untrusted")
		fw_stop_daemon
		fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach --purge >/dev/null 2>&1
		;;
	nft)
		fw_ns "$NS_POD" nft -f - <<EOF
table netdev fwguard {
	chain in {
		type filter hook ingress device gu0 priority -500;
		udp dport $PORT ip saddr != 192.0.2.8/29 counter drop
	}
}
EOF
		before=$(nft_drops)
		offered=$(flood)
		after=$(nft_drops)
		fw_ns "$NS_POD" nft delete table netdev fwguard
		;;
	esac
	echo "$offered $(((after - before) / DURATION))"
}

peers=(xdp tc nft)
printf '%-5s %-6s %14s %14s\n' peer round "offered pps" "dropped pps"
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < ${#peers[@]}; i++)); do
		p=${peers[$(((i + r) % ${#peers[@]}))]}
		out=$(measure "$p")
		read -r offered dropped <<<"$out"
		printf '%-5s %-6s %14s %14s\n' "$p" "$((r + 1))" "${offered%.*}" "$dropped"
	done
done
