#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: SIGHUP reloads, rejected reloads, fastwalld check, a restart
# that must not disturb enforcement, and detach --purge.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
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

# write_config A_DEFAULT A_RULES...: sandbox-a's policy varies, sandbox-b
# stays default-allow with 203.0.113.0/24 denied.
write_config() {
	local def=$1 r
	shift
	{
		cat <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: $def
      egress:
EOF
		for r in "$@"; do
			echo "        - { action: ${r%% *}, target: \"${r#* }\" }"
		done
		cat <<EOF
$(fw_subject_yaml b 3 v4)
    policy:
      defaultAction: allow
      egress:
        - { action: deny, target: 203.0.113.0/24 }
EOF
	} >"$FW_CFG.new"
	mv "$FW_CFG.new" "$FW_CFG"
}

# the starting policy: sandbox-a reaches 198.51.100.10 only
write_config deny "allow 198.51.100.10" "allow 2001:db8::10"
check "fastwalld check accepts the config" fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" check
fw_start_daemon || fw_die "fastwalld did not start"

before() {
	check "$1: sandbox-a -> 198.51.100.10:80 allowed" fw_http "$SB_A" http://198.51.100.10/
	check "$1: sandbox-a udp6 -> [2001:db8::10]:9000 allowed" fw_udp "$SB_A" 2001:db8::10 9000
	check_fails "$1: sandbox-a -> 203.0.113.10:80 denied" fw_http "$SB_A" http://203.0.113.10/ 1
	check_fails "$1: sandbox-a udp -> 198.51.100.66:9000 denied" fw_udp "$SB_A" 198.51.100.66 9000 0.5
}

echo "# initial policy"
before "initial"

echo "# SIGHUP with a changed policy"
write_config deny "allow 203.0.113.0/24" "allow 198.51.100.0/24" "deny 198.51.100.10" "allow 2001:db8::/64"
check "SIGHUP reload reported" fw_reload
check "log says reloaded" fw_wait_log 'reloaded .*2 static subjects' 1 1
check "newly allowed passes: sandbox-a -> 203.0.113.10:80" fw_http "$SB_A" http://203.0.113.10/
check "newly allowed passes: sandbox-a udp -> 198.51.100.66:9000" fw_udp "$SB_A" 198.51.100.66 9000
check_fails "newly denied fails: sandbox-a -> 198.51.100.10:80" fw_http "$SB_A" http://198.51.100.10/ 1
check "still allowed: sandbox-a udp6 -> [2001:db8::10]:9000" fw_udp "$SB_A" 2001:db8::10 9000
check_fails "sandbox-b untouched: -> 203.0.113.10:80 still denied" fw_http "$SB_B" http://203.0.113.10/ 1

# back to the starting policy for the rest
write_config deny "allow 198.51.100.10" "allow 2001:db8::10"
fw_reload
check "reload back to the initial policy" fw_wait_log 'reloaded ' 2 1
before "after second reload"

echo "# invalid configurations are rejected, the running policy stays"
cp "$FW_CFG" "$FW_TMP/good.yaml"
# YAML syntax error: an unclosed flow sequence
sed -i 's/^    addresses: \[10.42.0.2, "fd00:42::2"\]$/    addresses: [10.42.0.2, "fd00:42::2"/' "$FW_CFG"
set +e
out=$(fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" check 2>&1)
rc=$?
set -e
check_eq "fastwalld check on a YAML error exits 3" "$rc" 3
check "fastwalld check names file:line of the YAML error ($out)" \
	grep -qE "^$FW_CFG:[0-9]+: .*YAML" <<<"$out"
rej=$(fw_log_count 'reload rejected')
fw_reload
check "SIGHUP with a YAML error is rejected" fw_wait_log 'reload rejected' $((rej + 1)) 1
check "the rejection names file:line" \
	grep -qE "reload rejected, running configuration unchanged: $FW_CFG:[0-9]+: " "$FW_LOG"
before "after a rejected YAML error"

# bad CIDR on a known line
cp "$FW_TMP/good.yaml" "$FW_CFG"
sed -i 's|target: "198.51.100.10"|target: "198.51.100.0/33"|' "$FW_CFG"
cidr_line=$(grep -n '198.51.100.0/33' "$FW_CFG" | cut -d: -f1)
set +e
out=$(fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" check 2>&1)
rc=$?
set -e
check_eq "fastwalld check on a bad CIDR exits 3" "$rc" 3
check "fastwalld check names $FW_CFG:$cidr_line for the bad CIDR ($out)" \
	grep -qF "$FW_CFG:$cidr_line:" <<<"$out"
rej=$(fw_log_count 'reload rejected')
fw_reload
check "SIGHUP with a bad CIDR is rejected" fw_wait_log 'reload rejected' $((rej + 1)) 1
check "the rejection names $FW_CFG:$cidr_line" \
	grep -qF "reload rejected, running configuration unchanged: $FW_CFG:$cidr_line:" "$FW_LOG"
before "after a rejected bad CIDR"
cp "$FW_TMP/good.yaml" "$FW_CFG"

echo "# restart: the kernel keeps enforcing while fastwalld is down"
ids_before=$(fw_cli subjects | awk '/^[0-9]/ { print $1, $2 }')
loop_out=$FW_TMP/loop.out
nsenter --net="/run/netns/$SB_A" "$FW_PY" "$FW_PROBE" udp-loop 198.51.100.10 9000 --interval 0.05 --duration 6 \
	>"$loop_out" 2>&1 &
loop_pid=$!
FW_PIDS+=("$loop_pid")
sleep 0.5
fw_stop_daemon
check "fastwalld stopped on SIGTERM, kernel state kept" \
	fw_wait_log 'stopping on signal 15; kernel state stays in place' 1 1
check "while down: sandbox-a -> 198.51.100.10:80 still allowed" fw_http "$SB_A" http://198.51.100.10/
check_fails "while down: sandbox-a -> 203.0.113.10:80 still denied" fw_http "$SB_A" http://203.0.113.10/ 1
check_fails "while down: sandbox-b -> 203.0.113.10:80 still denied" fw_http "$SB_B" http://203.0.113.10/ 1
check "fastwall status still works without the daemon" fw_cli status
fw_start_daemon || fw_die "fastwalld did not restart"
check "restart reused the pinned maps" fw_wait_log 'maps reused' 1 1
ids_after=$(fw_cli subjects | awk '/^[0-9]/ { print $1, $2 }')
check_eq "subject ids unchanged across the restart" "${ids_after//$'\n'/; }" "${ids_before//$'\n'/; }"
if wait "$loop_pid"; then loop_rc=0; else loop_rc=$?; fi
check "udp every 50 ms across the restart lost nothing ($(cat "$loop_out"))" [ "$loop_rc" -eq 0 ]
before "after restart"

echo "# detach --purge"
fw_stop_daemon
check "tc ingress filter present on sb-a before detach" \
	grep -q . <<<"$(tc -n "$NS_POD" filter show dev sb-a ingress)"
check "fastwalld detach --purge succeeds" \
	fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach --purge
for p in sb-a sb-b; do
	check_eq "no tc filter left on $p ingress" "$(tc -n "$NS_POD" filter show dev $p ingress)" ""
	check_eq "no tc filter left on $p egress" "$(tc -n "$NS_POD" filter show dev $p egress)" ""
done
check_fails "pins removed from $BPFFS" \
	bash -c "[ -d '$BPFFS' ] && [ -n \"\$(ls -A '$BPFFS')\" ]"
check "without fastwall, sandbox-a -> 203.0.113.10:80 passes" fw_http "$SB_A" http://203.0.113.10/

fw_summary
