# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh.
# --- cgroup2 for process sandboxes (cgroup.sh, run-caps.sh, source-route.sh)
# fw_cg_mount DIR: cgroup2 at DIR with nsdelegate, as systemd mounts it (a
# cgroup namespace is then a delegation boundary, which `fastwall run`
# needs for a root command). nsdelegate is a flag of the hierarchy, not of
# one mount: fw_cg_umount takes it off again when the machine did not have
# it before. fw_cg_flags DIR OPTIONS remounts with exactly OPTIONS (mount(8)
# would add the ones it finds).
FW_CG_NSDELEGATE_WAS=$(grep -cE ' - cgroup2 [^ ]+ [^ ]*nsdelegate' /proc/self/mountinfo || true)
fw_cg_flags() {
	"$FW_PY" -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT = 32
if libc.mount(b"none", sys.argv[1].encode(), b"cgroup2", MS_REMOUNT, sys.argv[2].encode()):
    sys.exit("remount: errno %d" % ctypes.get_errno())' "$1" "$2"
}
fw_cg_mount() {
	mkdir -p "$1"
	mount -t cgroup2 -o nsdelegate none "$1" || fw_die "can't mount cgroup2 at $1"
	grep -qE " $1 [^ ]+ - cgroup2 [^ ]+ [^ ]*nsdelegate" /proc/self/mountinfo ||
		fw_die "cgroup2 at $1 has no nsdelegate"
}
fw_cg_umount() {
	mountpoint -q "$1" || return 0
	[ "$FW_CG_NSDELEGATE_WAS" = 0 ] && fw_cg_flags "$1" ""
	umount "$1"
	rmdir "$1" 2>/dev/null
}
# fw_cg_teardown CG MNT: kills what is left in the process sandboxes'
# parent cgroup CG, stops fastwalld, takes its programs off, removes CG
# once empty and unmounts MNT (fw_cg_umount).
fw_cg_teardown() {
	local cg=$1
	[ -w "$cg/cgroup.kill" ] && echo 1 >"$cg/cgroup.kill"
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	if [ -d "$cg" ]; then
		for _ in $(seq 50); do
			[ "$(awk '/populated/ { print $2 }' "$cg/cgroup.events")" = 0 ] && break
			sleep 0.1
		done
		find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	fw_cg_umount "$2"
}
