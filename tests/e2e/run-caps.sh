#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The capabilities of a sandboxed process, over the real daemon. Root
# under `fastwall run` runs without the capabilities that leave a sandbox
# (in none of its sets, bounding set included), with no_new_privs, in a
# cgroup namespace of its own: it can't move itself into another cgroup
# (and so still may not reach what its policy denies), make a network
# namespace or a link, enter the namespaces of a process outside, mount
# cgroup2, use bpf() or read a process outside. With --keep-caps it keeps
# them (and can leave). On a cgroup2 hierarchy without nsdelegate a root
# run is refused before its command starts. A static subject whose cgroup
# holds a process that may leave it is held denying until that process is
# gone, and named in the log; keep_caps: true lets it be.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require

CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwcaps-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
PROBE_SOCK="$FW_E2E_DIR/sockprobe.py"
OUTSIDE=""

caps_cleanup() {
	set +e
	[ -n "$OUTSIDE" ] && kill "$OUTSIDE" 2>/dev/null
	[ -w "$CG/cgroup.kill" ] && echo 1 >"$CG/cgroup.kill"
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	fw_ns "$NS_POD" ip link del fwcap0 2>/dev/null
	mountpoint -q "$FW_TMP/mnt" && umount "$FW_TMP/mnt"
	if [ -d "$CG" ]; then
		for _ in $(seq 50); do
			[ "$(awk '/populated/ { print $2 }' "$CG/cgroup.events")" = 0 ] && break
			sleep 0.1
		done
		find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	fw_cg_umount "$CG_MNT" # the hierarchy as it was found
	fw_cleanup
}
trap caps_cleanup EXIT

fw_topology
fw_serve_internet
fw_cg_mount "$CG_MNT"

cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
subjects:
  - name: trusted-$FW_ID
    cgroup: trusted
    keep_caps: true
    policy: { egress: [{ action: allow, target: 203.0.113.10 }] }
  - name: held-$FW_ID
    cgroup: held
    policy: { egress: [{ action: allow, target: 203.0.113.10 }] }
EOF
fw_start_daemon || exit 1
mkdir -p "$CG/other"

# nsdelegate again: root in this cgroup namespace who mounts cgroup2
# without it (another test on the machine) clears it for everyone
nsd() { fw_cg_flags "$CG_MNT" nsdelegate; }
# after a failed check of a static subject: what fastwalld said of it
said() {
	[ "$FW_FAILED" = "$1" ] || grep -E "subject held-$FW_ID: |nsdelegate" "$FW_LOG" | tail -3 | sed 's/^/#   /'
}

run() { # [OPTIONS...] -- CMD...: fastwall run as root in the pod namespace
	fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "caps-$FW_ID" "$@"
}
probe() { "$FW_PY" "$PROBE_SOCK" "$@"; }

nsd
# the capability sets of a command (bounding, effective, permitted,
# ambient) ORed; has BIT: that capability is in one of them
# shellcheck disable=SC2016 # awk's $2
CAPS_ROOT=$(run -- awk '/^Cap(Bnd|Eff|Prm|Amb):/ { print $2 }' /proc/self/status)
# shellcheck disable=SC2016
CAPS_KEEP=$(run --keep-caps -- awk '/^Cap(Bnd|Eff|Prm|Amb):/ { print $2 }' /proc/self/status)
has() { # SETS BIT
	local m
	for m in $1; do
		[ $((0x$m >> $2 & 1)) = 1 ] && return 0
	done
	return 1
}
check_eq "fastwall run: root's command got its capability sets" "$(echo "$CAPS_ROOT" | wc -l)" 4
for c in SYS_ADMIN:21 NET_ADMIN:12 BPF:39 PERFMON:38 NET_RAW:13 SYS_MODULE:16 SYS_PTRACE:19 \
	SYS_RAWIO:17 SYS_BOOT:22; do
	check_fails "root under fastwall run has no CAP_${c%:*}, bounding set included" \
		has "$CAPS_ROOT" "${c#*:}"
done
check "... and keeps CAP_DAC_OVERRIDE and CAP_SETUID (root's ordinary work)" \
	sh -c "$(declare -f has); has '$CAPS_ROOT' 1 && has '$CAPS_ROOT' 7"
check "root under fastwall run has no_new_privs" run -- grep -qx 'NoNewPrivs:.1' /proc/self/status
check_eq "root under fastwall run sees its sandbox as the root of its cgroup namespace" \
	"$(run -- grep "^0::" /proc/self/cgroup)" "0::/"

nsd
# leaving the cgroup: into another cgroup, into the root cgroup; then a
# connect its policy denies says whether it is still held
# shellcheck disable=SC2016 # expanded by the inner sh
check_fails "root under fastwall run can't write another cgroup's cgroup.procs" \
	run -- sh -c 'echo $$ >"$1/cgroup.procs"' sh "$CG/other"
# shellcheck disable=SC2016
check_fails "root under fastwall run can't move itself into the root cgroup" \
	run -- sh -c 'echo $$ >"$1/cgroup.procs"' sh "$CG_MNT"
# shellcheck disable=SC2016
check "having tried both, it still may not reach 203.0.113.10" \
	run --allow 198.51.100.10 -- sh -c '
		echo $$ >"$1/other/cgroup.procs" 2>/dev/null
		echo $$ >"$2/cgroup.procs" 2>/dev/null
		exec "$3" "$4" tcp 203.0.113.10 80 --want EPERM' sh "$CG" "$CG_MNT" "$FW_PY" "$PROBE_SOCK"
check "... while what it allows passes" \
	run --allow 198.51.100.10 -- "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
# shellcheck disable=SC2016
check "a sub-cgroup of its own is still allowed, and held to the policy" \
	run --allow 198.51.100.10 -- sh -c '
		mkdir "$1/sub" && echo $$ >"$1/sub/cgroup.procs" &&
		exec "$2" "$3" tcp 203.0.113.10 80 --want EPERM' sh "$CG/caps-$FW_ID" "$FW_PY" "$PROBE_SOCK"

# a network path of its own, the namespaces and memory of others, BPF
sleep 300 &
OUTSIDE=$!
check_fails "root under fastwall run can't make a network namespace (unshare -n)" \
	run -- unshare -n true
check_fails "root under fastwall run can't add a link (ip link add)" \
	run -- ip link add fwcap0 type veth peer name fwcap1
check_fails "root under fastwall run can't enter the network namespace of a process outside" \
	run -- nsenter -t "$OUTSIDE" -n true
check_fails "root under fastwall run can't make a cgroup namespace of its own choosing" \
	run -- unshare -C true
mkdir -p "$FW_TMP/mnt"
check_fails "root under fastwall run can't mount cgroup2" \
	run -- mount -t cgroup2 none "$FW_TMP/mnt"
check_fails "root under fastwall run can't use bpf() (bpftool prog show)" \
	run -- bpftool prog show
check_fails "root under fastwall run can't read the environment of a process outside" \
	run -- cat "/proc/$OUTSIDE/environ"

# --keep-caps: what it re-opens
for c in SYS_ADMIN:21 NET_ADMIN:12 SYS_PTRACE:19; do
	check "with --keep-caps the command has CAP_${c%:*}" has "$CAPS_KEEP" "${c#*:}"
done
check_fails "with --keep-caps it still has no CAP_NET_RAW" has "$CAPS_KEEP" 13
check "with --keep-caps it has no_new_privs" \
	run --keep-caps -- grep -qx 'NoNewPrivs:.1' /proc/self/status
check "with --keep-caps it can make a network namespace" run --keep-caps -- unshare -n true
# shellcheck disable=SC2016
check "with --keep-caps it can move itself into another cgroup (out of the sandbox)" \
	run --keep-caps --allow 198.51.100.10 -- sh -c '
		echo $$ >"$1/cgroup.procs" && exec "$2" "$3" tcp 203.0.113.10 80 --want ok' \
	sh "$CG/other" "$FW_PY" "$PROBE_SOCK"
kill "$(cat "$CG/other/cgroup.procs")" 2>/dev/null

# without nsdelegate a cgroup namespace binds nothing: refused before CMD
fw_cg_flags "$CG_MNT" ""
rm -f "$FW_TMP/ran"
run -- touch "$FW_TMP/ran" 2>"$FW_TMP/nsd.err"
check_eq "without nsdelegate a root run is refused (125)" "$?" 125
check "... before its command ran" test ! -e "$FW_TMP/ran"
check "... saying why" grep -q "not mounted with nsdelegate" "$FW_TMP/nsd.err"
check "... and with --keep-caps it runs" run --keep-caps -- touch "$FW_TMP/ran"
fw_cg_flags "$CG_MNT" nsdelegate

# static subjects: processes an operator puts in their cgroups
contained() { # CGROUP CMD...: joins CGROUP, then as fastwall run holds root
	local cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec unshare --cgroup \
		setpriv --bounding-set=-all --inh-caps=-all -- "$@"' "$cg" "$@"
}
put() { # CGROUP CMD...: CMD (as root, all its capabilities) in CGROUP, in the background
	local cg=$1
	shift
	# shellcheck disable=SC2016
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@" &
	FW_PIDS+=("$!")
	PUT=$!
}
state() { fw_cli subjects | awk -v n="$1-$FW_ID" '$2 == n { print $3 }'; }
nsd
failed=$FW_FAILED
check_eq "static subject without keep_caps, nothing in its cgroup: active" "$(state held)" active
check "... a contained root process there reaches 203.0.113.10" \
	contained "$CG/held" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
put "$CG/trusted" sleep 300
T_PID=$PUT
put "$CG/held" sleep 300
H_PID=$PUT
check "a root shell with every capability joins it: held denying, the log names pid and capability" \
	fw_wait_log "subject held-$FW_ID: held denying: pid $H_PID in cgroup $CG/held has CAP_SYS_ADMIN" 1 12
check_eq "... fastwall subjects says denying" "$(state held)" denying
check "... its contained process may not reach 203.0.113.10 now" \
	contained "$CG/held" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check_eq "the subject with keep_caps: true stays active with the same process in it" \
	"$(state trusted)" active
check "... and its processes reach 203.0.113.10" \
	contained "$CG/trusted" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
check_eq "... its process was never named" "$(fw_log_count "subject trusted-$FW_ID: held")" 0
kill "$H_PID" "$T_PID"
check "once that process is gone the subject is active again" \
	fw_wait_log "subject held-$FW_ID: no process of cgroup $CG/held may leave it now: active again" 1 12
check "... and reaches 203.0.113.10" \
	contained "$CG/held" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
# root without capabilities still owns cgroup.procs: held unless in a
# cgroup namespace of its own (a reload checks at once)
put "$CG/held" setpriv --bounding-set=-all --inh-caps=-all -- sleep 300
H_PID=$PUT
fw_eventually 5 grep -qx "$H_PID" "$CG/held/cgroup.procs"
nsd
fw_reload
check "root without capabilities in the node's cgroup namespace: held too" \
	fw_wait_log "subject held-$FW_ID: held denying: pid $H_PID in cgroup $CG/held runs as root in the node's cgroup namespace" 1 2
check_eq "... fastwall subjects says denying" "$(state held)" denying
kill "$H_PID"
fw_wait_log "subject held-$FW_ID: no process .* active again" 2 12
put "$CG/held" unshare --cgroup setpriv --bounding-set=-all --inh-caps=-all -- sleep 300
H_PID=$PUT
fw_eventually 5 grep -qx "$H_PID" "$CG/held/cgroup.procs"
nsd
fw_reload
check_eq "a contained root process (as fastwall run holds one) leaves it active" \
	"$(state held)" active
check "... and it reaches 203.0.113.10" \
	contained "$CG/held" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
kill "$H_PID"
said "$failed"

printf 'processes: {}\nsubjects:\n  - { name: x, addresses: [192.0.2.9], keep_caps: true }\n' \
	>"$FW_TMP/bad1.yaml"
check_fails "fastwalld check refuses keep_caps on a subject without a cgroup" \
	"$FASTWALLD" -c "$FW_TMP/bad1.yaml" check
printf 'processes: {}\nsubjects:\n  - { name: x, cgroup: a, keep_caps: maybe }\n' >"$FW_TMP/bad2.yaml"
check_fails "fastwalld check refuses a keep_caps that is not a bool" \
	"$FASTWALLD" -c "$FW_TMP/bad2.yaml" check

fw_summary
