#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Process sandboxes and source routes: a datagram goes where its headers
# send it, not where sendto() named. A sandboxed process that puts an IPv6
# routing header or an IPv4 source-route option on its datagrams, by a
# socket option or a control message, must not reach a denied address
# through it. The socket options are refused (EPERM, socket-option);
# what comes as a control message is judged at cgroup egress at every
# address it names (source-route). A capture in the simulated internet
# checks that nothing reaches the denied addresses, and that a route whose
# every address is allowed still goes out (the check judges, it does not
# refuse all).
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require

CG_MNT=/tmp/fastwall-sr-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
PROBE="$FW_E2E_DIR/routeprobe.py"
CAP=$FW_TMP/capture
OK4=198.51.100.10
BAD4=198.51.100.66
OK6=2001:db8::10
BAD6=2001:db8::66

sr_cleanup() {
	set +e
	[ -n "${CAP_PID:-}" ] && kill "$CAP_PID" 2>/dev/null
	[ -w "$CG/cgroup.kill" ] && echo 1 >"$CG/cgroup.kill"
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	if [ -d "$CG" ]; then
		for _ in $(seq 50); do
			[ "$(awk '/populated/ { print $2 }' "$CG/cgroup.events")" = 0 ] && break
			sleep 0.1
		done
		find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	fw_cg_umount "$CG_MNT"
	fw_cleanup
}
trap sr_cleanup EXIT

fw_topology
fw_serve_internet
fw_cg_mount "$CG_MNT"

# svc: a static subject whose processes an operator starts as root (they
# keep CAP_NET_RAW, which IPv4 source routes in a control message need)
cat >"$FW_CFG" <<EOF2
log_level: info
datapath:
  bpffs: $BPFFS
  events: { rate: 1000, burst: 1000 }
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
subjects:
  - name: svc-$FW_ID
    cgroup: svc
    keep_caps: true
    policy:
      egress:
        - { action: allow, target: $OK4 }
        - { action: allow, target: $OK6 }
EOF2
cat >"$FW_TMP/web.json" <<EOF2
{"defaultAction": "deny", "egress": [
  {"action": "allow", "target": "$OK4"},
  {"action": "allow", "target": "$OK6"}]}
EOF2

fw_start_daemon || exit 1
check "fastwalld attached the cgroup programs to $CG_PARENT" \
	fw_wait_log "process sandboxes: cgroup programs on $CG" 1 2

# everything the pod sends to the internet, from before the first probe
fw_ns "$NS_INET" "$FW_PY" "$FW_E2E_DIR/frames.py" capture --iface eth0 --out "$CAP" \
	--ready "$CAP.ready" --seconds 120 &
CAP_PID=$!
for _ in $(seq 100); do [ -e "$CAP.ready" ] && break; sleep 0.05; done

web() { fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "web-$FW_ID" \
	--policy "$FW_TMP/web.json" -- "$FW_PY" "$PROBE" "$@"; }
svc() { # as the operator's root process in the static subject's cgroup
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG/svc" \
		"$FW_PY" "$PROBE" "$@"
}
# outside any sandbox, the same calls (what the kernel does without fastwall)
node() { fw_ns "$NS_POD" "$FW_PY" "$PROBE" "$@"; }

check "control: a plain datagram to an allowed address goes out" web plain $OK6 9000 --want ok
check "IPV6_RTHDR (segment routing, first hop denied) is refused with EPERM" \
	web sockopt-rthdr $BAD6 $OK6 9000 --want EPERM
check "IPV6_2292RTHDR is refused with EPERM" web sockopt-2292 $BAD6 $OK6 9000 --want EPERM
check "IPV6_HOPOPTS is refused with EPERM" svc sockopt-hopopts --want EPERM
check "IP_OPTIONS (a loose source route) is refused with EPERM, even for root" \
	svc sockopt-ipopts $BAD4 $OK4 9000 --want EPERM
check_ge "fastwall subjects counts the refused options (socket-option)" \
	"$(fw_subject_counter "svc-$FW_ID" "drop socket-option")" 2
check "outside any sandbox the same IPV6_RTHDR is taken (the kernel allows it)" \
	node sockopt-rthdr $BAD6 $OK6 9001 --want ok

# control messages carry a route past the socket options: egress judges it
if node cmsg-rthdr $OK6 $OK6 9002 --want ok >/dev/null; then
	check "a type 2 routing header naming a denied first hop drops at egress (EPERM)" \
		web cmsg-rthdr $BAD6 $OK6 9000 --want send-EPERM
	check "a type 2 routing header whose every address is allowed goes out" \
		web cmsg-rthdr $OK6 $OK6 9003 --want ok
else
	echo "# this kernel refuses IPV6_RTHDR control messages (type 2 needs CONFIG_IPV6_MIP6)"
fi
check "root's IP_RETOPTS source route through a denied first hop drops at egress" \
	svc cmsg-retopts $BAD4 $OK4 9000 --want send-EPERM
check "root's IP_RETOPTS source route whose every address is allowed goes out" \
	svc cmsg-retopts $OK4 $OK4 9003 --want ok
check_ge "fastwall status counts the denied first hop (deny-cidr, default-deny)" \
	"$(($(fw_counter "drop default-deny") + $(fw_counter "drop deny-cidr")))" 1

# egress alone: with the setsockopt program taken off the cgroup, the
# routing headers are taken and egress is what stops them
SOID=$(bpftool cgroup show "$CG" 2>/dev/null | awk '$2 ~ /setsockopt$/ && $NF == "fw_cg_setsockopt" { print $1; exit }')
check "the setsockopt program is attached to $CG_PARENT" test -n "$SOID"
[ -n "$SOID" ] && bpftool cgroup detach "$CG" setsockopt id "$SOID"
check_eq "and it is off" "$(bpftool cgroup show "$CG" | grep -c fw_cg_setsockopt)" 0
check "without it, IPV6_RTHDR through a denied first hop drops at egress (EPERM)" \
	web sockopt-rthdr $BAD6 $OK6 9000 --want send-EPERM
check "without it, IPV6_2292RTHDR (type 0) is taken but inert: sent as addressed" \
	web sockopt-2292 $BAD6 $OK6 9000 --want ok
check "without it, IPV6_RTHDR naming a denied segment after an allowed first hop drops" \
	web sockopt-rthdr $OK6,$BAD6 $OK6 9000 --want send-EPERM
check "without it, IP_OPTIONS through a denied first hop drops at egress" \
	svc sockopt-ipopts $BAD4 $OK4 9000 --want send-EPERM
check_ge "fastwall status counts the denied segment (source-route)" \
	"$(fw_counter "drop source-route")" 1

# what arrived: nothing addressed to a denied host but the node's own probe
sleep 0.5
kill "$CAP_PID" 2>/dev/null
wait "$CAP_PID" 2>/dev/null
CAP_PID=
check "the capture saw the allowed datagrams" grep -qE "^6 [^ ]+ $OK6 nh=17 " "$CAP"
check "the capture saw the allowed IPv4 source route" grep -qE "^4 [^ ]+ $OK4 proto=17 " "$CAP"
check_eq "nothing reached $BAD6 but the one datagram sent from outside any sandbox" \
	"$(grep -cE "^6 [^ ]+ $BAD6 " "$CAP")" 1
check_eq "nothing reached $BAD4" "$(grep -cE "^4 [^ ]+ $BAD4 " "$CAP")" 0
fw_summary
