#!/bin/bash
# PID 1 after switch_root, on the host's userspace: mounts what a test
# needs, links the cached modules so the kernel can load veth, bridge,
# clsact, cls_bpf on demand, runs the command given on the kernel command
# line with its output on ttyS1, ends with "VMTEST-EXIT=N" there and
# powers off. Kernel command line parameters: vmtest.kdir (the cached
# kernel), vmtest.cmd, vmtest.dir (working directory), vmtest.build
# (exported as VMTEST_BUILD), vmtest.debug, vmtest.guard_nic and its
# _rounds, _duration, _forms (exported as VMTEST_GUARD_NIC...; the forms
# comma-separated).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
vt_kdir='' vt_cmd=true vt_dir=/ vt_build='' vt_debug=''
vt_guard_nic='' vt_guard_nic_rounds='' vt_guard_nic_duration='' vt_guard_nic_forms=''
read -r cmdline </proc/cmdline
for w in $cmdline; do
	case $w in vmtest.*=*) k=${w%%=*} && declare "vt_${k#vmtest.}=${w#*=}" ;; esac
done
t() { [ -n "${vt_debug:-}" ] && read -r up _ </proc/uptime && echo "guest-init: $* at ${up}s"; }
t started
# busybox is static: much cheaper to start under emulation than mount(8)
mount() { busybox mount "$@"; }
mkdir -p /dev/pts /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s fd/0 /dev/stdin
ln -s fd/1 /dev/stdout
ln -s fd/2 /dev/stderr
mount -t devpts -o newinstance,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=755 run /run
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# the checkout may live under a directory the mounts above just covered
# (a CI clone in /tmp): it is shared on its own too, mount it back
if [ ! -e "$vt_dir/tests/vm/run.sh" ]; then
	mkdir -p "$vt_dir"
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 project "$vt_dir"
fi
kver=$(</proc/sys/kernel/osrelease)
mkdir -p /usr/lib/modules
ln -sfn "$vt_kdir/lib/modules/$kver" "/usr/lib/modules/$kver"
echo vmtest >/proc/sys/kernel/hostname
t mounted
exec 3>/dev/ttyS1
cd "${vt_dir:-/}" || cd /
export VMTEST_BUILD=${vt_build:-}
export VMTEST_GUARD_NIC=$vt_guard_nic VMTEST_GUARD_NIC_ROUNDS=$vt_guard_nic_rounds \
	VMTEST_GUARD_NIC_DURATION=$vt_guard_nic_duration VMTEST_GUARD_NIC_FORMS=${vt_guard_nic_forms//,/ }
read -r up _ </proc/uptime
echo "# vmtest: kernel $kver, boot took ${up}s" >&3
$vt_cmd >&3 2>&1
rc=$?
echo "VMTEST-EXIT=$rc" >&3
exec 3>&-
echo o >/proc/sysrq-trigger
# PID 1 must not exit while the power-off completes (a panic otherwise)
/usr/bin/sleep 30 || /bin/sleep 30 || while :; do :; done
