#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: fastwalld restarts under the Sandbox Actions protocol.
# restart: keep - the kernel state stays, allowed traffic never fails, the
# Fastlet's replay confirms subjects in place, what is not replayed within
# the grace period is removed. restart: wipe - every protocol subject is
# removed at start (traffic dropped) until it is replayed.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
# shellcheck disable=SC2016 # the checks hand code in single quotes to eval or bash -c, which expand it
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_act_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v bpftool >/dev/null || fw_die "bpftool not found"

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4
fw_serve_internet
# long enough for the replay steps below on a loaded machine under ASan
GRACE=${FW_TEST_GRACE:-6}
fw_act_config keep "$GRACE"
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-c' 1 5 || fw_die "fastwalld did not attach to the sandbox ports"

POL='{"defaultAction":"deny","egress":[{"action":"allow","target":"198.51.100.0/24"},{"action":"deny","target":"198.51.100.66"}]}'
EMPTY='{}'
# sb/dpr LETTER N: SET_BINDING / data-plane-ready of u-LETTER on 10.42.0.N
# behind sb-LETTER; setup and replay use the same fence throughout
sb() {
	fw_act SET_BINDING "u-$1" --ip "10.42.0.$2" --veth "sb-$1" --gw 10.42.0.1 \
		--cidr 10.42.0.0/24 --rt "rt-$1" --att "sha256:att-$1" --gen 3 --input "$POL"
}
dpr() {
	fw_act LIFECYCLE_HOOK "u-$1" --ip "10.42.0.$2" --veth "sb-$1" --gw 10.42.0.1 \
		--cidr 10.42.0.0/24 --rt "rt-$1" --att "sha256:att-$1" --gen 3 --hook data-plane-ready
}
udp_ok() { fw_udp "$1" 198.51.100.10 9000 1; }
udp_dropped() { ! fw_udp "$1" "${2:-198.51.100.10}" 9000 0.5; }

echo "# three subjects: A active, B active, C denying"
sb a 2; check_reply "SET_BINDING A: 200" 200 "$EMPTY"
dpr a 2; check_reply "data-plane-ready A: 200" 200 "$EMPTY"
sb b 3; check_reply "SET_BINDING B: 200" 200 "$EMPTY"
dpr b 3; check_reply "data-plane-ready B: 200" 200 "$EMPTY"
sb c 4; check_reply "SET_BINDING C: 200" 200 "$EMPTY"
ID_A=$(fw_subj u-a id)
ID_B=$(fw_subj u-b id)
ID_C=$(fw_subj u-c id)
check_eq "states before the restart" "$(fw_subj u-a state) $(fw_subj u-b state) $(fw_subj u-c state)" \
	"active active denying"
check "A's allowed traffic passes" udp_ok "$SB_A"
check "B's allowed traffic passes" udp_ok "$SB_B"
check "C's traffic is dropped (denying)" udp_dropped "$SB_C"
INST1=$(fw_act_instance)
check "instanceId before the restart: $INST1" test -n "$INST1"

echo "# restart: keep, with A's traffic flowing"
LOOP_S=9
(
	fw_ns "$SB_A" "$FW_PY" "$FW_PROBE" udp-loop 198.51.100.10 9000 --interval 0.02 \
		--duration "$LOOP_S" >"$FW_TMP/loop1.out" 2>&1
	echo $? >"$FW_TMP/loop1.rc"
) &
LOOP1=$!
sleep 0.5
fw_stop_daemon
check "while fastwalld is down: A's allowed traffic passes" udp_ok "$SB_A"
check "while fastwalld is down: A's denied traffic is still dropped (kernel state kept)" \
	udp_dropped "$SB_A" 198.51.100.66
check "while fastwalld is down: C is still denying" udp_dropped "$SB_C"
t_start=$(date +%s%N)
fw_start_daemon || fw_die "fastwalld did not restart"
check "restart: adopted the 3 subjects from the pinned maps" fw_wait_log 'adopted 3 subjects' 1 1
INST2=$(fw_act_instance)
check "restart: a new instanceId ($INST2)" test -n "$INST2" -a "$INST2" != "$INST1"
check_eq "restart: the same 3 ids, states kept" \
	"$(fw_subj u-a id)/$(fw_subj u-a state) $(fw_subj u-b id)/$(fw_subj u-b state) $(fw_subj u-c id)/$(fw_subj u-c state)" \
	"$ID_A/active $ID_B/active $ID_C/denying"
check "during the grace period: B (not replayed yet) still passes" udp_ok "$SB_B"

echo "# the Fastlet's replay"
sb a 2; check_reply "replayed SET_BINDING A (same fence): 200" 200 "$EMPTY"
check_eq "replay A: same id, still active (no data-plane change)" "$(fw_subj u-a id) $(fw_subj u-a state)" "$ID_A active"
dpr a 2; check_reply "replayed data-plane-ready A: 200" 200 "$EMPTY"
check_eq "replay A: same id, active" "$(fw_subj u-a id) $(fw_subj u-a state)" "$ID_A active"
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-a'
check "replay A: GET /policy 200 active" eval '[ "$FW_ACT_CODE" = 200 ] && [[ $FW_ACT_BODY == *"\"state\":\"active\""* ]]'
sb c 4; check_reply "replayed SET_BINDING C (same fence): 200" 200 "$EMPTY"
check_eq "replay C: same id, still denying" "$(fw_subj u-c id) $(fw_subj u-c state)" "$ID_C denying"
check "replay C: C's traffic still dropped" udp_dropped "$SB_C"

echo "# the grace period ends: B (not replayed) is removed"
us0=$(fw_counter "drop unknown-source")
# (the first instance's own grace line is in the log too: wait for this
# one's, which is the first to remove anything)
check "the daemon logs the end of the grace period" fw_wait_log 'restart grace over: [1-9]' 1 $((GRACE + 3))
t_grace=$((($(date +%s%N) - t_start) / 1000000))
check "grace ended after ~${GRACE} s (${t_grace} ms after the restart)" \
	test "$t_grace" -ge $((GRACE * 1000 - 1500)) -a "$t_grace" -le $((GRACE * 1000 + 3000))
check_eq "B gone from fastwall subjects" "$(fw_subj u-b id)" ""
check_eq "B's dispatch entry gone" "$(fw_dispatch 10.42.0.3)" none
check "B's traffic dropped" udp_dropped "$SB_B"
check_ge "... as unknown source" "$(fw_counter "drop unknown-source")" $((us0 + 1))
check_eq "A kept: same id, active" "$(fw_subj u-a id) $(fw_subj u-a state)" "$ID_A active"
check_eq "C (replayed, denying) kept: same id, denying" "$(fw_subj u-c id) $(fw_subj u-c state)" "$ID_C denying"
check_eq "C's dispatch entry kept" "$(fw_dispatch 10.42.0.4)" "$ID_C"
dpr c 4
check_reply "C's data-plane-ready after the restart: 200 (pending policy from the replay)" 200 "$EMPTY"
check "C active: its traffic passes" udp_ok "$SB_C"

wait "$LOOP1"
check "zero losses in A's allowed traffic across the restart ($(cat "$FW_TMP/loop1.out"))" \
	test "$(cat "$FW_TMP/loop1.rc" 2>/dev/null)" = 0
check "A's allowed traffic passes after the restart" udp_ok "$SB_A"

echo "# restart: wipe"
# B (and C, should it have gone) come back, so that three subjects are there
sb b 3 && dpr b 3
check_eq "B set up again" "$(fw_subj u-b state)" active
sb c 4
check_eq "three protocol subjects before the wipe restart" \
	"$(fw_cli subjects | awk '/^[0-9]/ && $2 ~ /^u-/' | wc -l)" 3
INST2=$(fw_act_instance)
fw_stop_daemon
fw_act_config wipe "$GRACE"
fw_start_daemon || fw_die "fastwalld did not restart with restart: wipe"
INST3=$(fw_act_instance)
check "wipe restart: a new instanceId" test -n "$INST3" -a "$INST3" != "$INST2"
check "wipe: the daemon logs the removal" fw_wait_log 'restart: wipe: removed 3 subjects' 1 1
check_eq "wipe: no protocol subject left" \
	"$(fw_cli subjects | awk '/^[0-9]/ && $2 ~ /^u-/' | wc -l)" 0
check_eq "wipe: no dispatch entries for A, B, C" \
	"$(fw_dispatch 10.42.0.2) $(fw_dispatch 10.42.0.3) $(fw_dispatch 10.42.0.4)" "none none none"
us0=$(fw_counter "drop unknown-source")
check "wipe: A's traffic dropped until replayed" udp_dropped "$SB_A"
check "wipe: B's traffic dropped until replayed" udp_dropped "$SB_B"
check_ge "wipe: dropped as unknown source" "$(fw_counter "drop unknown-source")" $((us0 + 2))
dpr a 2
check_reply "wipe: a hook before the replay of SET_BINDING: 409" 409 "subject u-a is not registered"
sb a 2; check_reply "wipe: replayed SET_BINDING A: 200" 200 "$EMPTY"
check_eq "wipe: A denying after SET_BINDING" "$(fw_subj u-a state)" denying
check "wipe: A still dropped while denying" udp_dropped "$SB_A"
dpr a 2; check_reply "wipe: replayed data-plane-ready A: 200" 200 "$EMPTY"
check_eq "wipe: A active" "$(fw_subj u-a state)" active
check "wipe: A's allowed traffic passes again" udp_ok "$SB_A"
check "wipe: A's denied traffic dropped" udp_dropped "$SB_A" 198.51.100.66
sb c 4; check_reply "wipe: replayed SET_BINDING C: 200" 200 "$EMPTY"
check_eq "wipe: C denying" "$(fw_subj u-c state)" denying
check "wipe: B (not replayed) still dropped" udp_dropped "$SB_B"
sleep $((GRACE + 1))
check_eq "wipe: no grace-period removal of the replayed subjects" \
	"$(fw_subj u-a state) $(fw_subj u-c state)" "active denying"

check "the daemon is still running" kill -0 "$FW_DAEMON_PID"
check_fails "no errors in the daemon log" grep -qE 'Z error |AddressSanitizer|runtime error' "$FW_LOG"
fw_stop_daemon
fw_summary
