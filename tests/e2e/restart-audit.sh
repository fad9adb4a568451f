#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the audit trail across restarts. A plain restart of
# fastwalld adopts its subjects from the pins and writes no
# `change=updated` record for a subject whose policy and domain rules are
# what the configuration makes (the domain rules' digest is pinned in
# fastwall_subject_domains, beside the policy hash of the subject's
# record); a restart with one subject's domain rules changed, or its CIDR
# rules, writes one record, for that subject only.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

fw_topology
fw_sandbox a 2
fw_sandbox b 3

# config DOMAIN_A CIDR_B: sandbox-a allows a name, sandbox-b a CIDR
config() {
	cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
  bridges: [br0]
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: allow, target: $1 }
$(fw_subject_yaml b 3)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: $2 }
EOF
}

# the audit records of the latest run of fastwalld (its log from the line
# after the previous run's "fastwalld ready" on)
records() {
	local from=0
	if [ "$(grep -c 'fastwalld ready' "$FW_LOG")" -ge 2 ]; then
		from=$(grep -n 'fastwalld ready' "$FW_LOG" | tail -2 | head -1 | cut -d: -f1)
	fi
	tail -n +"$((from + 1))" "$FW_LOG" | grep ' audit subject ' || true
}

echo "# first start: both added"
config api.example.com 203.0.113.0/24
fw_start_daemon || fw_die "fastwalld did not start"
check "sandbox-a added" grep -q 'audit subject uid=sandbox-a change=added' "$FW_LOG"
check "sandbox-b added" grep -q 'audit subject uid=sandbox-b change=added' "$FW_LOG"
domains_a=$(grep -o 'uid=sandbox-a change=added.* domains=[0-9a-f-]*' "$FW_LOG" | sed 's/.* domains=//')

echo "# a plain restart: no record"
fw_stop_daemon
fw_start_daemon || fw_die "fastwalld did not start again"
check_eq "no audit record for either unchanged subject" "$(records)" ""
check "the subjects were adopted" grep -q 'adopted 2 subjects from pinned maps' "$FW_LOG"

echo "# a restart with sandbox-a's domain rule changed: one record, for it"
fw_stop_daemon
config www.example.com 203.0.113.0/24
fw_start_daemon || fw_die "fastwalld did not start a third time"
out=$(records)
check "sandbox-a: change=updated" grep -q 'uid=sandbox-a change=updated' <<<"$out"
check "with its old domains digest" grep -q "old_domains=$domains_a " <<<"$out"
check_eq "sandbox-b: no record" "$(grep -c 'uid=sandbox-b' <<<"$out" || true)" 0

echo "# a restart with sandbox-b's CIDR rule changed: one record, for it"
fw_stop_daemon
config www.example.com 192.0.2.128/25
fw_start_daemon || fw_die "fastwalld did not start a fourth time"
out=$(records)
check "sandbox-b: change=updated" grep -q 'uid=sandbox-b change=updated' <<<"$out"
check_eq "sandbox-a: no record" "$(grep -c 'uid=sandbox-a' <<<"$out" || true)" 0

echo "# and a plain restart again: none"
fw_stop_daemon
fw_start_daemon || fw_die "fastwalld did not start a fifth time"
check_eq "no audit record" "$(records)" ""

fw_summary
