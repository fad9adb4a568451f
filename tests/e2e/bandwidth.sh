#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: per-subject egress bandwidth (docs/bandwidth.md). iperf3
# from sandboxes to an iperf3 server in the internet namespace through the
# pod's uplink up0, where the bandwidth program runs: a limited TCP flow's
# goodput near its limit (the figure printed), an unlimited sandbox
# unaffected, a sandbox that tries to exceed its limit with many parallel
# flows, a UDP flood, and a process sandbox with many sockets; a limit
# changed and removed by a reload; bad limits refused with a clear error,
# changing nothing; the counters in `fastwall subjects`, status and the
# metrics. This host's kernel may lack sch_fq: mode auto then polices,
# which the log says; edt is checked where fq exists (tests/vm/bandwidth.sh
# in the guests).
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require
command -v iperf3 >/dev/null || {
	echo "skip: iperf3 not installed (Debian package iperf3)"
	exit 77
}

CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
SERVER=198.51.100.10
RATE=1250000  # 10 Mbit/s, in bytes per second
RATE2=2500000 # 20 Mbit/s, after the reload
METRICS=127.0.0.1:9464

bw_cleanup() {
	set +e
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_act_cleanup
}
trap bw_cleanup EXIT

fw_topology
fw_sandbox a 2 # limited
fw_sandbox b 3 # no limit
fw_sandbox c 4 # limited, the attacker
fw_sandbox d 5 # bound through the actions protocol
export FW_CG_MNT=$CG_MNT
fw_cg_mount "$CG_MNT"
for p in 5201 5202 5203 5204; do
	fw_bg "$NS_INET" iperf3 -s -B "$SERVER" -p "$p"
done
sleep 0.3

# write_config RATE_A: sandbox-a limited to RATE_A bytes/s ("" = no
# limit), sandbox-c and the process sandbox to $RATE, sandbox-b never
write_config() {
	local bw_a=""
	[ -n "$1" ] && bw_a="      fastwallBandwidth: { rate: $1, burst: 1048576 }"
	cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  interfaces: ["sb-*"]
dns:
  proxy: false
bandwidth:
  interfaces: [up0]
  mode: auto
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_ACT_SOCK
  bind_host_veth: true
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
subjects:
$(fw_subject_yaml a 2 v4)
    policy:
      defaultAction: allow
$bw_a
$(fw_subject_yaml b 3 v4)
    policy: { defaultAction: allow }
$(fw_subject_yaml c 4 v4)
    policy:
      defaultAction: allow
      fastwallBandwidth: { rate: $RATE }
  - name: proc-$FW_ID
    cgroup: bwproc
    keep_caps: true
    policy:
      defaultAction: allow
      fastwallBandwidth: { rate: $RATE }
EOF
}

# goodput NS PORT ARGS...: the bytes per second the server received in a
# 4-second iperf3 run from NS (the first second, slow start and the
# burst, left out)
goodput() {
	local ns=$1 port=$2
	shift 2
	fw_ns "$ns" timeout 20 iperf3 -c "$SERVER" -p "$port" -t 4 -O 1 -J "$@" 2>/dev/null |
		"$FW_PY" -c '
import json, sys
d = json.load(sys.stdin)["end"]
s = d.get("sum_received") or d.get("sum") or {}
print(int(s.get("bits_per_second", 0) / 8))'
}
# in_cg CGROUP CMD...: CMD in the pod namespace, in the process
# sandbox's cgroup (as fastwall run's child joins it)
in_cg() {
	local cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
# within X LO HI: LO <= X <= HI, the figures said on failure
within() {
	echo "measured $1, wanted $2..$3"
	[ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}
pct() { echo $(($1 * 100 / $2)); }
metric() { # the value of one series of /metrics, 0 when absent
	fw_ns "$NS_POD" curl -s --max-time 3 "http://$METRICS/metrics" |
		awk -v s="$1" 'index($0, s " ") == 1 { v = $2 } END { print v + 0 }'
}

write_config $RATE
fw_start_daemon || exit 1

check "auto falls back to police where the kernel has no fq (logged)" \
	fw_wait_log 'bandwidth: up0: .*(no fq|policing instead)|bandwidth on up0: edt' 1 2
MODE=police
grep -q 'bandwidth on up0: edt' "$FW_LOG" && MODE=edt
echo "# mode on up0: $MODE"
check "fastwall subjects shows sandbox-a's limit" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A1 ' sandbox-a ' | grep -q 'bandwidth: $RATE bytes/s, burst 1048576 bytes'"
check "fastwall subjects -o json: sandbox-a's limit, none for sandbox-b" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS -o json subjects |
		$FW_PY -c '
import json, sys
s = {e[\"name\"]: e for e in json.load(sys.stdin)[\"subjects\"]}
a, b = s[\"sandbox-a\"], s[\"sandbox-b\"]
sys.exit(0 if a[\"bandwidth\"] == {\"rate\": $RATE, \"burst\": 1048576} and b.get(\"bandwidth\") is None else 1)'"

# --- a limited flow, an unlimited one -------------------------------------
G=$(goodput "$(fw_sb_ns a)" 5201)
echo "# sandbox-a, one TCP flow, limit $RATE B/s ($MODE): goodput $G B/s ($(pct "$G" $RATE) %)"
check "a limited TCP flow gets 70-110 % of its limit ($(pct "$G" $RATE) %)" \
	within "$G" $((RATE * 70 / 100)) $((RATE * 110 / 100))
GB=$(goodput "$(fw_sb_ns b)" 5202)
echo "# sandbox-b, no limit: goodput $GB B/s"
check "a sandbox without a limit is not held to one (more than 5x the limit)" \
	within "$GB" $((RATE * 5)) 999999999999

# --- attackers --------------------------------------------------------------
G=$(goodput "$(fw_sb_ns c)" 5203 -P 16)
echo "# sandbox-c, 16 parallel TCP flows: goodput $G B/s ($(pct "$G" $RATE) %)"
check "16 parallel flows together stay within the limit ($(pct "$G" $RATE) %)" \
	within "$G" 1 $((RATE * 110 / 100))
G=$(goodput "$(fw_sb_ns c)" 5203 -u -b 200M -l 1400)
echo "# sandbox-c, UDP flood at 200 Mbit/s: received $G B/s ($(pct "$G" $RATE) %)"
check "a UDP flood arrives at no more than the limit ($(pct "$G" $RATE) %)" \
	within "$G" 1 $((RATE * 110 / 100))
G=$(in_cg "$CG/bwproc" timeout 20 iperf3 -c "$SERVER" -p 5204 -t 4 -O 1 -J -P 16 2>/dev/null |
	"$FW_PY" -c 'import json, sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8))')
G=${G:-0}
echo "# process sandbox, 16 sockets: goodput $G B/s ($(pct "$G" $RATE) %)"
check "a process sandbox's 16 sockets together stay within the limit ($(pct "$G" $RATE) %)" \
	within "$G" 1 $((RATE * 110 / 100))
check "the process sandbox's traffic was limited (its drops or pacing counted)" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A2 ' proc-$FW_ID ' | grep -Eq 'bandwidth: $RATE bytes/s|bandwidth-police=[1-9]'"
# fastwall run with the limit in its policy JSON: 16 sockets of iperf3
printf '{"defaultAction":"allow","fastwallBandwidth":{"rate":%s}}\n' $RATE >"$FW_TMP/run.json"
G=$(fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "run-$FW_ID" \
	--policy "$FW_TMP/run.json" -- timeout 20 iperf3 -c "$SERVER" -p 5204 -t 4 -O 1 -J -P 16 \
	2>/dev/null | "$FW_PY" -c 'import json, sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8))')
G=${G:-0}
echo "# fastwall run, 16 sockets: goodput $G B/s ($(pct "$G" $RATE) %)"
check "fastwall run's 16 sockets together stay within its policy's limit ($(pct "$G" $RATE) %)" \
	within "$G" $((RATE * 50 / 100)) $((RATE * 110 / 100))
printf '{"defaultAction":"allow","fastwallBandwidth":{"rate":-1}}\n' >"$FW_TMP/run-bad.json"
run_bad() {
	! fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "runbad-$FW_ID" \
		--policy "$FW_TMP/run-bad.json" -- true 2>"$FW_TMP/run-bad.err" &&
		grep -q 'fastwallBandwidth: rate -1 out of range' "$FW_TMP/run-bad.err" &&
		! nsenter --net="/run/netns/$NS_POD" "$FASTWALL" --bpffs "$BPFFS" subjects |
		grep -q " runbad-$FW_ID "
}
check "fastwall run with a negative rate in its policy is refused, naming it" run_bad

# --- the actions protocol: fastwallBandwidth in a binding's policy ------------
NET_D=(--ip 10.42.0.5 --veth sb-d --gw 10.42.0.1 --cidr 10.42.0.0/24)
fw_act SET_BINDING u-d "${NET_D[@]}" --input '{"defaultAction":"allow","fastwallBandwidth":{"rate":0}}'
check_eq "SET_BINDING with a zero rate: 400 naming it" "$FW_ACT_CODE $FW_ACT_BODY" \
	'400 invalid action envelope: invalid binding.input: fastwallBandwidth: rate 0 out of range: 1000 to 12500000000 bytes per second'
fw_act SET_BINDING u-d "${NET_D[@]}" --input '{"defaultAction":"allow","fastwallBandwidth":{"rate":"fast"}}'
check_eq "SET_BINDING with a rate that is no integer: 400" "$FW_ACT_CODE" 400
check_eq "... and no subject for 10.42.0.5" "$(fw_dispatch 10.42.0.5)" none
fw_act SET_BINDING u-d "${NET_D[@]}" --input "{\"defaultAction\":\"allow\",\"fastwallBandwidth\":{\"rate\":$RATE}}"
check_eq "SET_BINDING with a limit: 200" "$FW_ACT_CODE" 200
fw_act LIFECYCLE_HOOK u-d "${NET_D[@]}" --hook data-plane-ready --inv inv-d-1
check_eq "data-plane-ready: 200" "$FW_ACT_CODE" 200
check "fastwall subjects shows u-d's limit from its binding" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A1 ' u-d ' | grep -q 'bandwidth: $RATE bytes/s, burst 1048576 bytes'"
G=$(goodput "$(fw_sb_ns d)" 5203 -P 8)
echo "# u-d (actions binding), 8 parallel TCP flows: goodput $G B/s ($(pct "$G" $RATE) %)"
check "the binding's limit holds 8 parallel flows ($(pct "$G" $RATE) %)" \
	within "$G" $((RATE * 50 / 100)) $((RATE * 110 / 100))

# --- counters ----------------------------------------------------------------
if [ "$MODE" = police ]; then
	check "drops counted under bandwidth-police (status)" \
		bash -c "[ \$(nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS status |
			awk '\$1 \" \" \$2 == \"drop bandwidth-police\" { print \$3 }') -gt 0 ]"
	check_ge "sandbox-c's drops under bandwidth-police" \
		"$(fw_subject_counter sandbox-c "drop bandwidth-police")" 1
	check_ge "metrics: fastwall_bandwidth_packets_total dropped bandwidth-police" \
		"$(metric 'fastwall_bandwidth_packets_total{outcome="dropped",reason="bandwidth-police"}')" 1
else
	check_ge "metrics: fastwall_bandwidth_bytes_total paced" \
		"$(metric 'fastwall_bandwidth_bytes_total{outcome="paced"}')" 1
fi
check_ge "metrics: fastwall_bandwidth_bytes_total sent" \
	"$(metric 'fastwall_bandwidth_bytes_total{outcome="sent"}')" $((RATE * 4))
check_eq "sandbox-b (no limit) has no bandwidth drops" \
	"$(fw_subject_counter sandbox-b "drop bandwidth-police")" 0

# --- a limit changed, then removed --------------------------------------------
write_config $RATE2
fw_reload
check "reload: the new limit is in force (fastwall subjects)" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A1 ' sandbox-a ' | grep -q 'bandwidth: $RATE2 bytes/s'"
G=$(goodput "$(fw_sb_ns a)" 5201)
echo "# sandbox-a after the reload, limit $RATE2 B/s: goodput $G B/s ($(pct "$G" $RATE2) %)"
check "the raised limit takes effect ($(pct "$G" $RATE2) % of it)" \
	within "$G" $((RATE2 * 70 / 100)) $((RATE2 * 110 / 100))
write_config ""
fw_reload
check "reload: the limit removed (fastwall subjects shows none)" \
	bash -c "! nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A1 ' sandbox-a ' | grep -q bandwidth:"
G=$(goodput "$(fw_sb_ns a)" 5201)
echo "# sandbox-a without a limit: goodput $G B/s"
check "without its limit sandbox-a is not held (more than 5x the old limit)" \
	within "$G" $((RATE * 5)) 999999999999

# --- a restart keeps the limits in force -----------------------------------------
fw_stop_daemon
check "with fastwalld stopped the program stays on up0" \
	bash -c "tc -n $NS_POD filter show dev up0 egress | grep -q fw_bw_"
fw_start_daemon || exit 1
check "after a restart fastwall subjects shows sandbox-c's limit" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A1 ' sandbox-c ' | grep -q 'bandwidth: $RATE bytes/s'"
G=$(goodput "$(fw_sb_ns c)" 5203 -P 4)
echo "# sandbox-c after a restart, 4 flows: goodput $G B/s ($(pct "$G" $RATE) %)"
check "after a restart the limit holds ($(pct "$G" $RATE) %)" \
	within "$G" 1 $((RATE * 110 / 100))

# --- bad input ------------------------------------------------------------------
write_config $RATE
fw_reload
# bad VALUE MESSAGE: a configuration whose sandbox-a limit is VALUE is
# refused by `fastwalld check` with MESSAGE, and a reload with it changes
# nothing
bad() {
	local v=$1 msg=$2 out
	sed "s|fastwallBandwidth: { rate: $RATE, burst: 1048576 }|fastwallBandwidth: $v|" \
		"$FW_CFG" >"$FW_TMP/bad.yaml"
	out=$("$FASTWALLD" -c "$FW_TMP/bad.yaml" check 2>&1) && {
		echo "accepted: $v"
		return 1
	}
	echo "$out"
	echo "$out" | grep -q -- "$msg" || return 1
	cp "$FW_CFG" "$FW_TMP/good.yaml"
	cp "$FW_TMP/bad.yaml" "$FW_CFG"
	fw_reload
	cp "$FW_TMP/good.yaml" "$FW_CFG"
	tail -n 3 "$FW_LOG" | grep -q 'reload rejected' &&
		nsenter --net="/run/netns/$NS_POD" "$FASTWALL" --bpffs "$BPFFS" subjects |
		grep -A1 ' sandbox-a ' | grep -q "bandwidth: $RATE bytes/s, burst 1048576 bytes"
}
check "a negative rate is refused, nothing changes" bad "{ rate: -5 }" "fastwallBandwidth.rate"
check "a zero rate is refused, nothing changes" bad "{ rate: 0 }" "fastwallBandwidth.rate"
check "a huge rate is refused, nothing changes" bad "{ rate: 99999999999999999 }" \
	"fastwallBandwidth.rate"
check "a burst below 64 KiB is refused, nothing changes" bad "{ rate: $RATE, burst: 10 }" \
	"fastwallBandwidth.burst"
check "a limit without a rate is refused, nothing changes" bad "{ burst: 1048576 }" \
	"rate (bytes per second) is required"
check "an unknown key in the limit is refused, nothing changes" \
	bad "{ rate: $RATE, ceil: 5 }" "ceil"
check "a limit that is neither a mapping nor off is refused, nothing changes" \
	bad "fast" "fastwallBandwidth must be"
# a reload naming an uplink that does not exist is rejected
missing_uplink() {
	cp "$FW_CFG" "$FW_TMP/good.yaml"
	sed 's|interfaces: \[up0\]|interfaces: [nosuch0]|' "$FW_TMP/good.yaml" >"$FW_CFG"
	fw_reload
	cp "$FW_TMP/good.yaml" "$FW_CFG"
	tail -n 3 "$FW_LOG" | grep 'reload rejected' | grep -q "bandwidth: can't attach to nosuch0"
}
check "a reload naming a missing uplink is rejected, nothing changes" missing_uplink
check "... and the limits stay in force" \
	bash -c "nsenter --net=/run/netns/$NS_POD $FASTWALL --bpffs $BPFFS subjects |
		grep -A1 ' sandbox-a ' | grep -q 'bandwidth: $RATE bytes/s'"

# --- detach -------------------------------------------------------------------------
fw_cg_teardown "$CG" "$CG_MNT" >/dev/null 2>&1
check "fastwalld detach takes the bandwidth program off up0" \
	bash -c "! tc -n $NS_POD filter show dev up0 egress | grep -q fw_bw_"

fw_summary
