# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by tests/vm/run.sh (its helpers, topology and config; fastwalld
# stopped): process sandboxes on this kernel. fastwalld starts with a
# processes section, attaches the cgroup programs to a cgroup of this run,
# and `fastwall run` puts commands under a policy: TCP connect allowed and
# denied (connect4/6), sends and connects through io_uring (io-wq and
# SQPOLL, tests/vm/uring_probe.c), DNS to a resolver nowhere answered by the proxy
# (the socket-layer redirect: connect4 to the proxy, recvmsg4 back; dig,
# which binds first, in two runs at once), a non-root
# member of the run group, and the end of a run whose launcher was
# SIGKILLed. bash's /dev/tcp is the client, as in run.sh: no python.
# Leaves fastwalld stopped and the cgroup removed.

echo "# 6b. process sandboxes: the cgroup programs and fastwall run"
T_PROCS=$SECONDS
CGP=fastwall-$ID
# the guests mount cgroup2 at /sys/fs/cgroup; a hybrid host has it apart
CGROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
CGDIR=$CGROOT/$CGP
RUNSOCK=$TMP/run.sock
RUN_GID=47311

# prun NAME [fastwall run OPTIONS...] -- CMD...: fastwall run in the pod
prun() {
	local name=$1
	shift
	in_ns "$POD" "$FASTWALL" run --socket "$RUNSOCK" --name "$name-$ID" "$@"
}
# connect_to HOST: an HTTP exchange over /dev/tcp, from within a run
# shellcheck disable=SC2016 # expanded by the inner bash
CONNECT='exec 3<>"/dev/tcp/$0/80" && printf "GET / HTTP/1.0\r\n\r\n" >&3 && read -r l <&3 && [[ $l == HTTP/1.* ]]'
# shellcheck disable=SC2317 # called through check, which shellcheck does not follow
denied_eperm() { # NAME HOST ALLOW: the connect fails at once with EPERM
	! prun "$1" --allow "$3" -- timeout 5 bash -c "$CONNECT" "$2" 2>"$TMP/eperm" &&
		grep -q 'Operation not permitted' "$TMP/eperm"
}
# shellcheck disable=SC2317
run_gone() { # NAME: no subject, no cgroup
	! in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" subjects 2>/dev/null | grep -qE "^[0-9]+ +$1-$ID " &&
		[ ! -d "$CGDIR/$1-$ID" ]
}
# shellcheck disable=SC2317
eventually() { # SECONDS CMD...
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		"${@:2}" && return 0
		read -rt 0.1 <> <(:) || true
	done
	return 1
}

if [ -z "$CGROOT" ]; then
	skip "process sandboxes" "no cgroup2 mount"
	for f in cg_hooks run_connect run_uring run_sockopt run_dns run_unpriv run_cleanup; do feature "$f" "not_run"; done
	return 0
fi
printf 'processes:\n  cgroup_root: %s\n  cgroup_parent: %s\n  socket: %s\n  run_group: %s\n' \
	"$CGROOT" "$CGP" "$RUNSOCK" "$RUN_GID" >>"$CFG"
start_daemon
if log_has "process sandboxes: cgroup programs on $CGDIR" 60; then
	ok "fastwalld attaches the cgroup programs to $CGP"
else
	not_ok "fastwalld attaches the cgroup programs to $CGP"
	grep -E 'cgroup|error' "$LOG" | tail -5 | sed 's/^/#   | /'
fi

rc=0
check "run: allowed tcp4 connect to 198.51.100.10:80" \
	prun ok4 --allow 198.51.100.10 -- timeout 10 bash -c "$CONNECT" 198.51.100.10 || rc=1
check "run: default-denied tcp4 connect to 203.0.113.10:80 fails with EPERM" \
	denied_eperm no4 203.0.113.10 198.51.100.10 || rc=1
check "run: allowed tcp6 connect to [2001:db8::10]:80" \
	prun ok6 --allow 2001:db8::10 -- timeout 10 bash -c "$CONNECT" 2001:db8::10 || rc=1
check "run: default-denied tcp6 connect to [2001:db8::66]:80 fails with EPERM" \
	denied_eperm no6 2001:db8::66 2001:db8::10 || rc=1
if [ "$rc" = 0 ]; then feature run_connect yes; else feature run_connect no; fi

# io_uring: the kernel may run a sendmsg or connect from another task than
# the command's, an io-wq worker (IOSQE_ASYNC) or the SQPOLL thread:
# kernel threads in the root cgroup before 5.12, io threads of the
# submitter since. $BUILD/tests/uring_probe sends an unconnected UDP
# datagram, connects TCP, connects UDP and sends, v4 and v6; a packet
# socket in the internet counts every SYN and datagram to its ports. The
# same on sockets a run passes to a task outside it: the socket's sandbox
# decides
UR_CASES=(sendmsg-udp4 sendmsg-udp6 connect-tcp4 connect-tcp6 connect-udp4 connect-udp6)
# uring_cases LABEL WANT OUT PORT: WANT allow: each case completes and
# arrives; deny: none succeeds, nothing arrives. Counts UR_HELD.
uring_cases() {
	local label=$1 want=$2 out=$3 port=$4 i p line n done_ok
	read -rt 1 <> <(:) || true # the last datagram's way to the far side
	for i in "${!UR_CASES[@]}"; do
		p=$((port + i))
		line=$(grep -E "^${UR_CASES[$i]} port=$p " "$out")
		n=$(grep -cE "^arrived [a-z]+ $p\$" "$TMP/arrived")
		done_ok=0
		[[ $line =~ connect=(0|-)\ send=([0-9]+|-)$ ]] && done_ok=1
		if [ "$want" = allow ] && [ "$done_ok" = 1 ] && [ "$n" -gt 0 ]; then
			ok "run: $label ${UR_CASES[$i]} to an allowed address completes and arrives"
			UR_HELD=$((UR_HELD + 1))
		elif [ "$want" = deny ] && [ "$done_ok" = 0 ] && [ -n "$line" ] && [ "$n" = 0 ]; then
			ok "run: $label ${UR_CASES[$i]} to a denied address fails, nothing arrives"
			UR_HELD=$((UR_HELD + 1))
		else
			not_ok "run: $label ${UR_CASES[$i]}: want $want (${line:-no result}; $n arrived)"
		fi
	done
}
# uring_run NAME [--sqpoll] ADDR4 ADDR6 PORT: the probe in a run that
# allows 198.51.100.10 and 2001:db8::10 only
uring_run() {
	local name=$1
	shift
	prun "$name" --allow 198.51.100.10 --allow 2001:db8::10 -- \
		"$BUILD/tests/uring_probe" send --wait 3000 "$@" >"$TMP/$name.out" 2>&1
	sed 's/^/# /' "$TMP/$name.out"
}
# uring_outside NAME [--sqpoll] ADDR4 ADDR6 PORT: the run makes the
# sockets and passes them to the probe outside it, which sends and
# connects on them: a task of no sandbox on a sandbox's sockets, where an
# io-wq worker or the SQPOLL thread is when it is a kernel thread (before
# 5.12; on 5.10 stable before 5.10.162, which took 5.15's io_uring)
uring_outside() {
	local name=$1 pid
	shift
	rm -f "$TMP/$name.sock"
	in_ns "$POD" timeout 120 "$BUILD/tests/uring_probe" send --wait 3000 --from "$TMP/$name.sock" "$@" \
		>"$TMP/$name.out" 2>&1 &
	pid=$!
	eventually 20 test -S "$TMP/$name.sock"
	prun "$name" --allow 198.51.100.10 --allow 2001:db8::10 -- \
		"$BUILD/tests/uring_probe" pass "$TMP/$name.sock"
	wait "$pid"
	sed 's/^/# /' "$TMP/$name.out"
}
UR_HELD=0
in_ns "$INET" "$BUILD/tests/uring_probe" capture --ports 7700-7759 \
	--ready "$TMP/capture.ready" >"$TMP/arrived" 2>&1 &
UR_CAP=$!
if eventually 20 test -e "$TMP/capture.ready"; then
	uring_run ua 198.51.100.10 2001:db8::10 7700
	uring_cases "io-wq (IOSQE_ASYNC):" allow "$TMP/ua.out" 7700
	uring_run ud 203.0.113.10 2001:db8::66 7710
	uring_cases "io-wq (IOSQE_ASYNC):" deny "$TMP/ud.out" 7710
	uring_run sa --sqpoll 198.51.100.10 2001:db8::10 7720
	uring_cases "SQPOLL:" allow "$TMP/sa.out" 7720
	uring_run sd --sqpoll 203.0.113.10 2001:db8::66 7730
	uring_cases "SQPOLL:" deny "$TMP/sd.out" 7730
	uring_outside oa 198.51.100.10 2001:db8::10 7740
	uring_cases "a task of no sandbox on the run's sockets:" allow "$TMP/oa.out" 7740
	uring_outside od 203.0.113.10 2001:db8::66 7750
	uring_cases "a task of no sandbox on the run's sockets:" deny "$TMP/od.out" 7750
else
	not_ok "uring_probe capture listens in the internet"
	sed 's/^/#   | /' "$TMP/arrived"
fi
kill "$UR_CAP" 2>/dev/null
wait "$UR_CAP" 2>/dev/null
feature run_uring "$UR_HELD/36"

# the socket options that put a source route (or any IP option) on a
# run's packets are refused by cgroup/setsockopt, which on 5.10 cannot
# walk the task's cgroup ancestors (the loader picks the form); outside
# a run the kernel takes both, from any user
so_in=$(prun so -- "$BUILD/tests/uring_probe" sockopts 2001:db8::66 2>&1)
so_out=$(in_ns "$POD" "$BUILD/tests/uring_probe" sockopts 2001:db8::66 2>&1)
if [ "$so_in" = "rthdr=EPERM ipopts=EPERM" ] && [ "$so_out" = "rthdr=0 ipopts=0" ]; then
	ok "run: IPV6_RTHDR and IP_OPTIONS refused with EPERM (outside a run: taken)"
	feature run_sockopt yes
else
	not_ok "run: IPV6_RTHDR and IP_OPTIONS refused with EPERM (in a run: $so_in; outside: $so_out)"
	feature run_sockopt no
fi

# DNS to 192.0.2.99 (nothing there), glibc's resolver (getent; a
# resolv.conf of this run's in a mount namespace): the connect4 hook sends
# it to the run's own proxy address, recvmsg4 makes the answer
# come from 192.0.2.99 (glibc drops it otherwise); what it learns opens the
# address for this run.
echo "nameserver 192.0.2.99" >"$TMP/resolv.conf"
# shellcheck disable=SC2016 # expanded by the inner bash
out=$(in_ns "$POD" unshare -m bash -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' \
	"$TMP/resolv.conf" "$FASTWALL" run --socket "$RUNSOCK" --name "dns-$ID" \
	--allow learned.example.com -- \
	bash -c 'getent ahostsv4 learned.example.com && '"$CONNECT" 203.0.113.10 2>&1)
if [[ $out == *203.0.113.10* ]]; then
	ok "run: DNS to 192.0.2.99 answered through the proxy, the learned address reachable"
	feature run_dns yes
else
	not_ok "run: DNS to 192.0.2.99 answered through the proxy, the learned address reachable"
	printf '%s\n' "$out" | sed 's/^/#   | /'
	grep -E 'dns-' "$LOG" | tail -4 | sed 's/^/#   | /'
	feature run_dns no
fi

# sockets bound before connect(), as dig's are: the hooks send the query
# to the run's own proxy address, which the proxy attributes it by,
# whatever the source. Two runs at once with other names: each is
# answered and learns its own; neither may address the other's proxy
# address (bash's /dev/udp connects).
in_run() { # NAME CMD...: a process joins run NAME's cgroup
	local cg=$CGDIR/$1-$ID
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	in_ns "$POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
# shellcheck disable=SC2317
dig_is() { # NAME WANT DIG-ARGS...: dig's A records, or its status, is WANT
	local name=$1 want=$2 got
	shift 2
	got=$(in_run "$name" dig +time=3 +tries=1 "$@" 2>&1)
	if [[ $got == *"status: NOERROR"* ]]; then
		got=$(printf '%s\n' "$got" | awk '!/^;/ && $4 == "A" { print $5 }')
	else
		got=$(printf '%s\n' "$got" | sed -n 's/.*status: \([A-Z]*\).*/\1/p' | head -1)
	fi
	echo "got '$got', want '$want'"
	[ "$got" = "$want" ]
}
# shellcheck disable=SC2317
proxy_alias() { # NAME: 127.254.0.0/16 + the run's subject id
	local id
	id=$(in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" subjects |
		awk -v n="$1-$ID" '$2 == n { print $1; exit }')
	[ -n "$id" ] && echo "127.254.$((id >> 8)).$((id & 255))"
}
# shellcheck disable=SC2317
udp_eperm() { # NAME HOST PORT: connect() of a UDP socket fails with EPERM
	# shellcheck disable=SC2016 # expanded by the inner bash
	! in_run "$1" timeout 5 bash -c 'exec 3<>"/dev/udp/$0/$1"' "$2" "$3" 2>"$TMP/eperm" &&
		grep -q 'Operation not permitted' "$TMP/eperm"
}
nsenter --net="/run/netns/$POD" "$FASTWALL" run --socket "$RUNSOCK" --name "dg-$ID" \
	--allow learned.example.com -- sleep 900 &
DG=$!
nsenter --net="/run/netns/$POD" "$FASTWALL" run --socket "$RUNSOCK" --name "dh-$ID" \
	--allow denied.example.com --allow 127.0.0.0/8 -- sleep 900 &
DH=$!
eventually 20 test -s "$CGDIR/dg-$ID/cgroup.procs"
eventually 20 test -s "$CGDIR/dh-$ID/cgroup.procs"
check "run: dig @192.0.2.53 (bound before connect) answered through the proxy" \
	dig_is dg 203.0.113.10 @192.0.2.53 learned.example.com
check "run: dig +tcp @192.0.2.53 too" \
	dig_is dg 203.0.113.10 +tcp @192.0.2.53 learned.example.com
check "run: dig for a name the run's policy does not allow: NXDOMAIN" \
	dig_is dg NXDOMAIN @192.0.2.53 denied.example.com
check "a second run at once, another policy: dig gets its own name" \
	dig_is dh 198.51.100.10 @192.0.2.54 denied.example.com
check "the second run: dig +tcp for the first run's name: NXDOMAIN" \
	dig_is dh NXDOMAIN +tcp @192.0.2.54 learned.example.com
check "each run learned its own name only (fastwall leases)" \
	sh -c "out=\$(nsenter --net=/run/netns/$POD '$FASTWALL' --bpffs '$BPFFS' leases) &&
		echo \"\$out\" | grep -qE '^dg-$ID +203.0.113.10 ' &&
		echo \"\$out\" | grep -qE '^dh-$ID +198.51.100.10 ' &&
		! echo \"\$out\" | grep -qE '^dg-$ID +198.51.100.10 |^dh-$ID +203.0.113.10 '"
check "the first run reaches the address it learned" \
	in_run dg timeout 10 bash -c "$CONNECT" 203.0.113.10
# the second run's policy allows loopback: only the alias rule refuses
DG_ALIAS=$(proxy_alias dg)
check "the second run may not send to the first's proxy address ($DG_ALIAS): EPERM" \
	udp_eperm dh "${DG_ALIAS:-127.254.255.254}" 15353
check "nor to its own, itself: EPERM" \
	udp_eperm dh "$(proxy_alias dh || echo 127.254.255.253)" 15353
# (their commands outlast any guest's pace; the launchers go too, should a
# command have left its cgroup)
kill "$(head -1 "$CGDIR/dg-$ID/cgroup.procs")" "$(head -1 "$CGDIR/dh-$ID/cgroup.procs")" 2>/dev/null
kill "$DG" "$DH" 2>/dev/null
wait "$DG" "$DH" 2>/dev/null

# a caller other than root, in the run group: fastwalld makes its cgroup
# and moves it in (pidfd: SO_PEERPIDFD on 6.5 and later, pidfd_open before)
chmod 711 "$TMP"
uout=$(in_ns "$POD" setpriv --reuid=65534 --regid=65534 --groups=$RUN_GID -- \
	"$FASTWALL" run --socket "$RUNSOCK" --name "u-$ID" --allow 198.51.100.10 -- \
	bash -c 'id -u && '"$CONNECT" 198.51.100.10 2>&1)
urc=$?
chmod 700 "$TMP"
if [ "$urc" = 0 ] && [[ $uout == 65534* ]]; then
	ok "run as uid 65534 (run group): allowed tcp4 connect"
	feature run_unpriv yes
else
	not_ok "run as uid 65534 (run group): allowed tcp4 connect"
	printf '%s\n' "$uout" | sed 's/^/#   | /'
	feature run_unpriv no
fi

# SIGKILL of the launcher and its command: inotify on cgroup.events (or
# the launcher's closed connection) ends the run, no periodic check
# nsenter execs fastwall run: $! is the launcher
nsenter --net="/run/netns/$POD" "$FASTWALL" run --socket "$RUNSOCK" --name "k-$ID" -- sleep 60 &
K=$!
eventually 20 test -s "$CGDIR/k-$ID/cgroup.procs"
kill -KILL "$K" "$(head -1 "$CGDIR/k-$ID/cgroup.procs" 2>/dev/null)" 2>/dev/null
wait "$K" 2>/dev/null
if eventually 10 run_gone k && log_has "run k-$ID: ended \\((cgroup emptied|launcher gone)\\)" 1; then
	ok "SIGKILL of launcher and command: subject and cgroup removed"
	feature run_cleanup yes
else
	not_ok "SIGKILL of launcher and command: subject and cgroup removed"
	grep "run k-$ID" "$LOG" | sed 's/^/#   | /'
	feature run_cleanup no
fi

# stopped within a bound: a hang is a failure of this step, not of the VM
kill -TERM "$DAEMON"
if eventually 30 sh -c "! kill -0 $DAEMON 2>/dev/null"; then
	ok "fastwalld stops on SIGTERM with process sandboxes"
else
	not_ok "fastwalld stops on SIGTERM with process sandboxes"
	tail -5 "$LOG" | sed 's/^/#   | /'
	kill -KILL "$DAEMON"
fi
wait "$DAEMON" 2>/dev/null
DAEMON=""
# every program fastwalld attached, by its own count (bpftool can't list
# a cgroup's programs on every kernel): a hook this kernel lacks would
# have failed the attach, and its name is in the log
detached=$(in_ns "$POD" timeout 60 "$FASTWALLD" -c "$CFG" detach 2>&1 |
	sed -n 's/.*detached \([0-9]*\) cgroup programs.*/\1/p')
if [ "${detached:-0}" = 14 ]; then
	ok "all 14 cgroup programs were attached, and detach takes them off $CGP"
else
	not_ok "all 14 cgroup programs were attached, and detach takes them off $CGP (${detached:-0})"
	grep -E "can't attach|cgroup programs" "$LOG" | tail -5 | sed 's/^/#   | /'
fi
feature cg_hooks "${detached:-0}/14"
echo "# process sandboxes: $((SECONDS - T_PROCS))s"
sed -i '/^processes:/,$d' "$CFG"
find "$CGDIR" -depth -type d -exec rmdir {} + 2>/dev/null
