#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: what an attacker with raw sockets in a sandbox tries against
# a port rule with fragments, extension headers and v4-mapped addresses.
# Raw frames leave the sandbox on eth0 (frames.py send) and the internet's
# interface is captured (frames.py capture): an attack holds when none of
# its frames arrived; a control datagram that arrives proves the capture.
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

SB_A=$(fw_sb_ns a)
FRAMES=$FW_E2E_DIR/frames.py
fw_topology
fw_sandbox a 2

# sandbox-a may reach 198.51.100.10 and 2001:db8::10 on port 80 only
cat >"$FW_CFG" <<EOC
log_level: info
dns: { proxy: false }
datapath: { bpffs: $BPFFS, bridges: [br0], events: { rate: 1000, burst: 1000 } }
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.10, ports: [80] }
        - { action: allow, target: "2001:db8::10", ports: [80] }
EOC
fw_start_daemon || fw_die "fastwalld did not start"
check "fastwalld attached to sb-a" fw_wait_log 'attached to sb-a' 1 5

CAP=$FW_TMP/inet.cap
ready=$FW_TMP/cap.ready
fw_bg_ready "$NS_INET" "$ready" "$FW_PY" "$FRAMES" capture --iface eth0 --out "$CAP" --seconds 120

# send ATTACK: its frames from sandbox-a; prints the id they carry
send() {
	fw_ns "$SB_A" "$FW_PY" "$FRAMES" send "$1" --src4 10.42.0.2 --dst4 198.51.100.10 \
		--src6 fd00:42::2 --dst6 2001:db8::10 --gw-mac 02:fa:57:00:00:01
}
# arrived ID [PATTERN]: how many captured frames carry that id
arrived() {
	sleep 0.3
	grep -cE -- "(id=|frag=)$1([ /]|$)${2:-}" "$CAP" || true
}
# arrived_to ADDR: frames captured to that destination
arrived_to() {
	sleep 0.3
	grep -c -- " $1 " "$CAP" || true
}

echo "# controls: fragmented datagrams to port 80 arrive whole"
id=$(send v4-frag-ok)
check_eq "v4: both fragments of a datagram to 198.51.100.10:80 arrived" "$(arrived "$id")" 2
id=$(send v6-frag-ok)
check_eq "v6: both fragments of a datagram to [2001:db8::10]:80 arrived" "$(arrived "$id")" 2
id=$(send v6-atomic-80)
check_eq "v6: an atomic fragment to port 80 arrived" "$(arrived "$id")" 1

echo "# attacks"
fh0=$(fw_counter "drop fragment-header")
id=$(send v6-dest-trailer)
check_eq "v6: fake port 80 past the payload, real UDP header (port 22) in the second fragment: nothing arrived" \
	"$(arrived "$id")" 0
id=$(send v6-tiny-tcp)
check_eq "v6: tiny first fragment (8 bytes of TCP): nothing arrived" "$(arrived "$id")" 0
id=$(send v4-tiny-tcp)
check_eq "v4: tiny first fragment (8 bytes of TCP, the rest past tot_len): nothing arrived" \
	"$(arrived "$id")" 0
check_ge "the unclassifiable first fragments counted as fragment-header" \
	"$(fw_counter "drop fragment-header")" $((fh0 + 3))
id=$(send v4-reused-id)
check_eq "v4: a re-used id: the first fragment to port 80 arrived, and nothing else" \
	"$(arrived "$id")" 1
check_eq "v4: ... the later fragment did not follow on its record" "$(arrived "$id" 'off=16')" 0
id=$(send v6-atomic-22)
check_eq "v6: an atomic fragment to port 22: nothing arrived" "$(arrived "$id")" 0
before=$(arrived_to 2001:db8::10)
send v6-ext-past-payload >/dev/null
check_eq "v6: a destination options header ending the payload, fake port 80 past it: nothing arrived" \
	"$(($(arrived_to 2001:db8::10) - before))" 0

echo "# v4-mapped addresses in IPv6 packets"
v4m0=$(fw_counter "drop v4-mapped")
send v4mapped-dst >/dev/null
check_eq "v6 to ::ffff:198.51.100.10 (allowed as IPv4): nothing arrived" \
	"$(arrived_to ::ffff:198.51.100.10)" 0
before=$(arrived_to 2001:db8::10)
send v4mapped-src >/dev/null
check_eq "v6 from ::ffff:10.42.0.2 (sandbox-a's IPv4) to [2001:db8::10]:80: nothing arrived" \
	"$(($(arrived_to 2001:db8::10) - before))" 0
check_ge "both counted as v4-mapped" "$(fw_counter "drop v4-mapped")" $((v4m0 + 2))

fw_stop_daemon
fw_summary
