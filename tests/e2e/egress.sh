#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: real TCP, UDP and ICMP traffic, IPv4 and IPv6, from sandbox
# namespaces through fastwall on the pod bridge to a simulated internet.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)
SB_D=$(fw_sb_ns d)

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4
fw_serve_internet
# the pod: DNS responder on the gateway, a service on tcp/8080 (open via
# local_ports) and one on tcp/22 (not open)
fw_serve "$NS_POD" --dns 10.42.0.1:53 --dns '[fd00:42::1]:53' \
	--http 10.42.0.1:8080 --http 10.42.0.1:22 --http '[fd00:42::1]:22' \
	--http 192.0.2.1:8081 --http '[2001:db8:1::1]:8081'
# services inside sandboxes, for pod-opened flows and sibling checks
fw_serve "$SB_A" --http 10.42.0.2:8080 --http '[fd00:42::2]:8080'
fw_serve "$SB_B" --http 10.42.0.3:8080 --http '[fd00:42::3]:8080' --udp 10.42.0.3:9000

# this suite checks the data plane with the DNS proxy off (the pod's own
# responder answers on :53, counted as dns-local); dns.sh covers the proxy
cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  local_ports: ["tcp/8080"]
  local_addresses: [198.51.100.88]
  events: { rate: 1000, burst: 1000 }
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: allow, target: "2001:db8::/64" }
        - { action: deny, target: 198.51.100.66 }
        - { action: deny, target: "2001:db8::66" }
$(fw_subject_yaml b 3)
    policy:
      defaultAction: allow
      egress:
        - { action: deny, target: 203.0.113.0/24 }
$(fw_subject_yaml c 4 v4)
    state: denying
    policy: { defaultAction: allow }
$(fw_subject_yaml d 5)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 203.0.113.10 }
EOF

fw_start_daemon || fw_die "fastwalld did not start"
check "fastwalld attached to the bridge ports" fw_wait_log 'attached to sb-c' 1 5

echo "# allow, deny, default"
check "tcp4 allowed: sandbox-a -> 198.51.100.10:80" fw_http "$SB_A" http://198.51.100.10/
check "tcp6 allowed: sandbox-a -> [2001:db8::10]:80" fw_http "$SB_A" 'http://[2001:db8::10]/'
check "udp4 allowed: sandbox-a -> 198.51.100.10:9000" fw_udp "$SB_A" 198.51.100.10 9000
check "udp6 allowed: sandbox-a -> [2001:db8::10]:9000" fw_udp "$SB_A" 2001:db8::10 9000
check "icmp4 allowed: sandbox-a -> 198.51.100.10" fw_icmp "$SB_A" 198.51.100.10
check "icmp6 allowed: sandbox-a -> 2001:db8::10" fw_icmp "$SB_A" 2001:db8::10

deny0=$(fw_subject_counter sandbox-a "drop deny-cidr")
check_fails "tcp4 deny beats allow: sandbox-a -> 198.51.100.66:80" fw_http "$SB_A" http://198.51.100.66/ 1
check_fails "tcp6 deny beats allow: sandbox-a -> [2001:db8::66]:80" fw_http "$SB_A" 'http://[2001:db8::66]/' 1
check_fails "udp4 deny beats allow: sandbox-a -> 198.51.100.66:9000" fw_udp "$SB_A" 198.51.100.66 9000 0.5
check_fails "udp6 deny beats allow: sandbox-a -> [2001:db8::66]:9000" fw_udp "$SB_A" 2001:db8::66 9000 0.5
check_ge "sandbox-a drop deny-cidr counted every denied packet" \
	"$(fw_subject_counter sandbox-a "drop deny-cidr")" $((deny0 + 4))

dd_total0=$(fw_counter "drop default-deny")
dd0=$(fw_subject_counter sandbox-a "drop default-deny")
check_fails "tcp4 default deny: sandbox-a -> 203.0.113.10:80" fw_http "$SB_A" http://203.0.113.10/ 1
dd1=$(fw_subject_counter sandbox-a "drop default-deny")
answered=0
for _ in 1 2 3; do
	if fw_udp "$SB_A" 203.0.113.10 9000 0.3; then answered=$((answered + 1)); fi
done
check_eq "udp4 default deny: 3 datagrams sandbox-a -> 203.0.113.10:9000, none answered" "$answered" 0
dd2=$(fw_subject_counter sandbox-a "drop default-deny")
check_ge "sandbox-a drop default-deny counted the TCP SYNs" "$((dd1 - dd0))" 1
check_eq "sandbox-a drop default-deny grew by exactly the 3 UDP datagrams" "$((dd2 - dd1))" 3
check_ge "fastwall status drop default-deny grew with them" \
	"$(fw_counter "drop default-deny")" $((dd_total0 + dd2 - dd0))

check "tcp4 default allow: sandbox-b -> 198.51.100.66:80" fw_http "$SB_B" http://198.51.100.66/
check "tcp6 default allow: sandbox-b -> [2001:db8::66]:80" fw_http "$SB_B" 'http://[2001:db8::66]/'
check "udp6 default allow: sandbox-b -> [2001:db8::66]:9000" fw_udp "$SB_B" 2001:db8::66 9000
check_fails "tcp4 deny CIDR under default allow: sandbox-b -> 203.0.113.10:80" \
	fw_http "$SB_B" http://203.0.113.10/ 1
check_ge "sandbox-b pass default-allow counted" "$(fw_subject_counter sandbox-b "pass default-allow")" 3
check_ge "sandbox-b drop deny-cidr counted" "$(fw_subject_counter sandbox-b "drop deny-cidr")" 1

echo "# global rules"
check "listener on 198.51.100.10:853 is up (from the pod)" \
	fw_http "$NS_POD" http://198.51.100.10:853/
check_fails "DoT tcp/853 dropped even to an allowed CIDR (sandbox-a)" \
	fw_http "$SB_A" http://198.51.100.10:853/ 1
check_fails "DoT udp/853 dropped even to an allowed CIDR (sandbox-a)" \
	fw_udp "$SB_A" 198.51.100.10 853 0.5
check_fails "DoT tcp/853 dropped under default allow (sandbox-b)" \
	fw_http "$SB_B" http://198.51.100.10:853/ 1
check_ge "drop dns-over-tls counted" "$(fw_counter "drop dns-over-tls")" 3

echo "# pod-local and siblings"
check "sandbox-b's service 10.42.0.3:8080 is up (from the pod)" fw_http "$NS_POD" http://10.42.0.3:8080/
check_fails "sibling tcp4: sandbox-a -> sandbox-b 10.42.0.3:8080" fw_http "$SB_A" http://10.42.0.3:8080/ 1
check_fails "sibling tcp6: sandbox-a -> sandbox-b [fd00:42::3]:8080" fw_http "$SB_A" 'http://[fd00:42::3]:8080/' 1
check_fails "sibling udp4: sandbox-a -> sandbox-b 10.42.0.3:9000" fw_udp "$SB_A" 10.42.0.3 9000 0.5
check_fails "sibling icmp4: sandbox-a -> sandbox-b" fw_icmp "$SB_A" 10.42.0.3 0.5
# tcp6 never gets that far: sandbox-b's neighbour advertisement to
# sandbox-a's global address is no ND to where ND goes, so sandbox-a can't
# resolve its sibling at all
check_ge "sandbox-a drop sibling counted" "$(fw_subject_counter sandbox-a "drop sibling")" 3
check_ge "sandbox-b's advertisement to its sibling dropped" \
	"$(fw_subject_counter sandbox-b "drop nd-destination")" 1

check "gateway listener on tcp/22 is up (from the pod)" fw_http "$NS_POD" http://10.42.0.1:22/
check_fails "gateway tcp4/22 blocked: sandbox-a -> 10.42.0.1:22" fw_http "$SB_A" http://10.42.0.1:22/ 1
check_fails "gateway tcp6/22 blocked: sandbox-a -> [fd00:42::1]:22" fw_http "$SB_A" 'http://[fd00:42::1]:22/' 1
check_ge "drop pod-local counted" "$(fw_subject_counter sandbox-a "drop pod-local")" 2
check "gateway tcp/8080 open by local_ports: sandbox-a -> 10.42.0.1:8080" \
	fw_http "$SB_A" http://10.42.0.1:8080/
check_ge "pass pod-local-allowed counted" "$(fw_counter "pass pod-local-allowed")" 1
dns0=$(fw_subject_counter sandbox-a "pass dns-local")
check "DNS udp4 to the gateway answered: sandbox-a -> 10.42.0.1:53" fw_dns "$SB_A" 10.42.0.1
check "DNS udp6 to the gateway answered: sandbox-a -> [fd00:42::1]:53" fw_dns "$SB_A" fd00:42::1
check_eq "sandbox-a pass dns-local grew by the 2 queries" \
	"$(($(fw_subject_counter sandbox-a "pass dns-local") - dns0))" 2

reply0=$(fw_counter "pass pod-reply")
check "pod-opened tcp4 into sandbox-a 10.42.0.2:8080 gets its reply" \
	fw_http "$NS_POD" http://10.42.0.2:8080/
check "pod-opened tcp6 into sandbox-a [fd00:42::2]:8080 gets its reply" \
	fw_http "$NS_POD" 'http://[fd00:42::2]:8080/'
check_ge "pass pod-reply counted the replies" "$(fw_counter "pass pod-reply")" $((reply0 + 4))

echo "# the pod's own addresses, learned from netlink"
check "pod service on the uplink 192.0.2.1:8081 is up (from the pod)" \
	fw_http "$NS_POD" http://192.0.2.1:8081/
pl0=$(fw_subject_counter sandbox-b "drop pod-local")
check_fails "uplink tcp4 blocked under default allow: sandbox-b -> 192.0.2.1:8081" \
	fw_http "$SB_B" http://192.0.2.1:8081/ 1
check_fails "uplink tcp6 blocked under default allow: sandbox-b -> [2001:db8:1::1]:8081" \
	fw_http "$SB_B" 'http://[2001:db8:1::1]:8081/' 1
check_ge "sandbox-b drop pod-local counted them" \
	"$(fw_subject_counter sandbox-b "drop pod-local")" $((pl0 + 2))
# raw frames: the sandbox's own stack would keep these to itself
frames() {
	fw_ns "$SB_B" "$FW_PY" "$FW_E2E_DIR/frames.py" send "$1" --src4 10.42.0.3 \
		--dst4 198.51.100.10 --src6 fd00:42::3 --dst6 2001:db8::10 --gw-mac 02:fa:57:00:00:01 \
		>/dev/null
}
pl0=$(fw_subject_counter sandbox-b "drop pod-local")
frames v4-loopback
frames v6-loopback
check_eq "udp to 127.0.0.1 and ::1 from sandbox-b: pod-local drops" \
	"$(($(fw_subject_counter sandbox-b "drop pod-local") - pl0))" 2
pl0=$(fw_subject_counter sandbox-b "drop pod-local")
frames v4-bcast
fw_udp "$SB_B" 192.0.2.255 9000 0.3 || true
check_eq "udp to 255.255.255.255 and the uplink's broadcast 192.0.2.255: pod-local drops" \
	"$(($(fw_subject_counter sandbox-b "drop pod-local") - pl0))" 2
pl0=$(fw_subject_counter sandbox-b "drop pod-local")
fw_udp "$SB_B" 2001:db8:1:: 9000 0.3 || true
fw_udp "$SB_B" 192.0.2.0 9000 0.3 || true
check_eq "udp to the uplink's subnet-router anycast 2001:db8:1:: and network 192.0.2.0: pod-local drops" \
	"$(($(fw_subject_counter sandbox-b "drop pod-local") - pl0))" 2

ip -n "$NS_POD" addr add 198.51.100.77/32 dev lo
check "an address added to the pod is learned" \
	fw_wait_log 'pod address 198.51.100.77 \(ifindex [0-9]+\) is pod-local' 1 5
fw_serve "$NS_POD" --http 198.51.100.77:8081
check "pod service on the new address 198.51.100.77:8081 is up (from the pod)" \
	fw_http "$NS_POD" http://198.51.100.77:8081/
check_fails "new pod address blocked: sandbox-b -> 198.51.100.77:8081" \
	fw_http "$SB_B" http://198.51.100.77:8081/ 1
ip -n "$NS_POD" addr del 198.51.100.77/32 dev lo
check "its removal is learned" fw_wait_log 'pod address 198.51.100.77 \(ifindex [0-9]+\) is gone' 1 5
da0=$(fw_subject_counter sandbox-b "pass default-allow")
fw_udp "$SB_B" 198.51.100.77 9000 0.3 || true
check_eq "a removed address is policy's again (sandbox-b default-allow)" \
	"$(($(fw_subject_counter sandbox-b "pass default-allow") - da0))" 1
# a configured local address survives its interface address coming and going
ip -n "$NS_POD" addr add 198.51.100.88/32 dev lo
check "a configured address on an interface is learned too" \
	fw_wait_log 'pod address 198.51.100.88 \(ifindex [0-9]+\) is pod-local' 1 5
ip -n "$NS_POD" addr del 198.51.100.88/32 dev lo
check "and its removal" fw_wait_log 'pod address 198.51.100.88 \(ifindex [0-9]+\) is gone' 1 5
pl0=$(fw_subject_counter sandbox-b "drop pod-local")
fw_udp "$SB_B" 198.51.100.88 9000 0.3 || true
check_eq "the configured local address is still pod-local after the churn" \
	"$(($(fw_subject_counter sandbox-b "drop pod-local") - pl0))" 1

echo "# subject states and source checks"
check_fails "denying subject: sandbox-c -> 198.51.100.10:80" fw_http "$SB_C" http://198.51.100.10/ 1
check_fails "denying subject: sandbox-c DNS to the gateway" fw_dns "$SB_C" 10.42.0.1 0.5
check_ge "sandbox-c drop denying counted" "$(fw_subject_counter sandbox-c "drop denying")" 2

# sandbox-b borrows sandbox-a's address (allowed to 198.51.100.0/24)
ip -n "$SB_B" addr add 10.42.0.2/32 dev eth0 noprefixroute
ip -n "$SB_B" addr add 10.42.0.99/32 dev eth0 noprefixroute
sp0=$(fw_subject_counter sandbox-a "drop spoofed-source")
check_fails "spoofed source: sandbox-b as 10.42.0.2 -> 198.51.100.10:80" \
	fw_http "$SB_B" http://198.51.100.10/ 1 --interface 10.42.0.2
check_fails "spoofed source udp: sandbox-b as 10.42.0.2 -> 198.51.100.10:9000" \
	fw_udp "$SB_B" 198.51.100.10 9000 0.5 --src 10.42.0.2
check_ge "spoofed packets counted against sandbox-a as spoofed-source" \
	"$(fw_subject_counter sandbox-a "drop spoofed-source")" $((sp0 + 2))
check "control: sandbox-b's own datagram to 198.51.100.10:9001 arrives" \
	fw_udp "$SB_B" 198.51.100.10 9001
fw_udp "$SB_B" 198.51.100.10 9001 0.5 --src 10.42.0.2 || true
fw_udp "$SB_B" 198.51.100.10 9001 0.5 --src 10.42.0.99 || true
check_fails "spoofed datagrams from sandbox-b as 10.42.0.2 never reached the internet" \
	grep -q '^10.42.0.2 ' "$FW_INET_SEEN"
check_fails "datagrams from unknown 10.42.0.99 never reached the internet" \
	grep -q '^10.42.0.99 ' "$FW_INET_SEEN"
check_fails "unknown source: sandbox-b as 10.42.0.99 -> 198.51.100.10:9000" \
	fw_udp "$SB_B" 198.51.100.10 9000 0.5 --src 10.42.0.99
check_ge "drop unknown-source counted" "$(fw_counter "drop unknown-source")" 1
ip -n "$SB_B" addr del 10.42.0.2/32 dev eth0
ip -n "$SB_B" addr del 10.42.0.99/32 dev eth0
ip -n "$NS_POD" neigh flush dev br0 2>/dev/null || true
check "sandbox-a still reaches 198.51.100.10 after the spoof attempt" \
	fw_http "$SB_A" http://198.51.100.10/

echo "# a bridge port added after fastwalld started"
fw_sandbox d 5
check "fastwalld attached the new port sb-d" fw_wait_log 'attached to sb-d' 1 5
check "new port: sandbox-d -> 203.0.113.10:80 allowed" fw_http "$SB_D" http://203.0.113.10/
check "new port: sandbox-d udp -> 203.0.113.10:9000 allowed" fw_udp "$SB_D" 203.0.113.10 9000
check_fails "new port: sandbox-d -> 198.51.100.10:80 default deny" fw_http "$SB_D" http://198.51.100.10/ 1
check_fails "new port: sandbox-d udp6 -> [2001:db8::10]:9000 default deny" \
	fw_udp "$SB_D" 2001:db8::10 9000 0.5
check_ge "sandbox-d pass allow-cidr counted" "$(fw_subject_counter sandbox-d "pass allow-cidr")" 2
check_ge "sandbox-d drop default-deny counted" "$(fw_subject_counter sandbox-d "drop default-deny")" 2

echo "# CLI"
subjects=$(fw_cli subjects)
for s in "sandbox-a active sb-a" "sandbox-b active sb-b" "sandbox-c denying sb-c" "sandbox-d active sb-d"; do
	read -r -a w <<<"$s"
	set -- "${w[@]}"
	# shellcheck disable=SC2016 # an awk program: its $N are awk's fields
	check "fastwall subjects lists $1 as $2 on $3" \
		awk -v n="$1" -v st="$2" -v i="$3" '$2 == n && $3 == st && $4 == i { f = 1 } END { exit !f }' <<<"$subjects"
done
status=$(fw_cli status)
check "fastwall status lists all four ports as attached" \
	grep -qE '^attached: +(.* )?sb-a .*sb-b .*sb-c .*sb-d' <<<"$(printf '%s\n' "$status" | sed 's/$/ /')"
# shellcheck disable=SC2016 # an awk program: its $N are awk's fields
check "fastwall status total passed > 0" awk '/^total passed/ { exit !($3 > 0) }' <<<"$status"

echo "# deny events in the daemon log"
ev() { fw_wait_log "deny subject=$1 reason=$2 proto=$3 src=$4 sport=[0-9]+ dst=$5 dport=$6 if=$7" 1 3; }
check "event: sandbox-a default-deny tcp to 203.0.113.10:80 on sb-a" \
	ev sandbox-a default-deny tcp 10.42.0.2 203.0.113.10 80 sb-a
check "event: sandbox-a deny-cidr udp6 to 2001:db8::66:9000" \
	ev sandbox-a deny-cidr udp fd00:42::2 2001:db8::66 9000 sb-a
check "event: sandbox-a dns-over-tls tcp to 198.51.100.10:853" \
	ev sandbox-a dns-over-tls tcp 10.42.0.2 198.51.100.10 853 sb-a
check "event: sandbox-a sibling tcp to 10.42.0.3:8080" \
	ev sandbox-a sibling tcp 10.42.0.2 10.42.0.3 8080 sb-a
check "event: sandbox-a pod-local tcp to 10.42.0.1:22" \
	ev sandbox-a pod-local tcp 10.42.0.2 10.42.0.1 22 sb-a
check "event: sandbox-c denying" ev sandbox-c denying tcp 10.42.0.4 198.51.100.10 80 sb-c
check "event: spoofed-source charged to sandbox-a, seen on sb-b" \
	ev sandbox-a spoofed-source tcp 10.42.0.2 198.51.100.10 80 sb-b
check "event: unknown-source has no subject" ev - unknown-source udp 10.42.0.99 198.51.100.10 9000 sb-b
check "event: sandbox-d default-deny on the late port" \
	ev sandbox-d default-deny tcp 10.42.0.5 198.51.100.10 80 sb-d
check_fails "no deny events for allowed traffic (sandbox-b default-allow)" \
	grep -qE 'deny subject=sandbox-b reason=default-allow' "$FW_LOG"

echo "# more pod addresses than fastwall_local holds: fail closed"
check "before: sandbox-a -> 198.51.100.10:80 allowed" fw_http "$SB_A" http://198.51.100.10/
for i in $(seq 1 300); do printf 'addr add 2001:db8:ff::%x/128 dev lo nodad\n' "$i"; done >"$FW_TMP/addrs"
ip -n "$NS_POD" -batch "$FW_TMP/addrs"
check "fastwalld says the pod-local addresses are incomplete" \
	fw_wait_log 'pod-local addresses are incomplete' 1 10
pl0=$(fw_subject_counter sandbox-a "drop pod-local")
check_fails "meanwhile sandbox-a -> 198.51.100.10:80 drops" fw_http "$SB_A" http://198.51.100.10/ 1
check_ge "as pod-local" "$(fw_subject_counter sandbox-a "drop pod-local")" $((pl0 + 1))
check "DNS to the gateway still answered" fw_dns "$SB_A" 10.42.0.1
sed 's/^addr add/addr del/' "$FW_TMP/addrs" >"$FW_TMP/addrs-del"
ip -n "$NS_POD" -batch "$FW_TMP/addrs-del"
check "they fit again" fw_wait_log 'the pod-local addresses fit again' 1 10
check "after: sandbox-a -> 198.51.100.10:80 allowed again" fw_http "$SB_A" http://198.51.100.10/

echo "# an interface whose ifindex passes 65535"
SB_Z=$(fw_sb_ns z)
fw_netns_add "$SB_Z"
hi_port() {
	ip -n "$NS_POD" link add sb-z index 70000 type veth peer name eth0 netns "$SB_Z"
	ip -n "$NS_POD" link set sb-z master br0
	ip -n "$NS_POD" link set sb-z up
}
hi_port
check "fastwalld attached sb-z (ifindex 70000)" fw_wait_log 'attached to sb-z \(ifindex 70000\)' 1 5
for m in 1401 1402 1403; do ip -n "$NS_POD" link set sb-z mtu "$m"; done
check "tc filter on sb-z" bash -c "tc -n '$NS_POD' filter show dev sb-z ingress | grep -q 'name fw_from_sandbox'"
sleep 0.5
check_eq "sb-z attached once across its link events" "$(fw_log_count 'attached to sb-z ')" 1
ip -n "$NS_POD" link del sb-z
check "sb-z's removal is noticed" fw_wait_log 'interface sb-z \(ifindex 70000\) is gone' 1 5
hi_port
check "the same ifindex, new interface: attached again" \
	fw_wait_log 'attached to sb-z \(ifindex 70000\)' 2 5

fw_stop_daemon
fw_summary
