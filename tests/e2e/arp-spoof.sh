#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A sandbox must not be able to claim another address with ARP: if
# sandbox-b could tell sandbox-a "10.42.0.1 is at my MAC", it would receive
# sandbox-a's traffic (a sibling-isolation bypass and a denial of service).
# fw_from_sandbox checks every ARP sender address against the subject
# bound to the port.
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_serve_internet
cat >"$FW_CFG" <<EOC
datapath: { bpffs: $BPFFS, bridges: [br0] }
subjects:
  - { name: sandbox-a, addresses: [10.42.0.2], interface: sb-a, gateway: 10.42.0.1,
      private_cidr: 10.42.0.0/24,
      policy: { defaultAction: deny, egress: [ { action: allow, target: 198.51.100.0/24 } ] } }
  - { name: sandbox-b, addresses: [10.42.0.3], interface: sb-b, gateway: 10.42.0.1,
      private_cidr: 10.42.0.0/24, policy: { defaultAction: deny } }
EOC
fw_start_daemon || fw_die "fastwalld did not start"

cat >"$FW_TMP/arp.py" <<'EOP'
import socket, struct, sys
# arp.py TARGET_MAC CLAIMED_IP TARGET_IP: unsolicited ARP replies on eth0
tmac, cip, tip = sys.argv[1:4]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
me = s.getsockname()[4]
tm = bytes.fromhex(tmac.replace(":", ""))
pkt = tm + me + struct.pack("!H", 0x0806) + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + \
      me + socket.inet_aton(cip) + tm + socket.inet_aton(tip)
for _ in range(3):
    s.send(pkt)
EOP

check "sandbox-a reaches 198.51.100.10:9000" fw_udp "$SB_A" 198.51.100.10 9000
sleep 1.2 # past the neighbour locktime, so an ARP reply may replace the entry
amac=$(ip -n "$SB_A" -br link show eth0 | awk '{ print $3 }')
fw_ns "$SB_B" "$FW_PY" "$FW_TMP/arp.py" "$amac" 10.42.0.1 10.42.0.2
check "sandbox-b's ARP claiming the gateway 10.42.0.1 did not reach sandbox-a" \
	bash -c "ip -n '$SB_A' neigh show 10.42.0.1 | grep -q 02:fa:57:00:00:01"
check "sandbox-a still reaches 198.51.100.10:9000 after sandbox-b's ARP" \
	fw_udp "$SB_A" 198.51.100.10 9000
fw_summary
