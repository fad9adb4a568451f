#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the data plane in the bridge topology of a Fastlet pod as it
# runs in production: net.bridge.bridge-nf-call-iptables (and ip6tables)
# 1 in the pod's namespace, so that IP frames crossing br0 also go through
# netfilter's IP hooks (br_netfilter; the sysctl is per namespace on Linux
# 5.3 and later, and only the pod namespace's is set here), conntrack on,
# and the sandboxes' traffic masqueraded to the uplink's address by
# nftables. The internet namespace has no route back to 10.42.0.0/24, so
# an allowed connection completes only through the masquerade. The
# verdicts (allow CIDR, deny CIDR, default deny, siblings, DNS over TLS)
# and DNS learning (a name allowed: answered through the proxy and its
# address learned and reachable; a name denied: NXDOMAIN) are those of
# the plain topology, counted under the same reasons. nftables rules go
# only into the test's own pod namespace.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v nft >/dev/null || fw_die "nft not found (apt-get install nftables)"
command -v dig >/dev/null || fw_die "dig not found (apt-get install bind9-dnsutils)"

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
UP4=198.51.100.53

fw_topology
# br_netfilter: the namespace's net.bridge.* sysctls exist once it is
# there (built in, or the module)
if ! fw_ns "$NS_POD" test -e /proc/sys/net/bridge/bridge-nf-call-iptables; then
	modprobe br_netfilter 2>/dev/null || true
	fw_ns "$NS_POD" test -e /proc/sys/net/bridge/bridge-nf-call-iptables || {
		echo "skip: no br_netfilter (built in or module) on this kernel"
		exit 77
	}
fi
fw_ns "$NS_POD" sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
fw_sandbox a 2
fw_sandbox b 3
# two plain hosts on br0 that fastwall does not attach to: the bridged
# traffic between them shows br_netfilter at work in the IP forward hook
for x in x y; do
	ns=$(fw_sb_ns "$x")
	fw_netns_add "$ns"
	n=$([ "$x" = x ] && echo 50 || echo 51)
	ip -n "$NS_POD" link add "ob-$x" type veth peer name eth0 netns "$ns"
	ip -n "$ns" addr add "10.42.0.$n/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$NS_POD" link set "ob-$x" master br0
	ip -n "$NS_POD" link set "ob-$x" up
done
fw_serve_internet
fw_resolver $UP4 api.example.com,203.0.113.10,30 bad.example.com,198.51.100.66,30
# no way back to the pod's addresses but the masquerade
ip -n "$NS_INET" route del 10.42.0.0/24

fw_ns "$NS_POD" nft -f - <<'EOF'
table ip fwtest {
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "br0" oifname "br0" counter
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "up0" ip saddr 10.42.0.0/24 counter masquerade
	}
}
EOF

cat >"$FW_CFG" <<EOF
log_level: info
dns:
  upstreams: [$UP4]
datapath:
  bpffs: $BPFFS
  interfaces: ["sb-*"]
subjects:
$(fw_subject_yaml a 2 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: deny, target: 198.51.100.66 }
        - { action: allow, target: api.example.com }
$(fw_subject_yaml b 3 v4)
    policy:
      defaultAction: allow
      egress:
        - { action: deny, target: 203.0.113.0/24 }
EOF
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-b' 1 5 || true

# grew REASON CMD...: CMD ran and the counter of REASON grew
grew() {
	local r=$1 before
	shift
	before=$(fw_counter "$r")
	"$@" >/dev/null 2>&1 || true
	[ "$(fw_counter "$r")" -gt "$before" ]
}
nft_counter() { # CHAIN: the packets of the chain's counter rule
	fw_ns "$NS_POD" nft list chain ip fwtest "$1" | grep -oE 'counter packets [0-9]+' | grep -oE '[0-9]+$'
}

echo "# the topology"
check_eq "bridge-nf-call-iptables is 1 in the pod namespace" \
	"$(fw_ns "$NS_POD" sysctl -n net.bridge.bridge-nf-call-iptables)" 1
check "bridged traffic between two ports passes the IP forward hook (br_netfilter)" \
	fw_icmp "$(fw_sb_ns x)" 10.42.0.51 1
check_ge "  its forward-hook counter" "$(nft_counter forward)" 1

echo "# verdicts, through the masquerade"
check "sandbox-a -> 198.51.100.10:80 passes (allow-cidr)" \
	grew "pass allow-cidr" fw_http "$SB_A" http://198.51.100.10/ 2
check "  and completes (only the masquerade brings the answer back)" fw_http "$SB_A" http://198.51.100.10/ 2
check_ge "  the masquerade's counter" "$(nft_counter postrouting)" 1
check "sandbox-a -> 198.51.100.66:80 drops (deny-cidr)" grew "drop deny-cidr" fw_http "$SB_A" http://198.51.100.66/ 1
check_fails "  and does not complete" fw_http "$SB_A" http://198.51.100.66/ 1
check "sandbox-a -> 203.0.113.10:80 drops before the name is resolved (default-deny)" \
	grew "drop default-deny" fw_http "$SB_A" http://203.0.113.10/ 1
check "sandbox-b -> 198.51.100.66:80 passes (default-allow)" \
	grew "pass default-allow" fw_http "$SB_B" http://198.51.100.66/ 2
check "sandbox-b -> 203.0.113.10:80 drops (deny-cidr)" grew "drop deny-cidr" fw_http "$SB_B" http://203.0.113.10/ 1
check "sandbox-a -> sandbox-b, bridged: drops (sibling)" grew "drop sibling" fw_icmp "$SB_A" 10.42.0.3 1
check "sandbox-b -> 198.51.100.10:853 drops (dns-over-tls)" \
	grew "drop dns-over-tls" fw_http "$SB_B" http://198.51.100.10:853/ 1

echo "# DNS learning"
check "api.example.com through the gateway: answered 203.0.113.10" \
	bash -c "[ \"\$(nsenter --net=/run/netns/$SB_A dig +short +time=2 +tries=1 @10.42.0.1 api.example.com)\" = 203.0.113.10 ]"
check "the learned address is in fastwall leases" bash -c "'$FASTWALL' --bpffs '$BPFFS' leases | grep -q 203.0.113.10"
check "sandbox-a -> 203.0.113.10:80 passes now (learned)" grew "pass learned" fw_http "$SB_A" http://203.0.113.10/ 2
check "bad.example.com: NXDOMAIN" \
	bash -c "nsenter --net=/run/netns/$SB_A dig +time=2 +tries=1 @10.42.0.1 bad.example.com | grep -q 'status: NXDOMAIN'"
check "a query to the public resolver goes to the proxy too (NXDOMAIN for bad.example.com)" \
	bash -c "nsenter --net=/run/netns/$SB_A dig +time=2 +tries=1 @$UP4 bad.example.com | grep -q 'status: NXDOMAIN'"
check "no unknown-source drop: every sandbox packet was its subject's" \
	test "$(fw_counter 'drop unknown-source')" -eq 0

fw_summary
