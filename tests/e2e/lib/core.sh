# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# shellcheck disable=SC2034 # the run's names, for the other parts and the scripts
# Part of lib.sh: this run's names (id, namespaces, pin directory, temporary
# directory, daemon log and config), failing loudly, running in a namespace,
# and fw_cleanup, which removes everything the run created.

FW_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) # tests/e2e
FW_ROOT=$(cd "$FW_E2E_DIR/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) FW_BUILD=$BUILD ;; *) FW_BUILD=$FW_ROOT/$BUILD ;; esac
FASTWALLD=$FW_BUILD/fastwalld
FASTWALL=$FW_BUILD/fastwall
if [ -x /usr/bin/python3 ]; then FW_PY=/usr/bin/python3; else FW_PY=python3; fi
FW_PROBE=$FW_E2E_DIR/probe.py

FW_ID=$(printf '%x%s' $$ "$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')")
NS_POD=fwpod-$FW_ID
NS_INET=fwinet-$FW_ID
BPFFS=/sys/fs/bpf/fastwall-$FW_ID
FW_TMP=$(mktemp -d "/tmp/fastwall-$FW_ID.XXXXXX")
FW_LOG=$FW_TMP/fastwalld.log
FW_CFG=$FW_TMP/fastwalld.yaml
# this run's own monitor socket (see fw_own_sockets)
FW_MON_SOCK=$FW_TMP/monitor.sock
FW_NSS=()	     # namespaces we created
FW_PIDS=()	     # processes we started
FW_DAEMON_PID=""

fw_die() {
	echo "fatal: $*" >&2
	exit 1
}

# Under set -e a script ends at the first command that fails outside a
# check, and without this it would end in silence: say which one it was.
# Without set -e (a script that never sets it, a set +e stretch) a failure
# ends nothing and is expected: say nothing.
fw_on_err() {
	case $- in *e*) echo "fatal: line $2 of ${BASH_SOURCE[1]##*/} exited $1: $3" >&2 ;; esac
}
trap 'fw_on_err $? $LINENO "$BASH_COMMAND"' ERR

fw_require() {
	[ "$(id -u)" = 0 ] || fw_die "must run as root"
	{ [ -x "$FASTWALLD" ] && [ -x "$FASTWALL" ]; } ||
		fw_die "$FASTWALLD or $FASTWALL missing: run make all (BUILD=$BUILD)"
	for t in ip tc nsenter curl; do
		command -v "$t" >/dev/null || fw_die "$t not found"
	done
	mountpoint -q /sys/fs/bpf || fw_die "/sys/fs/bpf is not a bpffs mount"
}

# Runs a command in namespace $1 (nsenter keeps /sys/fs/bpf visible).
fw_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

fw_sb_ns() { echo "fwsb-$FW_ID-$1"; }

fw_cleanup() {
	local pid ns
	set +e
	for pid in $FW_DAEMON_PID "${FW_PIDS[@]}"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	for pid in $FW_DAEMON_PID "${FW_PIDS[@]}"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	# FW_KEEP_LOG=FILE keeps the daemon's log (with its exit) for a look
	[ -n "${FW_KEEP_LOG:-}" ] && [ -f "$FW_LOG" ] && cp "$FW_LOG" "$FW_KEEP_LOG"
	# anything else still running inside our namespaces, by pid
	for ns in "${FW_NSS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
	done
	for ns in "${FW_NSS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$BPFFS" ] && [ -d "$BPFFS" ] && rm -rf "$BPFFS"
	[ -n "$FW_TMP" ] && rm -rf "$FW_TMP"
	return 0
}
