# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh: the namespaces, the pod's bridge and uplink, the simulated
# internet and the sandboxes on the bridge (the picture at the top of lib.sh).

fw_netns_add() {
	ip netns add "$1" || fw_die "can't create namespace $1"
	FW_NSS+=("$1")
	ip -n "$1" link set lo up
	# no DAD: a tentative link-local address can't source neighbour
	# solicitations, which would lose the first packets for a second
	fw_ns "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
}

# The pod (bridge br0, uplink) and the simulated internet.
fw_topology() {
	fw_netns_add "$NS_POD"
	fw_netns_add "$NS_INET"

	# fixed MAC: a bridge otherwise takes its lowest port MAC, which
	# changes under the sandboxes' ARP caches when ports come and go
	ip -n "$NS_POD" link add br0 address 02:fa:57:00:00:01 type bridge mcast_snooping 0
	ip -n "$NS_POD" addr add 10.42.0.1/24 dev br0
	ip -n "$NS_POD" addr add fd00:42::1/64 dev br0 nodad
	ip -n "$NS_POD" link set br0 up

	ip -n "$NS_POD" link add up0 type veth peer name eth0 netns "$NS_INET"
	ip -n "$NS_POD" addr add 192.0.2.1/24 dev up0
	ip -n "$NS_POD" addr add 2001:db8:1::1/64 dev up0 nodad
	ip -n "$NS_POD" link set up0 up
	ip -n "$NS_POD" route add default via 192.0.2.254
	ip -n "$NS_POD" -6 route add default via 2001:db8:1::254
	fw_ns "$NS_POD" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1

	ip -n "$NS_INET" addr add 192.0.2.254/24 dev eth0
	ip -n "$NS_INET" addr add 2001:db8:1::254/64 dev eth0 nodad
	ip -n "$NS_INET" link set eth0 up
	# the internet's hosts sit on its loopback (no dummy driver needed)
	for a in 198.51.100.10/32 198.51.100.66/32 203.0.113.10/32; do
		ip -n "$NS_INET" addr add "$a" dev lo
	done
	for a in 2001:db8::10/128 2001:db8::66/128; do
		ip -n "$NS_INET" addr add "$a" dev lo nodad
	done
	ip -n "$NS_INET" route add 10.42.0.0/24 via 192.0.2.1
	ip -n "$NS_INET" -6 route add fd00:42::/64 via 2001:db8:1::1
}

# fw_sandbox LETTER N: namespace fwsb-ID-LETTER with 10.42.0.N and
# fd00:42::N, connected to br0 through the pod-side port sb-LETTER.
fw_sandbox() {
	local l=$1 n=$2 ns
	ns=$(fw_sb_ns "$l")
	fw_netns_add "$ns"
	ip -n "$NS_POD" link add "sb-$l" type veth peer name eth0 netns "$ns"
	ip -n "$ns" addr add "10.42.0.$n/24" dev eth0
	ip -n "$ns" addr add "fd00:42::$n/64" dev eth0 nodad
	# ARP from the primary address only, even for a spoofed source
	fw_ns "$ns" sysctl -qw net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.eth0.arp_announce=2
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via 10.42.0.1
	ip -n "$ns" -6 route add default via fd00:42::1
	ip -n "$NS_POD" link set "sb-$l" master br0
	ip -n "$NS_POD" link set "sb-$l" up
}
