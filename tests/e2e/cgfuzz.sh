#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Process sandboxes under random socket calls ($BUILD/tests/cgfuzz, from
# tests/fuzz/procsock/cgfuzz.c): fastwalld holds a static subject's cgroup
# to a policy (198.51.100.10 and 2001:db8::10 allowed, 198.51.100.20 and
# 2001:db8::20 on port 443, nothing else), the driver runs each input as
# an unprivileged process in that cgroup in the pod namespace, and an
# AF_PACKET socket on the internet side of the uplink judges every frame
# that arrives. A frame the policy does not allow, or whose IPv6 routing
# header or IPv4 source route names an address it does not allow, fails
# the run and keeps the input in $CGFUZZ_CRASHES.
#
# First the oracle's own check (a denied datagram from outside the
# sandbox must be caught), then the seeds in tests/fuzz/seeds/procsock,
# then CGFUZZ_SECONDS of fuzzing (default 20: the short run `make test`
# makes; `make cgfuzz` runs 1200). CGFUZZ_SEED=N repeats a run's
# mutations; CGFUZZ_CORPUS=DIR keeps and reuses the inputs it found.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require

CGFUZZ=$FW_BUILD/tests/cgfuzz
if [ ! -x "$CGFUZZ" ]; then
	make -s -C "$FW_ROOT" BUILD="$BUILD" "$BUILD/tests/cgfuzz" >/dev/null ||
		fw_die "can't build $CGFUZZ"
fi
SEEDS=${CGFUZZ_SEEDS:-$FW_ROOT/tests/fuzz/seeds/procsock}
CONTROL=$FW_ROOT/tests/fuzz/procsock/control
FUZZ_SECONDS=${CGFUZZ_SECONDS:-20}
# the inputs' uid: nobody, as under `fastwall run`; CGFUZZ_UID=0 runs them
# as root with every capability, as a process that joins a static
# subject's cgroup may (IPv4 source routes need CAP_NET_RAW)
FUZZ_UID=${CGFUZZ_UID:-65534}
CRASHES=${CGFUZZ_CRASHES:-$FW_BUILD/cgfuzz/crashes}
SEED=${CGFUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwfuzz-$FW_ID
CG=$CG_MNT/$CG_PARENT
mkdir -p "$CRASHES"
[ -n "${CGFUZZ_CORPUS:-}" ] && mkdir -p "$CGFUZZ_CORPUS"

fz_cleanup() {
	set +e
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_cleanup
}
trap fz_cleanup EXIT

fw_topology
# the second allowed host (port 443 only) beside the internet's others
ip -n "$NS_INET" addr add 198.51.100.20/32 dev lo
ip -n "$NS_INET" addr add 2001:db8::20/128 dev lo nodad
# ping sockets for the unprivileged child
fw_ns "$NS_POD" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
# with nsdelegate, as the other process-sandbox scripts mount it (a mount
# without it would take it off the hierarchy under them)
fw_cg_mount "$CG_MNT"

# no DNS proxy: its upstream queries would be the daemon's traffic on the
# uplink, and port 53 is then a port like any other
# the policy the oracle knows (cgfuzz.c), for both subjects
POLICY='    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.10 }
        - { action: allow, target: 198.51.100.20, ports: [443] }
        - { action: allow, target: "2001:db8::10" }
        - { action: allow, target: "2001:db8::20", ports: [443] }'
cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $FW_TMP/run.sock
subjects:
  - name: fuzz-$FW_ID
    cgroup: fuzz
$POLICY
  # the same policy for inputs run as root: keep_caps, or fastwalld would
  # hold the subject denying while they run (and rightly: root can leave)
  - name: fuzzroot-$FW_ID
    cgroup: fuzz-root
    keep_caps: true
$POLICY
EOF
fw_start_daemon || exit 1
check "fastwalld attached the cgroup programs to $CG_PARENT" \
	fw_wait_log "process sandboxes: cgroup programs on $CG" 1 2
for d in fuzz fuzz-root; do
	fw_eventually 5 test -d "$CG/$d" || fw_die "fastwalld did not make the subject's cgroup $d"
done
# the subject of the inputs' uid
fz_cgroup() { if [ "$FUZZ_UID" = 0 ]; then echo "$CG/fuzz-root"; else echo "$CG/fuzz"; fi; }

fuzz() { # ARGS...: the driver in the pod namespace, its output in $FW_TMP/fuzz.out
	fw_ns "$NS_POD" "$CGFUZZ" --cgroup "$(fz_cgroup)" --inet-ns "/run/netns/$NS_INET" \
		--ifname eth0 --uid "$FUZZ_UID" --crashes "$CRASHES" "$@" >"$FW_TMP/fuzz.out" 2>&1
}
show() { sed 's/^/#   /' "$FW_TMP/fuzz.out"; }
# CGFUZZ_VERBOSE=1: every call's result and every frame's verdict, shown
[ -n "${CGFUZZ_VERBOSE:-}" ] && export CGFUZZ_VERBOSE

# the oracle's own check: the same calls outside any sandbox put a denied
# datagram on the wire, and the capture must say so
fuzz --crashes "$FW_TMP" --unsandboxed "$CONTROL"
rc=$?
if [ "$rc" = 1 ] && grep -q 'VIOLATION.*does not allow' "$FW_TMP/fuzz.out"; then
	fw_ok "the oracle catches a denied datagram sent from outside the sandbox"
else
	fw_not_ok "the oracle catches a denied datagram sent from outside the sandbox (exit $rc)"
	show
fi

fuzz "$SEEDS"
rc=$?
[ -n "${CGFUZZ_VERBOSE:-}" ] && show
allowed=$(sed -n 's/.*frames seen, \([0-9]*\) judged and allowed.*/\1/p' "$FW_TMP/fuzz.out")
if [ "$rc" = 0 ]; then
	fw_ok "the seeds: no frame the policy denies reached the internet"
else
	fw_not_ok "the seeds: no frame the policy denies reached the internet (exit $rc)"
	show
fi
# (a run cut short by a violation prints no count)
[ "$rc" = 0 ] && check_ge "the seeds' allowed traffic arrived (the capture sees the sandbox)" "${allowed:-0}" 1
# as root with every capability too: IPv4 source routes need CAP_NET_RAW
if [ "$FUZZ_UID" != 0 ]; then
	FUZZ_UID=0 fuzz "$SEEDS"
	rc=$?
	if [ "$rc" = 0 ]; then
		fw_ok "the seeds as root: no frame the policy denies reached the internet"
	else
		fw_not_ok "the seeds as root: no frame the policy denies reached the internet (exit $rc)"
		show
	fi
fi

echo "# fuzzing for ${FUZZ_SECONDS}s with CGFUZZ_SEED=$SEED"
set -- "$SEEDS"
[ -n "${CGFUZZ_CORPUS:-}" ] && set -- "$@" --corpus "$CGFUZZ_CORPUS" "$CGFUZZ_CORPUS"
# its progress (every 10 s) as it goes
fw_ns "$NS_POD" "$CGFUZZ" --cgroup "$(fz_cgroup)" --inet-ns "/run/netns/$NS_INET" --ifname eth0 \
	--uid "$FUZZ_UID" --crashes "$CRASHES" --seconds "$FUZZ_SECONDS" --seed "$SEED" "$@" 2>&1 |
	tee "$FW_TMP/fuzz.out" | grep --line-buffered -E '^cgfuzz: ([0-9]+ s,|no violation)' | sed -u 's/^/# /'
rc=${PIPESTATUS[0]}
if [ "$rc" = 0 ]; then
	fw_ok "fuzzing ${FUZZ_SECONDS}s: no frame the policy denies reached the internet"
else
	fw_not_ok "fuzzing ${FUZZ_SECONDS}s: no frame the policy denies reached the internet (exit $rc)"
	show
	echo "# replay: CGFUZZ_SECONDS=0 with the crash file added to $SEEDS"
fi
check_eq "fastwalld is still running" "$(kill -0 "$FW_DAEMON_PID" 2>/dev/null && echo yes)" yes
# the inputs join their sandbox once they have dropped to their uid: the
# subject without keep_caps is never held denying on their account
check_fails "fastwalld never held the fuzzing subject denying" grep "held denying" "$FW_LOG"

fw_summary
