#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# What a sandbox with a raw socket can do at the link layer, and must not:
# tunnel through the pod with neighbour discovery to a denied address,
# take the gateway's link-local address from its sibling with a neighbour
# advertisement, take its sibling's MAC so the bridge sends it the
# sibling's traffic, or name another MAC in ARP and ND. sandbox-b is the
# attacker; every attack is captured where it would arrive (the internet
# side, the sibling, the pod), and the legitimate sandboxes keep working:
# ND with the gateway, duplicate address detection, a link-local route,
# ping6 to an allowed address, a MAC given in the configuration.
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

L2=$FW_E2E_DIR/l2frames.py
SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)
GW_MAC=02:fa:57:00:00:01
GW_LL=fe80::fa:57ff:fe00:1 # br0's link-local address (EUI-64 of its MAC)
DENIED6=2001:db8:dead::2

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_serve_internet
# a route via the gateway's link-local address, as router advertisements
# would install it
ip -n "$SB_A" -6 route add 2001:db8::66/128 via "$GW_LL" dev eth0

cat >"$FW_CFG" <<EOF
log_level: debug
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 1000, burst: 1000 }
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: allow, target: "2001:db8::/64" }
$(fw_subject_yaml b 3)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: allow, target: "2001:db8::/64" }
        - { action: deny, target: "2001:db8:dead::/48" }
$(fw_subject_yaml c 4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: "2001:db8::/64" }
EOF
fw_start_daemon || fw_die "fastwalld did not start"

# sniff_start NS IFACE SECONDS OUT [FILTERS]: a sniffer, listening on return
SNIFF_PID=""
sniff_start() {
	local ns=$1 ifc=$2 secs=$3 out=$4 ready
	shift 4
	ready=$FW_TMP/sniff.$RANDOM$RANDOM
	nsenter --net="/run/netns/$ns" "$FW_PY" "$L2" sniff "$ifc" "$secs" --ready "$ready" \
		"$@" >"$out" 2>&1 &
	SNIFF_PID=$!
	FW_PIDS+=("$SNIFF_PID")
	for _ in $(seq 100); do
		[ -e "$ready" ] && return 0
		sleep 0.05
	done
	fw_die "sniffer in $ns did not start"
}
# sniff_wait: until the sniffer is done (not in a subshell: it is our child)
sniff_wait() { wait "$SNIFF_PID" 2>/dev/null || true; }
l2send() {
	local ns=$1
	shift
	fw_ns "$ns" "$FW_PY" "$L2" send eth0 "$@"
}
mac_of() { ip -n "$1" -br link show eth0 | awk '{ print $3 }'; }
AMAC=$(mac_of "$SB_A")
BMAC=$(mac_of "$SB_B")
# the pod's neighbours, the sibling's cache: who the entry points at
neigh_mac() { ip -n "$1" neigh show "$2" dev "$3" | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }'; }
fdb_port() { bridge -n "$NS_POD" fdb show br br0 | awk -v m="$1" '$1 == m && $2 == "dev" { print $3; exit }'; }

echo "# the legitimate sandboxes"
check "sandbox-a ping6 to an allowed address" fw_icmp "$SB_A" 2001:db8::10
check "sandbox-a resolved its gateway fd00:42::1 by ND" \
	bash -c "ip -n '$SB_A' neigh show fd00:42::1 | grep -q '$GW_MAC'"
check "sandbox-a reaches [2001:db8::66]:9000 via the gateway's link-local address" \
	fw_udp "$SB_A" 2001:db8::66 9000
check "sandbox-a resolved the gateway's link-local address" \
	bash -c "ip -n '$SB_A' neigh show '$GW_LL' | grep -q '$GW_MAC'"
check "sandbox-b ping6 to an allowed address" fw_icmp "$SB_B" 2001:db8::10
check "sandbox-b reaches 198.51.100.10:9000" fw_udp "$SB_B" 198.51.100.10 9000

echo "# neighbour discovery as a tunnel to a denied address"
out=$FW_TMP/inet-nd
sniff_start "$NS_INET" eth0 2.5 "$out" --marker FWTUNNEL
check "sandbox-b's echo to the denied $DENIED6 is dropped" \
	l2send "$SB_B" --dst-mac "$GW_MAC" echo6 fd00:42::3 "$DENIED6" FWTUNNEL-echo
for t in 133 135 136; do
	l2send "$SB_B" --dst-mac "$GW_MAC" nd "$t" fd00:42::3 "$DENIED6" --target fd00:42::3 \
		--payload "FWTUNNEL-$t"
done
# the same from a link-local source, and from an address nobody has
bll=$(ip -n "$SB_B" -6 addr show dev eth0 scope link | awk '/inet6/ { sub("/.*", "", $2); print $2; exit }')
for t in 133 135 136; do
	l2send "$SB_B" --dst-mac "$GW_MAC" nd "$t" "$bll" "$DENIED6" --target "$bll" \
		--payload "FWTUNNEL-ll-$t"
	l2send "$SB_B" --dst-mac "$GW_MAC" nd "$t" fd00:42::99 "$DENIED6" --target fe80::99 \
		--payload "FWTUNNEL-unbound-$t"
done
sniff_wait
check_eq "no RS/NS/NA (nor echo) from sandbox-b reached the internet side" "$(cat "$out")" 0
check_ge "sandbox-b's ND to a denied address counted" \
	"$(fw_subject_counter sandbox-b "drop nd-destination")" 3
# the sniffer does see what policy allows, marked the same way
out=$FW_TMP/inet-echo
sniff_start "$NS_INET" eth0 1.5 "$out" --marker FWTUNNEL
l2send "$SB_B" --dst-mac "$GW_MAC" echo6 fd00:42::3 2001:db8::10 FWTUNNEL-allowed
sniff_wait
check_eq "sandbox-b's raw echo to an allowed address arrives (the capture works)" \
	"$(cat "$out")" 1

echo "# the gateway's link-local address claimed by a neighbour advertisement"
sleep 1.2 # past any neighbour lock time
for src in "$bll" fd00:42::3; do
	l2send "$SB_B" --count 3 nd 136 "$src" ff02::1 --target "$GW_LL" --lladdr "$BMAC" --override
	l2send "$SB_B" --count 3 --dst-mac "$AMAC" nd 136 "$src" "fe80::1" --target "$GW_LL" \
		--lladdr "$BMAC" --override
done
sleep 0.2
check_eq "sandbox-a's entry for $GW_LL still has the gateway's MAC" \
	"$(neigh_mac "$SB_A" "$GW_LL" eth0)" "$GW_MAC"
check "sandbox-a still reaches [2001:db8::66]:9000 via $GW_LL" fw_udp "$SB_A" 2001:db8::66 9000
check_ge "sandbox-b's claims of the gateway's link-local address counted" \
	"$(fw_counter "drop spoofed-source")" 6
# a's own link-local address, claimed by b
all=$(ip -n "$SB_A" -6 addr show dev eth0 scope link | awk '/inet6/ { sub("/.*", "", $2); print $2; exit }')
fw_ns "$NS_POD" "$FW_PY" "$FW_PROBE" icmp "$all%br0" --timeout 1 >/dev/null 2>&1 || true
sleep 1.2
l2send "$SB_B" --count 3 nd 136 "$bll" ff02::1 --target "$all" --lladdr "$BMAC" --override
sleep 0.2
check_eq "the pod's entry for sandbox-a's link-local address still has sandbox-a's MAC" \
	"$(neigh_mac "$NS_POD" "$all" br0)" "$AMAC"

echo "# the sibling's MAC as Ethernet source"
fw_udp "$SB_A" 198.51.100.10 9000 >/dev/null || true
check_eq "the bridge has sandbox-a's MAC on sb-a" "$(fdb_port "$AMAC")" sb-a
out=$FW_TMP/b-sees-a
sniff_start "$SB_B" eth0 3.5 "$out" --dst-mac "$AMAC" --ipv4-dst 10.42.0.2
# sandbox-b keeps sending allowed traffic from its own address with
# sandbox-a's MAC while the pod sends sandbox-a 100 datagrams (to a closed
# port: sandbox-a answers with rate-limited port unreachables only, so it
# does not win its MAC back with every datagram)
l2send "$SB_B" --src-mac "$AMAC" --dst-mac "$GW_MAC" --count 200 --interval 0.01 \
	udp4 10.42.0.3 198.51.100.10 40000 9000 FWSTEAL &
spoof=$!
fw_ns "$NS_POD" "$FW_PY" -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(100):
    s.sendto(b"to-a-%d" % i, ("10.42.0.2", 7000))
    time.sleep(0.01)'
# while sandbox-b still sends
check_eq "the bridge still has sandbox-a's MAC on sb-a" "$(fdb_port "$AMAC")" sb-a
wait "$spoof" || true
sniff_wait
check_eq "sandbox-b received none of sandbox-a's datagrams" "$(cat "$out")" 0
check_ge "sandbox-b's frames with sandbox-a's MAC counted" \
	"$(fw_subject_counter sandbox-b "drop spoofed-mac")" 100
before=$(fw_subject_counter sandbox-b "drop spoofed-mac")
l2send "$SB_B" --src-mac 02:00:00:00:00:99 --dst-mac "$GW_MAC" udp4 10.42.0.3 198.51.100.10 40000 9000 x
check_eq "sandbox-b from a MAC no port has: dropped (its port is bound to its peer's MAC)" \
	"$(fw_subject_counter sandbox-b "drop spoofed-mac")" $((before + 1))
check "sandbox-a still reaches 198.51.100.10:9000" fw_udp "$SB_A" 198.51.100.10 9000

echo "# other MACs in ARP and ND"
fw_ns "$NS_POD" "$FW_PY" "$FW_PROBE" udp 10.42.0.3 9 --timeout 0.3 >/dev/null 2>&1 || true
fw_ns "$NS_POD" "$FW_PY" "$FW_PROBE" icmp fd00:42::3 --timeout 1 >/dev/null 2>&1 || true
sleep 1.2
l2send "$SB_B" --count 3 arp 2 "$AMAC" 10.42.0.3 ff:ff:ff:ff:ff:ff 10.42.0.1
l2send "$SB_B" --count 3 nd 136 fd00:42::3 ff02::1 --target fd00:42::3 --lladdr "$AMAC" --override
l2send "$SB_B" --count 3 nd 135 fd00:42::3 ff02::1:ff00:1 --target fd00:42::1 --lladdr "$AMAC"
sleep 0.2
check_eq "the pod's entry for 10.42.0.3 still has sandbox-b's own MAC" \
	"$(neigh_mac "$NS_POD" 10.42.0.3 br0)" "$BMAC"
check_eq "the pod's entry for fd00:42::3 still has sandbox-b's own MAC" \
	"$(neigh_mac "$NS_POD" fd00:42::3 br0)" "$BMAC"

echo "# a sandbox with duplicate address detection, added later, deleted, recreated"
add_sandbox_c() {
	fw_netns_add "$SB_C"
	fw_ns "$SB_C" sysctl -qw net.ipv6.conf.all.accept_dad=1 net.ipv6.conf.default.accept_dad=1
	ip -n "$NS_POD" link add sb-c type veth peer name eth0 netns "$SB_C"
	ip -n "$SB_C" addr add 10.42.0.4/24 dev eth0
	ip -n "$SB_C" addr add fd00:42::4/64 dev eth0
	ip -n "$SB_C" link set eth0 up
	ip -n "$SB_C" route add default via 10.42.0.1
	ip -n "$SB_C" -6 route add default via fd00:42::1
	ip -n "$NS_POD" link set sb-c master br0
	ip -n "$NS_POD" link set sb-c up
}
dad_done() { ! ip -n "$SB_C" -6 addr show dev eth0 | grep -qE 'tentative|dadfailed'; }
add_sandbox_c
fw_wait_log 'attached to sb-c' 1 5 || true
check "sandbox-c's addresses passed duplicate address detection" fw_eventually 5 dad_done
check "sandbox-c ping6 to an allowed address" fw_eventually 10 fw_icmp "$SB_C" 2001:db8::10 1
c_if=$(ip -n "$NS_POD" -o link show sb-c | awk -F': ' '{ print $1 }')
ip -n "$NS_POD" link del sb-c
fw_wait_log "interface sb-c \\(ifindex $c_if\\) is gone" 1 5 || true
l2port() { bpftool map dump pinned "$BPFFS/fastwall_l2_ports" -j 2>/dev/null | "$FW_PY" -c '
import json, sys
want = int(sys.argv[1])
print(sum(1 for e in json.load(sys.stdin) if int(e["key"][0], 0) | int(e["key"][1], 0) << 8 == want))' "$1"; }
check_eq "sb-c's link-layer binding is gone with it" "$(l2port "$c_if")" 0
ip netns del "$SB_C"
# as a platform recycling the addresses would: the pod forgets the old MAC
ip -n "$NS_POD" neigh flush to fd00:42::4 2>/dev/null || true
ip -n "$NS_POD" neigh flush to 10.42.0.4 2>/dev/null || true
sleep 0.3
add_sandbox_c
fw_wait_log 'attached to sb-c' 2 5 || true
check "sandbox-c recreated (a new MAC) passes duplicate address detection" fw_eventually 5 dad_done
# (the pod's cache may still hold the old MAC for fd00:42::4 until NUD)
check "sandbox-c recreated ping6 to an allowed address" fw_eventually 10 fw_icmp "$SB_C" 2001:db8::10 1

echo "# a MAC given in the configuration (a VM's, known to the platform)"
CMAC=02:00:00:00:0c:01
sed -i "s|^    interface: sb-c$|    interface: sb-c\n    mac: \"$CMAC\"|" "$FW_CFG"
before=$(fw_subject_counter sandbox-c "drop spoofed-mac")
fw_reload || true
check "the reload with mac: was applied" fw_wait_log 'reloaded ' 1 1
check_fails "sandbox-c from the MAC it had: dropped" fw_icmp "$SB_C" 2001:db8::10 1
check_ge "sandbox-c's frames from another MAC than its configured one counted" \
	"$(fw_subject_counter sandbox-c "drop spoofed-mac")" $((before + 1))
ip -n "$SB_C" link set eth0 address "$CMAC"
ip -n "$NS_POD" neigh flush to fd00:42::4 2>/dev/null || true
check "sandbox-c with its configured MAC ping6 to an allowed address" \
	fw_eventually 10 fw_icmp "$SB_C" 2001:db8::10 1
fw_summary
