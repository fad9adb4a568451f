#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Process sandboxes and io_uring: a command under `fastwall run` sends and
# connects through io_uring (build/tests/uring_probe), where the kernel
# may run the call from another task than the command's: an io-wq worker
# (IOSQE_ASYNC) or the SQPOLL thread. An unconnected UDP sendmsg, a TCP
# connect and a UDP connect with a send after it, IPv4 and IPv6, to
# denied destinations: none may arrive in the simulated internet (a
# packet socket there sees every SYN and datagram before any socket); to
# allowed ones: each completes and arrives, so the check can fail. The
# same on sockets the run makes and passes to a task outside it, as the
# kernel's own threads were before 5.12: the socket's sandbox still
# decides.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require
URING_PROBE=$FW_BUILD/tests/uring_probe
[ -x "$URING_PROBE" ] || fw_die "$URING_PROBE missing: make $BUILD/tests/uring_probe"

CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
ARRIVED=$FW_TMP/arrived

uring_cleanup() {
	set +e
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_cleanup
}
trap uring_cleanup EXIT
trap 'exit 130' INT TERM

fw_topology
fw_cg_mount "$CG_MNT"
cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  events: { rate: 1000, burst: 1000 }
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
EOF
fw_start_daemon || exit 1
check "fastwalld attached the cgroup programs to $CG_PARENT" \
	fw_wait_log "process sandboxes: cgroup programs on $CG" 1 2

# the far side: every TCP SYN and UDP datagram to ports 7700-7759
nsenter --net="/run/netns/$NS_INET" "$URING_PROBE" capture --ports 7700-7759 \
	--ready "$FW_TMP/capture.ready" >"$ARRIVED" 2>>"$FW_TMP/bg.log" &
FW_PIDS+=($!)
fw_eventually 5 test -e "$FW_TMP/capture.ready" || fw_die "uring_probe capture did not start"

# uring_cases LABEL WANT OUT PORT: the six cases of one probe run (output
# OUT, ports PORT..PORT+5); WANT allow: each completes and arrives; deny:
# none succeeds and nothing arrives
UR_CASES=(sendmsg-udp4 sendmsg-udp6 connect-tcp4 connect-tcp6 connect-udp4 connect-udp6)
uring_cases() {
	local label=$1 want=$2 out=$3 port=$4 i p line n done_ok
	sleep 0.5 # the last datagram's way to the far side
	for i in "${!UR_CASES[@]}"; do
		p=$((port + i))
		line=$(grep -E "^${UR_CASES[$i]} port=$p " "$out")
		n=$(grep -cE "^arrived [a-z]+ $p\$" "$ARRIVED")
		done_ok=0
		[[ $line =~ connect=(0|-)\ send=([0-9]+|-)$ ]] && done_ok=1
		if [ "$want" = allow ] && [ "$done_ok" = 1 ] && [ "$n" -gt 0 ]; then
			fw_ok "$label ${UR_CASES[$i]} to an allowed address completes and arrives"
		elif [ "$want" = deny ] && [ "$done_ok" = 0 ] && [ -n "$line" ] && [ "$n" = 0 ]; then
			fw_ok "$label ${UR_CASES[$i]} to a denied address fails, nothing arrives"
		else
			fw_not_ok "$label ${UR_CASES[$i]}: want $want (${line:-no result}; $n arrived)"
		fi
	done
}
# uring_run NAME [--sqpoll] ADDR4 ADDR6 PORT: the probe in a run whose
# policy allows 198.51.100.10 and 2001:db8::10 only
uring_run() {
	local name=$1
	shift
	fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "$name-$FW_ID" \
		--allow 198.51.100.10 --allow 2001:db8::10 -- "$URING_PROBE" send "$@" \
		>"$FW_TMP/$name.out" 2>&1
	sed 's/^/# /' "$FW_TMP/$name.out"
}

# uring_outside NAME [--sqpoll] ADDR4 ADDR6 PORT: the run makes the
# sockets and passes them to the probe outside it, which sends and
# connects on them: a task of no sandbox's cgroup on a sandbox's sockets,
# where an io-wq worker or the SQPOLL thread is when it is a kernel thread
# (before 5.12, and on 5.10 stable before 5.10.162)
uring_outside() {
	local name=$1 pid
	shift
	rm -f "$FW_TMP/$name.sock"
	fw_ns "$NS_POD" timeout 60 "$URING_PROBE" send --from "$FW_TMP/$name.sock" "$@" >"$FW_TMP/$name.out" 2>&1 &
	pid=$!
	fw_eventually 5 test -S "$FW_TMP/$name.sock"
	fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "$name-$FW_ID" \
		--allow 198.51.100.10 --allow 2001:db8::10 -- "$URING_PROBE" pass "$FW_TMP/$name.sock"
	wait "$pid"
	sed 's/^/# /' "$FW_TMP/$name.out"
}

uring_run ua 198.51.100.10 2001:db8::10 7700
uring_cases "io-wq (IOSQE_ASYNC):" allow "$FW_TMP/ua.out" 7700
uring_run ud 203.0.113.10 2001:db8::66 7710
uring_cases "io-wq (IOSQE_ASYNC):" deny "$FW_TMP/ud.out" 7710
uring_run sa --sqpoll 198.51.100.10 2001:db8::10 7720
uring_cases "SQPOLL:" allow "$FW_TMP/sa.out" 7720
uring_run sd --sqpoll 203.0.113.10 2001:db8::66 7730
uring_cases "SQPOLL:" deny "$FW_TMP/sd.out" 7730
uring_outside oa 198.51.100.10 2001:db8::10 7740
uring_cases "a task of no sandbox on the run's sockets:" allow "$FW_TMP/oa.out" 7740
uring_outside od 203.0.113.10 2001:db8::66 7750
uring_cases "a task of no sandbox on the run's sockets:" deny "$FW_TMP/od.out" 7750

fw_summary
