#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: fastwalld started on pins of ABI 1 (no fastwall_abi record,
# the counters in the 29-slot fastwall_stats, made here with bpftool from
# a stopped fastwalld's pins) migrates them in place: the kernel enforces
# on the pinned state throughout, and after its first attach round
# fastwalld carries the old counters over (fastwall_stats_carried, which
# the CLI adds), unpins the old maps and writes the record; the CLI refuses the ABI-1 pins and reads the
# migrated ones. A pinned map of the wrong layout stops fastwalld with a
# message naming it, and nothing pinned changes.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v bpftool >/dev/null || fw_die "bpftool not found"

SB_A=$(fw_sb_ns a)

fw_topology
fw_sandbox a 2
fw_serve_internet

cat >"$FW_CFG" <<CFG
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
subjects:
$(fw_subject_yaml a 2 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.10 }
CFG

# possible CPUs: bpftool writes a per-CPU value to each of them
ncpu() {
	local n=0 r a b ranges
	IFS=, read -ra ranges </sys/devices/system/cpu/possible
	for r in "${ranges[@]}"; do
		a=${r%-*}
		b=${r#*-}
		n=$((n + b - a + 1))
	done
	echo "$n"
}
NCPU=$(ncpu)

fw_start_daemon || fw_die "fastwalld did not start"
check "ABI 2 record pinned at a fresh start" test -e "$BPFFS/fastwall_abi"
check "allowed passes" fw_http "$SB_A" http://198.51.100.10/
check_fails "denied drops" fw_http "$SB_A" http://203.0.113.10/ 1
fw_stop_daemon

echo "# the pins made ABI 1: no record, fastwall_stats with 29 slots"
if [ -z "$BPFFS" ] || [ ! -d "$BPFFS" ]; then fw_die "no pin directory"; fi
rm -f "$BPFFS/fastwall_abi" "$BPFFS/fastwall_stats_v2" "$BPFFS/fastwall_subject_stats_v2"
bpftool map create "$BPFFS/fastwall_stats" type percpu_array key 4 value 16 entries 29 \
	name fastwall_stats
bpftool map create "$BPFFS/fastwall_subject_stats" type percpu_array key 4 value 232 \
	entries 8192 name fastwall_subjec
# default-deny (21): 7 packets of 10 bytes on every CPU
bpftool map update pinned "$BPFFS/fastwall_stats" key 21 0 0 0 \
	value 7 0 0 0 0 0 0 0 10 0 0 0 0 0 0 0
check "while fastwalld is down the kernel enforces: allowed passes" \
	fw_http "$SB_A" http://198.51.100.10/
check_fails "the CLI refuses ABI-1 pins" fw_cli status
check "... saying which ABI it found" bash -c "'$FASTWALL' --bpffs '$BPFFS' status 2>&1 |
	grep -q 'ABI 1'"

echo "# fastwalld of ABI 2 on them"
fw_start_daemon || fw_die "fastwalld did not start on ABI-1 pins"
check "log: migrating from ABI 1" fw_wait_log 'migrating the maps under .* from fastwall ABI 1 to 2'
check "log: migrated after the attach round" fw_wait_log 'migrated from fastwall ABI 1 to 2'
check_fails "fastwall_stats unpinned" test -e "$BPFFS/fastwall_stats"
check_fails "fastwall_subject_stats unpinned" test -e "$BPFFS/fastwall_subject_stats"
check "fastwall_stats_v2, fastwall_stats_carried and the record pinned" \
	test -e "$BPFFS/fastwall_stats_v2" -a -e "$BPFFS/fastwall_stats_carried" -a \
	-e "$BPFFS/fastwall_abi"
check_eq "fastwall status shows the ABI-1 default-deny counter carried over" \
	"$(fw_counter 'drop default-deny')" $((7 * NCPU))
check "allowed passes after the migration" fw_http "$SB_A" http://198.51.100.10/
check_fails "denied drops after the migration" fw_http "$SB_A" http://203.0.113.10/ 1
check_ge "... and counts on from the carried counter" "$(fw_counter 'drop default-deny')" \
	$((7 * NCPU + 1))
fw_stop_daemon

echo "# a pinned map of the wrong layout"
rm -f "$BPFFS/fastwall_local_ports"
bpftool map create "$BPFFS/fastwall_local_ports" type hash key 4 value 2 entries 256 \
	name fastwall_local_
before=$(ls "$BPFFS")
nsenter --net="/run/netns/$NS_POD" "$FASTWALLD" -c "$FW_CFG" run >"$FW_TMP/refused.log" 2>&1 &&
	rc=0 || rc=$?
check_eq "fastwalld refuses to start (exit 4, kernel refused)" "$rc" 4
check "the log names the map, what it has and the way out" bash -c "grep fastwall_local_ports \
	'$FW_TMP/refused.log' | grep 'value 2 bytes' | grep -q 'detach --purge'"
check_eq "nothing pinned changed" "$(ls "$BPFFS")" "$before"
check "while refused, the kernel still enforces: allowed passes" \
	fw_http "$SB_A" http://198.51.100.10/
check "detach --purge" fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach --purge
check_fails "pins removed" test -e "$BPFFS"

fw_summary
