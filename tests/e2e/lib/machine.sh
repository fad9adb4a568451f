# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh: a Debian 12 machine booted with systemd-nspawn, systemd
# as its PID 1, in one of this run's network namespaces: the root is this
# run's copy of the cached debootstrap tarball (scripts/debian-rootfs.sh),
# the host's bpffs is bound in (the pins stay under this run's $BPFFS),
# and fw_machine runs a command inside it (nsenter into every namespace of
# its PID 1). fw_cleanup powers it off and removes the copy.

FW_MACHINE_ROOT=""
FW_MACHINE_PID="" # systemd-nspawn's
FW_MACHINE_LEADER="" # the machine's PID 1, as the host sees it

# Exits 77 (skipped) when this host can't boot a machine, fatal when the
# tarball can't be made.
fw_machine_require() {
	local t
	for t in systemd-nspawn debootstrap nsenter; do
		command -v "$t" >/dev/null || {
			echo "skip: $t not found (scripts/install-deps.sh)"
			exit 77
		}
	done
}

# fw_machine_unpack: this run's root from the cache (made on first use)
fw_machine_unpack() {
	local tar
	tar=$("$FW_ROOT/scripts/debian-rootfs.sh") || fw_die "no Debian root file system"
	FW_MACHINE_ROOT=$FW_TMP/machine
	mkdir -p "$FW_MACHINE_ROOT"
	tar -C "$FW_MACHINE_ROOT" --numeric-owner -xf "$tar" || fw_die "can't unpack $tar"
	# only what the tests start: no login prompt, nginx when asked
	chroot "$FW_MACHINE_ROOT" systemctl -q mask console-getty.service \
		e2scrub_reap.service systemd-logind.service 2>/dev/null || true
	chroot "$FW_MACHINE_ROOT" systemctl -q disable nginx.service 2>/dev/null || true
}

# fw_machine_boot NETNS: boots the machine in network namespace NETNS with
# every capability and bpf(2) allowed (fastwalld's own unit narrows them),
# and waits until systemd says the boot is done
fw_machine_boot() {
	systemd-nspawn -q -D "$FW_MACHINE_ROOT" --machine="fw-$FW_ID" --register=no --keep-unit \
		--boot --network-namespace-path="/run/netns/$1" --capability=all \
		--system-call-filter='bpf perf_event_open' --bind=/sys/fs/bpf \
		>"$FW_TMP/machine.console" 2>&1 </dev/null &
	FW_MACHINE_PID=$!
	if ! fw_eventually 20 fw_machine_find; then
		sed 's/^/  | /' "$FW_TMP/machine.console" >&2
		fw_die "the machine did not start"
	fi
	local state
	state=$(timeout 60 nsenter -t "$FW_MACHINE_LEADER" -a systemctl is-system-running --wait)
	case $state in
	running | degraded) ;;
	*) fw_die "the machine's boot ended '$state'" ;;
	esac
}

fw_machine_find() {
	FW_MACHINE_LEADER=$(pgrep -P "$FW_MACHINE_PID" -x systemd | head -n1)
	[ -n "$FW_MACHINE_LEADER" ] && [ -S "/proc/$FW_MACHINE_LEADER/root/run/systemd/private" ]
}

# fw_machine CMD...: runs CMD inside the machine
fw_machine() {
	nsenter -t "$FW_MACHINE_LEADER" -a "$@"
}

# fw_machine_host_pid PID: the host's pid of the machine's process PID
fw_machine_host_pid() {
	local p ns
	for p in $(pgrep --ns "$FW_MACHINE_LEADER" --nslist pid 2>/dev/null); do
		ns=$(sed -n 's/^NSpid:\t[0-9]*\t//p' "/proc/$p/status" 2>/dev/null)
		[ "$ns" = "$1" ] && { echo "$p"; return 0; }
	done
	return 1
}

# Powers the machine off (systemd stops its units), then waits for
# systemd-nspawn, SIGKILL after 20 s. Part of the caller's trap.
fw_machine_cleanup() {
	set +e
	if [ -n "$FW_MACHINE_PID" ] && kill -0 "$FW_MACHINE_PID" 2>/dev/null; then
		[ -n "$FW_MACHINE_LEADER" ] && kill -RTMIN+4 "$FW_MACHINE_LEADER" 2>/dev/null # poweroff
		for _ in $(seq 200); do
			kill -0 "$FW_MACHINE_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$FW_MACHINE_PID" 2>/dev/null
		wait "$FW_MACHINE_PID" 2>/dev/null
	fi
	FW_MACHINE_PID=""
	return 0
}
