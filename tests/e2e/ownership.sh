#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: who owns an address when a static subject of the config and
# a protocol binding both name it. The static configuration wins: a
# SET_BINDING for a static subject's address is 409 and changes nothing; a
# reload that gives a static subject a bound address takes it over (and
# the binding's vault is no longer served for it); a reload that removes
# that static subject gives the address back to the binding. Real traffic
# from the sandbox namespaces decides, not only the maps.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_act_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_serve_internet

# write_config [with-b]: the actions config plus static-a on 10.42.0.2
# (198.51.100.10 only) and, with-b, static-b on 10.42.0.3 (deny all)
write_config() {
	fw_act_config keep 3
	cat >>"$FW_CFG" <<EOC
subjects:
  - name: static-a
    addresses: [10.42.0.2]
    interface: sb-a
    gateway: 10.42.0.1
    private_cidr: 10.42.0.0/24
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.10 }
EOC
	[ "${1:-}" = with-b ] && cat >>"$FW_CFG" <<EOC
  - name: static-b
    addresses: [10.42.0.3]
    interface: sb-b
    gateway: 10.42.0.1
    private_cidr: 10.42.0.0/24
    policy:
      defaultAction: deny
EOC
	return 0
}

to() { fw_http "$1" "http://$2/" 2; } # NS HOST: a real TCP exchange
av_code() {
	curl -s --unix-socket "$FW_ACT_SOCK" -o /dev/null -w '%{http_code}' --max-time 3 \
		"http://localhost/credential-vault/_active?clientIp=$1" 2>/dev/null
}
owner_is() { [ "$(fw_dispatch "$1")" = "$(fw_subj "$2" id)" ]; } # IP NAME

write_config
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-b' 1 5 || fw_die "fastwalld did not attach to the sandbox ports"
NET_A=(--ip 10.42.0.2 --veth sb-a --gw 10.42.0.1 --cidr 10.42.0.0/24)
NET_B=(--ip 10.42.0.3 --veth sb-b --gw 10.42.0.1 --cidr 10.42.0.0/24)
OPEN='{"defaultAction":"deny","egress":[{"action":"allow","target":"198.51.100.0/24"},{"action":"allow","target":"203.0.113.10"}]}'

echo "# a binding for a static subject's address"
check "static-a: 198.51.100.10 allowed" to "$SB_A" 198.51.100.10
check_fails "static-a: 203.0.113.10 denied" to "$SB_A" 203.0.113.10
fw_act SET_BINDING u-x "${NET_A[@]}" --input "$OPEN"
check_reply "SET_BINDING on static-a's address: 409" 409 \
	"address 10.42.0.2 belongs to static subject static-a"
check_eq "u-x was not registered" "$(fw_subj u-x state)" ""
check "10.42.0.2 still dispatches to static-a" owner_is 10.42.0.2 static-a
check_fails "static-a's policy still in force: 203.0.113.10 denied" to "$SB_A" 203.0.113.10
check "and 198.51.100.10 allowed" to "$SB_A" 198.51.100.10
fw_act REMOVE_BINDING u-x "${NET_A[@]}"
check_reply "REMOVE_BINDING u-x: 200 {}" 200 "{}"
check "SIGHUP" fw_reload
check "after removal and SIGHUP, 10.42.0.2 is static-a's" owner_is 10.42.0.2 static-a
check "static-a still allowed to 198.51.100.10" to "$SB_A" 198.51.100.10

echo "# a reload that gives a static subject a bound address"
fw_act SET_BINDING u-y "${NET_B[@]}" --input "$OPEN"
fw_act LIFECYCLE_HOOK u-y "${NET_B[@]}" --hook data-plane-ready
check_reply "u-y bound and active on 10.42.0.3: 200 {}" 200 "{}"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-y' \
	--data-binary '{"credentials":[{"name":"k","source":{"type":"inline","value":"fw-e2e-value"}}]}'
check_code "u-y's vault: 201" 201
check_eq "u-y's vault served for 10.42.0.3" "$(av_code 10.42.0.3)" 200
check "u-y: 203.0.113.10 allowed" to "$SB_B" 203.0.113.10
write_config with-b
check "SIGHUP adding static-b on 10.42.0.3" fw_reload
check "the static subject took the address" owner_is 10.42.0.3 static-b
check "logged as a move" fw_wait_log 'address 10.42.0.3 moves from u-y to static-b'
check_fails "static-b's policy in force: 203.0.113.10 denied" to "$SB_B" 203.0.113.10
check_eq "u-y's vault no longer served for 10.42.0.3" "$(av_code 10.42.0.3)" 404
fw_act SET_BINDING u-y "${NET_B[@]}" --input "$OPEN"
check_reply "u-y's SET_BINDING re-sent: 409" 409 "address 10.42.0.3 belongs to static subject static-b"
check "10.42.0.3 still static-b's" owner_is 10.42.0.3 static-b

echo "# a reload that removes that static subject"
write_config
check "SIGHUP removing static-b" fw_reload
check "the binding took its address back" owner_is 10.42.0.3 u-y
check "logged" fw_wait_log 'subject u-y: took back 1 of its addresses'
check "u-y's policy in force again: 203.0.113.10 allowed" to "$SB_B" 203.0.113.10
check_eq "u-y's vault served again for 10.42.0.3" "$(av_code 10.42.0.3)" 200
check "static-a untouched throughout" owner_is 10.42.0.2 static-a
check "fastwalld still running" kill -0 "$FW_DAEMON_PID"

fw_summary
