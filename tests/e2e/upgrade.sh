#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: an upgrade from the previous release to this build under
# traffic. The previous release (commit $FW_PREV_REV, default a0e21c7) is
# built once into $BUILD/prev-<rev>/ (kept for later runs); its fastwalld
# programs three sandboxes (A: one CIDR on three ports plus a name learned
# through the DNS proxy, B: one CIDR, C: a protocol subject), then, while
# sequence-numbered UDP streams (allowed and denied, ~14,000 datagrams a
# second in all) and two TCP connections run, it is stopped (SIGTERM) and
# this build's fastwalld is started on the same pin directory and
# configuration. What a user would see is checked: no allowed datagram
# lost, no denied one delivered, the TCP connections intact, the learned
# name and its lease kept, the counters carried (no datagram uncounted)
# and readable with the new CLI, a clean log, a policy change that
# takes effect, and a second restart on the upgraded state that reuses
# everything. A clone without the previous release's commit (shallow)
# skips with a message. FW_PREV_REV=REV tests an upgrade from another
# release; the default moves to each new release.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_act_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v dig >/dev/null || fw_die "dig not found (apt-get install bind9-dnsutils)"
command -v dnsmasq >/dev/null || fw_die "dnsmasq not found (apt-get install dnsmasq-base)"

FW_PREV_REV=${FW_PREV_REV:-a0e21c7}
STREAMS=$FW_E2E_DIR/streams.py
NEW_FASTWALLD=$FASTWALLD
NEW_FASTWALL=$FASTWALL

# --- the previous release, built once ---------------------------------------
# from git archive (no worktree to register), into a directory of its own
# that holds the two binaries only (the BPF objects are embedded), so that
# no build file of it is ever seen by this tree's Makefile
prev_build() {
	local rev dir src log
	rev=$(git -C "$FW_ROOT" rev-parse -q --verify "$FW_PREV_REV^{commit}" 2>/dev/null) || return 2
	dir=$FW_BUILD/prev-$FW_PREV_REV
	PREV_DIR=$dir
	if [ -x "$dir/fastwalld" ] && [ -x "$dir/fastwall" ] && [ "$(cat "$dir/commit" 2>/dev/null)" = "$rev" ]; then
		return 0
	fi
	mkdir -p "$FW_BUILD"
	exec 9>"$FW_BUILD/prev-$FW_PREV_REV.lock"
	flock 9
	if [ -x "$dir/fastwalld" ] && [ -x "$dir/fastwall" ] && [ "$(cat "$dir/commit" 2>/dev/null)" = "$rev" ]; then
		exec 9>&-
		return 0
	fi
	echo "# building the previous release $FW_PREV_REV ($rev) into $dir"
	src=$(mktemp -d "$FW_BUILD/prev-$FW_PREV_REV.src.XXXXXX")
	log=$src.log
	if git -C "$FW_ROOT" archive "$rev" | tar -x -C "$src" &&
		env -u BUILD -u SANITIZE -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
		make -C "$src" -j2 all >"$log" 2>&1; then
		rm -rf "$dir"
		mkdir -p "$dir.new"
		cp "$src/build/fastwalld" "$src/build/fastwall" "$dir.new/"
		echo "$rev" >"$dir.new/commit"
		mv "$dir.new" "$dir"
		rm -rf "$src" "$log"
		exec 9>&-
		return 0
	fi
	echo "# the previous release did not build; the end of its log:" >&2
	tail -20 "$log" | sed 's/^/#   /' >&2
	rm -rf "$src" "$log"
	exec 9>&-
	return 1
}
prev_build
case $? in
0) ;;
2)
	echo "# SKIP: the previous release $FW_PREV_REV is not in this clone (a shallow clone?);"
	echo "#       'git fetch --unshallow' (a full clone) runs the upgrade test"
	fw_summary
	exit 0
	;;
*) fw_die "could not build the previous release $FW_PREV_REV" ;;
esac
OLD_FASTWALLD=$PREV_DIR/fastwalld
OLD_FASTWALL=$PREV_DIR/fastwall

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)
UP4=198.51.100.53 # the upstream resolver
NAMED=203.0.113.50 # svc.example.test: reachable only once learned

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4
fw_serve_internet
ip -n "$NS_INET" addr add $NAMED/32 dev lo
fw_serve "$NS_INET" --udp $NAMED:9000
fw_resolver $UP4 svc.example.test,$NAMED,30

# the receiver: UDP on the destinations of every stream, allowed or not,
# and a TCP echo for the connections held open
RECV_OUT=$FW_TMP/recv.json
RECV_PID=""
start_receiver() {
	local ready=$FW_TMP/recv.ready
	rm -f "$ready" "$RECV_OUT"
	fw_bg_ready "$NS_INET" "$ready" "$FW_PY" "$STREAMS" recv --out "$RECV_OUT" \
		--udp 198.51.100.10:7001 --udp 198.51.100.10:7009 --udp 203.0.113.10:7003 \
		--udp $NAMED:7004 --tcp 198.51.100.10:7002 --tcp $NAMED:7002
	RECV_PID=${FW_PIDS[-1]}
}

# write_config B_CIDR: A, B static; DNS proxy; the actions protocol for C
write_config() {
	cat >"$FW_CFG.new" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 100, burst: 100 }
dns:
  upstreams: [$UP4]
  timeout: 1
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_ACT_SOCK
  restart: keep
  grace: 8
  bind_host_veth: true
subjects:
$(fw_subject_yaml a 2 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24, ports: [7001, 7002, 9000] }
        - { action: allow, target: svc.example.test }
$(fw_subject_yaml b 3 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: "$1" }
EOF
	mv "$FW_CFG.new" "$FW_CFG"
}

# C through the protocol: SET_BINDING then data-plane-ready, the same
# fence for the set-up and the Fastlet's replay after a restart
POL_C='{"defaultAction":"deny","egress":[{"action":"allow","target":"198.51.100.10"}]}'
act_c() {
	fw_act SET_BINDING u-c --ip 10.42.0.4 --veth sb-c --gw 10.42.0.1 --cidr 10.42.0.0/24 \
		--rt rt-c --att sha256:att-c --gen 1 --input "$POL_C" || return 1
	[ "$FW_ACT_CODE" = 200 ] || return 1
	fw_act LIFECYCLE_HOOK u-c --ip 10.42.0.4 --veth sb-c --gw 10.42.0.1 --cidr 10.42.0.0/24 \
		--rt rt-c --att sha256:att-c --gen 1 --hook data-plane-ready || return 1
	[ "$FW_ACT_CODE" = 200 ]
}

# daemon BINARY LOG [ARGS...]: fw_start_daemon with that fastwalld and a
# log of its own. A release without the monitor socket refuses its
# section: that one runs on the configuration as it is, any other on this
# run's own socket.
daemon() {
	local own=1
	FASTWALLD=$1
	FW_LOG=$2
	shift 2
	if [ "$FASTWALLD" = "$OLD_FASTWALLD" ]; then
		cp "$FW_CFG" "$FW_TMP/probe.yaml"
		fw_own_sockets "$FW_TMP/probe.yaml"
		"$OLD_FASTWALLD" -c "$FW_TMP/probe.yaml" check >/dev/null 2>&1 || own=0
	fi
	FW_OWN_SOCKETS=$own fw_start_daemon "$@"
}
cli_old() { fw_ns "$NS_POD" "$OLD_FASTWALL" --bpffs "$BPFFS" "$@"; }
cli_new() { fw_ns "$NS_POD" "$NEW_FASTWALL" --bpffs "$BPFFS" "$@"; }
# subj_count CLI NAME "drop default-deny": one subject's count, by the given CLI
subj_count() {
	local cli=$1
	shift
	FASTWALL=$cli fw_subject_counter "$@"
}
lease_of() { cli_new leases | awk -v s="$1" -v a="$2" '$1 == s && $2 == a { print $3; f = 1 } END { if (!f) print "none" }'; }
ids() { "$@" subjects | awk '/^[0-9]/ { print $2 "=" $1 }' | sort | tr '\n' ' '; }
no_errors() { ! grep -E 'Z error |AddressSanitizer|runtime error' "$1"; }

# The streams: "ID=DST:PORT@RATE", allowed and denied, per sandbox
A_OK="a-cidr=198.51.100.10:7001@2500 a-named=$NAMED:7004@2500"
A_NO="a-other=203.0.113.10:7003@1000 a-port=198.51.100.10:7009@1000"
B_OK="b-cidr=203.0.113.10:7003@2500"
B_NO="b-other=198.51.100.10:7001@1000"
C_OK="c-addr=198.51.100.10:7001@1500"
C_NO="c-other=203.0.113.10:7003@1000"
ids_of() { local s r=""; for s in "$@"; do r+="${s%%=*},"; done; echo "${r%,}"; }
# shellcheck disable=SC2086
ALLOWED=$(ids_of $A_OK $B_OK $C_OK)
# shellcheck disable=SC2086
DENIED=$(ids_of $A_NO $B_NO $C_NO)

TRAFFIC_PIDS=()
# traffic_start TAG: the streams and the two TCP connections
traffic_start() {
	local tag=$1 l specs s args
	rm -f "$FW_TMP/stop"
	TRAFFIC_PIDS=()
	for l in a b c; do
		case $l in
		a) specs="$A_OK $A_NO" ;;
		b) specs="$B_OK $B_NO" ;;
		c) specs="$C_OK $C_NO" ;;
		esac
		args=()
		for s in $specs; do args+=(--stream "$s"); done
		nsenter --net="/run/netns/$(fw_sb_ns $l)" "$FW_PY" "$STREAMS" send "${args[@]}" \
			--stop "$FW_TMP/stop" --out "$FW_TMP/sent-$tag-$l.json" 2>>"$FW_TMP/bg.log" &
		TRAFFIC_PIDS+=($!)
		FW_PIDS+=($!)
	done
	for s in cidr:198.51.100.10 named:$NAMED; do
		nsenter --net="/run/netns/$SB_A" "$FW_PY" "$STREAMS" tcp "${s#*:}:7002" --interval 0.05 \
			--stop "$FW_TMP/stop" --out "$FW_TMP/tcp-$tag-${s%%:*}.json" 2>>"$FW_TMP/bg.log" &
		TRAFFIC_PIDS+=($!)
		FW_PIDS+=($!)
	done
}
# traffic_stop: the senders stop and write their counts, then the receiver
traffic_stop() {
	local p
	touch "$FW_TMP/stop"
	for p in "${TRAFFIC_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	sleep 0.5
	kill -TERM "$RECV_PID"
	wait "$RECV_PID" 2>/dev/null
	for _ in $(seq 100); do
		[ -e "$RECV_OUT" ] && return 0
		sleep 0.05
	done
}
# check_report DESC TAG: the streams' figures, shown whatever the outcome
check_report() {
	local tag=$2 rc
	"$FW_PY" "$STREAMS" report --recv "$RECV_OUT" --allowed "$ALLOWED" --denied "$DENIED" \
		--sent "$FW_TMP/sent-$tag-a.json" --sent "$FW_TMP/sent-$tag-b.json" \
		--sent "$FW_TMP/sent-$tag-c.json" >"$FW_TMP/report-$tag.txt" 2>&1
	rc=$?
	sed 's/^/#   /' "$FW_TMP/report-$tag.txt"
	if [ "$rc" = 0 ]; then fw_ok "$1"; else fw_not_ok "$1"; fi
}
tcp_ok() { # FILE: the connection held and exchanged a few times a second
	"$FW_PY" -S -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r)
sys.exit(0 if not r["error"] and r["exchanges"] >= 20 else 1)' "$1"
}
sent_of() { # TAG ID: datagrams sent on that stream
	"$FW_PY" -S -c '
import json, sys
t = {}
for l in "abc":
    t.update(json.load(open("%s/sent-%s-%s.json" % (sys.argv[1], sys.argv[2], l))))
print(t[sys.argv[3]]["sent"])' "$FW_TMP" "$1" "$2"
}

# --- the previous release ---------------------------------------------------
echo "# the previous release $FW_PREV_REV: set-up"
write_config 203.0.113.0/28
check "the previous release's fastwalld accepts the configuration" \
	fw_ns "$NS_POD" "$OLD_FASTWALLD" -c "$FW_CFG" check
# this build's detach takes the previous release's filters off: they are
# found by handle and priority, whatever the programs were called
daemon "$OLD_FASTWALLD" "$FW_TMP/old0.log" || fw_die "the previous release's fastwalld did not start"
fw_wait_log 'attached to sb-c' 1 5 || fw_die "the previous fastwalld did not attach to the sandbox ports"
fw_stop_daemon
check "this build's fastwalld detach, on the previous release's filters" \
	fw_ns "$NS_POD" "$NEW_FASTWALLD" -c "$FW_CFG" detach
check_eq "  leaves no filter on the ports" \
	"$(for p in sb-a sb-b sb-c; do tc -n "$NS_POD" filter show dev $p ingress; tc -n "$NS_POD" filter show dev $p egress; done)" ""
OLD_LOG=$FW_TMP/old.log
daemon "$OLD_FASTWALLD" "$OLD_LOG" || fw_die "the previous release's fastwalld did not start"
fw_wait_log 'attached to sb-c' 1 5 || fw_die "the previous fastwalld did not attach to the sandbox ports"
check "C set up through the protocol (SET_BINDING, data-plane-ready)" act_c
check_fails "before learning: A -> $NAMED:9000 dropped" fw_udp "$SB_A" $NAMED 9000 0.5
check_eq "A resolves svc.example.test through the proxy" \
	"$(fw_ns "$SB_A" dig +short +time=2 +tries=2 @10.42.0.1 svc.example.test 2>/dev/null)" $NAMED
check "the learned address passes" fw_udp "$SB_A" $NAMED 9000 1
lease0=$(FASTWALL=$OLD_FASTWALL fw_cli leases | awk -v a=$NAMED '$1 == "sandbox-a" && $2 == a { print $3 }')
check "the previous release's CLI lists the lease ($lease0)" test -n "$lease0"
check "A -> 198.51.100.10:9000 allowed" fw_udp "$SB_A" 198.51.100.10 9000
check "B -> 203.0.113.10:9000 allowed" fw_udp "$SB_B" 203.0.113.10 9000
check "C -> 198.51.100.10:9000 allowed" fw_udp "$SB_C" 198.51.100.10 9000
IDS0=$(ids cli_old)
echo "#   subjects: $IDS0"

echo "# upgrade under traffic"
start_receiver
traffic_start up
sleep 2
# what a user reads before the upgrade, with the old CLI
a_pass0=$(subj_count "$OLD_FASTWALL" sandbox-a "pass allow-cidr")
a_learn0=$(subj_count "$OLD_FASTWALL" sandbox-a "pass learned")
a_deny0=$(subj_count "$OLD_FASTWALL" sandbox-a "drop default-deny")
b_deny0=$(subj_count "$OLD_FASTWALL" sandbox-b "drop default-deny")
deny0=$(FASTWALL=$OLD_FASTWALL fw_counter "drop default-deny")
pass0=$(FASTWALL=$OLD_FASTWALL fw_counter "pass allow-cidr")
echo "#   before: pass allow-cidr $pass0, drop default-deny $deny0; sandbox-a $a_pass0/$a_learn0/$a_deny0, sandbox-b deny $b_deny0"
check "counters count under the previous release" test "$pass0" -gt 0 -a "$deny0" -gt 0 -a "$a_learn0" -gt 0
# the previous release named its TC programs after the hook (the kernel
# keeps 15 characters of a name); filters are found by handle, not name
check "the previous release's filters on sb-a: fastwall_ingress, fastwall_egress" \
	bash -c "tc -n $NS_POD filter show dev sb-a ingress | grep -q 'name fastwall_ingres ' &&
		tc -n $NS_POD filter show dev sb-a egress | grep -q 'name fastwall_egress '"
t0=$(date +%s%N)
fw_stop_daemon
check "the previous fastwalld stopped on SIGTERM, kernel state kept" \
	fw_wait_log 'stopping on signal 15; kernel state stays in place' 1 2
# a second without any fastwalld: the kernel enforces the pinned state
sleep 1
NEW_LOG=$FW_TMP/new.log
t1=$(date +%s%N)
if daemon "$NEW_FASTWALLD" "$NEW_LOG"; then
	fw_ok "the new fastwalld started on the previous release's pins ($((($(date +%s%N) - t1) / 1000000)) ms to ready)"
else
	fw_not_ok "the new fastwalld started on the previous release's pins"
fi
echo "#   $(grep -m1 -E 'data plane loaded' "$NEW_LOG" | sed 's/^[^ ]* //')"
# the Fastlet replays its subjects to the new instance
check "C replayed to the new fastwalld" act_c
sleep 3
traffic_stop
echo "#   $((($(date +%s%N) - t0) / 1000000)) ms from the stop of the old fastwalld to the end of the traffic"
check_report "the streams across the upgrade: every allowed datagram arrived, no denied one" up
check "TCP to 198.51.100.10 held open across the upgrade" tcp_ok "$FW_TMP/tcp-up-cidr.json"
check "TCP to the learned $NAMED held open across the upgrade" tcp_ok "$FW_TMP/tcp-up-named.json"

echo "# after the upgrade, with the new CLI"
for port in sb-a sb-b sb-c; do
	check_eq "$port: the old filters replaced in place, one each way" \
		"$(tc -n "$NS_POD" filter show dev $port ingress | grep -o 'handle 0xfa57 .* name [a-z_]*' | sed 's/.* name //') $(tc -n "$NS_POD" filter show dev $port egress | grep -o 'handle 0xfa57 .* name [a-z_]*' | sed 's/.* name //')" \
		"fw_from_sandbox fw_to_sandbox"
done
check "fastwall status works" cli_new status
check_eq "the same subjects and ids" "$(ids cli_new)" "$IDS0"
check_eq "C still active" "$(FASTWALL=$NEW_FASTWALL fw_subj u-c state)" active
a_pass1=$(subj_count "$NEW_FASTWALL" sandbox-a "pass allow-cidr")
a_learn1=$(subj_count "$NEW_FASTWALL" sandbox-a "pass learned")
a_deny1=$(subj_count "$NEW_FASTWALL" sandbox-a "drop default-deny")
b_deny1=$(subj_count "$NEW_FASTWALL" sandbox-b "drop default-deny")
b_pass1=$(subj_count "$NEW_FASTWALL" sandbox-b "pass allow-cidr")
deny1=$(FASTWALL=$NEW_FASTWALL fw_counter "drop default-deny")
pass1=$(FASTWALL=$NEW_FASTWALL fw_counter "pass allow-cidr")
echo "#   after: pass allow-cidr $pass1, drop default-deny $deny1; sandbox-a $a_pass1/$a_learn1/$a_deny1, sandbox-b deny $b_deny1"
check_ge "pass allow-cidr carried over (>= before)" "$pass1" "$pass0"
check_ge "drop default-deny carried over (>= before)" "$deny1" "$deny0"
# every datagram of the whole run counted once: a reset at the upgrade
# would leave the counts short of what was sent
check_ge "sandbox-a pass learned counts all of a-named" "$a_learn1" "$(sent_of up a-named)"
check_ge "sandbox-a pass allow-cidr counts all of a-cidr" "$a_pass1" "$(sent_of up a-cidr)"
check_ge "sandbox-a drop default-deny counts all of a-other and a-port" "$a_deny1" \
	$(($(sent_of up a-other) + $(sent_of up a-port)))
check_ge "sandbox-b pass allow-cidr counts all of b-cidr" "$b_pass1" "$(sent_of up b-cidr)"
check_ge "sandbox-b drop default-deny counts all of b-other" "$b_deny1" "$(sent_of up b-other)"
check "the learned address still passes" fw_udp "$SB_A" $NAMED 9000 1
lease1=$(lease_of sandbox-a $NAMED)
check "its lease is still there ($lease1, was $lease0)" grep -Eq '^[0-9]+s$' <<<"$lease1"
check_eq "the name resolves through the new proxy" \
	"$(fw_ns "$SB_A" dig +short +time=2 +tries=2 @10.42.0.1 svc.example.test 2>/dev/null)" $NAMED
check_fails "A -> 203.0.113.10:9000 still denied" fw_udp "$SB_A" 203.0.113.10 9000 0.5
check_fails "C -> 203.0.113.10:9000 still denied" fw_udp "$SB_C" 203.0.113.10 9000 0.5
sleep 0.3
check "still counting: drop default-deny grew" test "$(FASTWALL=$NEW_FASTWALL fw_counter "drop default-deny")" -gt "$deny1"

echo "# a policy change after the upgrade"
write_config 198.51.100.66
check "SIGHUP reload" fw_reload
check "the reload is reported" fw_wait_log 'reloaded ' 1 2
check "B -> 198.51.100.66:9000 now allowed" fw_udp "$SB_B" 198.51.100.66 9000
check_fails "B -> 203.0.113.10:9000 now denied" fw_udp "$SB_B" 203.0.113.10 9000 0.5
write_config 203.0.113.0/28
fw_reload
check "back to the first policy: B -> 203.0.113.10:9000 allowed" fw_udp "$SB_B" 203.0.113.10 9000

echo "# a restart on the upgraded state"
start_receiver
traffic_start re
sleep 1.5
fw_stop_daemon
sleep 0.5
NEW2_LOG=$FW_TMP/new2.log
check "the new fastwalld started again" daemon "$NEW_FASTWALLD" "$NEW2_LOG"
check "it reused the pinned maps" grep -q 'maps reused' "$NEW2_LOG"
check "C replayed again" act_c
sleep 2
traffic_stop
check_report "the streams across the restart: every allowed datagram arrived, no denied one" re
check "TCP to 198.51.100.10 held open across the restart" tcp_ok "$FW_TMP/tcp-re-cidr.json"
check "TCP to $NAMED held open across the restart" tcp_ok "$FW_TMP/tcp-re-named.json"
check_eq "the same subjects and ids" "$(ids cli_new)" "$IDS0"
check_ge "counters carried across the restart too" \
	"$(subj_count "$NEW_FASTWALL" sandbox-a "pass learned")" $((a_learn1 + $(sent_of re a-named)))

check "no errors in the new fastwalld's log" no_errors "$NEW_LOG"
check "no errors in the restarted fastwalld's log" no_errors "$NEW2_LOG"
check "the daemon is still running" kill -0 "$FW_DAEMON_PID"
fw_stop_daemon
fw_summary
