#!/usr/bin/env bash
# make vmtest: the BPF verdict table, the control-plane cost, the loader
# and an end-to-end scenario (tests/vm/run.sh) on several Debian kernels,
# each booted in qemu (TCG, no KVM) on the host's root shared read-only
# over 9p with a tmpfs overlay. Two VMs at a time; a VM that panics, hangs
# or doesn't boot is a failure, its console log kept under
# $BUILD/vmtest/logs/. The control-plane figures never fail a kernel.
#
#   scripts/vmtest/vmtest.sh [SERIES...]     (default: 5.10 6.1 6.12 6.18 7.x)
#
# Environment: KERNELS (same as the arguments), BUILD (build), VMTEST_CACHE
# (/var/cache/fastwall-vmtest), VMTEST_JOBS (2), VMTEST_TIMEOUT (seconds
# per VM, 1500: with the verdict tables in three rule forms a guest takes
# 440-760 s under TCG, two at a time on two cores; the limit catches a
# hang, not a slow run),
# VMTEST_MEM (1024 MiB), VMTEST_DOCS (docs/kernels.md; empty
# to leave it alone), VMTEST_CP_NOTE (a word printed beside the commit in
# the control-plane table, e.g. "before"), VMTEST_GUARD_NIC (1: the port
# guard's benchmark on two virtio-net NICs as well, tests/vm/guard-nic.sh;
# VMTEST_GUARD_NIC_ROUNDS, _DURATION and _FORMS go to it).
set -euo pipefail

VT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$VT_DIR/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
VMTEST_CACHE=${VMTEST_CACHE:-/var/cache/fastwall-vmtest}
VMTEST_JOBS=${VMTEST_JOBS:-2}
VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-1500}
VMTEST_MEM=${VMTEST_MEM:-1024}
VMTEST_DOCS=${VMTEST_DOCS-docs/kernels.md}
VMTEST_GUARD_NIC=${VMTEST_GUARD_NIC:-}
OUT=$BUILD/vmtest
LOGS=$OUT/logs
export VT_DIR ROOT BUILD VMTEST_CACHE VMTEST_TIMEOUT VMTEST_MEM OUT LOGS VMTEST_GUARD_NIC

# shellcheck source=scripts/vmtest/kernels.sh
. "$VT_DIR/kernels.sh"

host_deps() {
	local p missing=()
	for p in qemu-system-x86 busybox-static cpio kmod zstd xz-utils; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ "${#missing[@]}" -eq 0 ] && return 0
	echo "vmtest: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# run_one SERIES: prepare the kernel, boot it, run tests/vm/run.sh; writes
# $OUT/results/SERIES (key=value lines) and prints the kernel's line.
run_one() {
	local series=$1 res=$OUT/results/$1 t0 t1 tb kern console serial rc st p f s nic nicarg v x
	console=$LOGS/$series.console.log
	serial=$LOGS/$series.tests.log
	t0=$(date +%s%N)
	: >"$res"
	set +e
	(set -e; vt_prepare "$series") >"$LOGS/$series.prepare.log" 2>&1
	rc=$?
	set -e
	vt_locate "$series" 2>/dev/null || true
	if [ "$rc" -ne 0 ]; then
		printf 'series=%s\nstatus=prepare-failed\nkver=%s\npackage=%s\nversion=%s\npassed=0\nfailed=1\nskipped=0\nseconds=%s\n' \
			"$series" "${VT_KVER:-?}" "${VT_PKG:-?}" "${VT_VERSION:-?}" $((($(date +%s%N) - t0) / 1000000000)) >"$res"
		report_line "$res"
		return 0
	fi
	tb=$(date +%s%N)
	kern=$VT_KDIR/vmlinuz
	[ -e "$VT_KDIR/vmlinux" ] && kern=$VT_KDIR/vmlinux
	rm -f "$console" "$serial"
	# the guard benchmark's two NICs, joined by a hub inside qemu (no host
	# network): the flooder's and the pod's, told apart by their MACs
	nic=()
	nicarg=
	if [ "$VMTEST_GUARD_NIC" = 1 ]; then
		# shellcheck disable=SC2054 # qemu option values, comma-separated
		nic=(-netdev hubport,id=nf,hubid=0 -device virtio-net-pci,netdev=nf,mac=52:54:00:fa:57:01
			-netdev hubport,id=np,hubid=0 -device virtio-net-pci,netdev=np,mac=52:54:00:fa:57:02)
		nicarg="vmtest.guard_nic=1"
		for v in ROUNDS DURATION FORMS; do
			x=VMTEST_GUARD_NIC_$v
			x=${!x:-}
			# one word on the kernel command line: the forms comma-separated
			if [ -n "$x" ]; then nicarg+=" vmtest.guard_nic_${v,,}=${x// /,}"; fi
		done
	fi
	set +e
	timeout -k 5 "$VMTEST_TIMEOUT" qemu-system-x86_64 \
		-M pc -accel tcg,thread=multi -cpu max -smp 1 -m "$VMTEST_MEM" \
		-nodefaults -no-user-config -display none -vga none -no-reboot \
		-kernel "$kern" -initrd "$VT_KDIR/initramfs.cpio" \
		-append "console=ttyS0 quiet panic=-1 oops=panic mitigations=off rcupdate.rcu_expedited=1 vmtest.init=$VT_DIR/guest-init.sh vmtest.kdir=$VT_KDIR vmtest.cmd=${VMTEST_CMD:-$ROOT/tests/vm/run.sh} vmtest.build=$BUILD vmtest.dir=$ROOT $nicarg ${VMTEST_APPEND:-}" \
		-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
		-fsdev local,id=proj,path="$ROOT",security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=proj,mount_tag=project \
		"${nic[@]}" -serial "file:$console" -serial "file:$serial" </dev/null >"$LOGS/$series.qemu.log" 2>&1
	rc=$?
	set -e
	t1=$(date +%s%N)
	[ -e "$serial" ] && sed -i 's/\r$//' "$serial"
	st=ok
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		st=timeout
	elif ! grep -q '^VMTEST-EXIT=' "$serial" 2>/dev/null; then
		st=no-result
		grep -qE 'Kernel panic|end Kernel panic' "$console" 2>/dev/null && st=panic
	elif [ "$(sed -n "s/^VMTEST-EXIT=//p" "$serial")" != 0 ]; then
		st=tests-failed
	fi
	read -r p f s < <(awk '/^[0-9]+ passed, [0-9]+ failed/ { p = $1; f = $3; s = $5 + 0 } END { print p + 0, f + 0, s + 0 }' "$serial" 2>/dev/null || echo "0 0 0")
	[ "$st" = ok ] || [ "$f" -gt 0 ] || f=1
	{
		echo "series=$series"
		echo "status=$st"
		echo "kver=$VT_KVER"
		echo "package=$VT_PKG"
		echo "version=$VT_VERSION"
		echo "passed=$p"
		echo "failed=$f"
		echo "skipped=$s"
		echo "seconds=$(((t1 - t0 + 500000000) / 1000000000))"
		echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
		echo "vm_seconds=$(((t1 - tb + 500000000) / 1000000000))"
		echo "boot_seconds=$(sed -n 's/^# vmtest: .* boot took \([0-9.]*\)s$/\1/p' "$serial" 2>/dev/null | head -1)"
		echo "kernel_warnings=$(grep -cE 'WARNING:|BUG:|Oops|Call Trace' "$console" 2>/dev/null || true)"
		sed -n 's/^# feature \([a-z0-9_]*\) \(.*\)$/feature_\1=\2/p' "$serial" 2>/dev/null
		# the control-plane figures: "# cp add_r4 p50_us=8.1 ratio=2.3" -> cp_add_r4_p50_us=8.1 ...
		awk '/^# cp [a-z0-9_]+ / { for (i = 4; i <= NF; i++) if (split($i, kv, "=") == 2) print "cp_" $3 "_" kv[1] "=" kv[2] }' "$serial" 2>/dev/null
		# the guard on virtio-net: "# gnic xdp drops_core=1234 pass_pct=98.1" -> gnic_xdp_drops_core=1234 ...
		awk '/^# gnic [a-z0-9_]+ / { for (i = 4; i <= NF; i++) if (split($i, kv, "=") == 2) print "gnic_" $3 "_" kv[1] "=" kv[2] }' "$serial" 2>/dev/null
	} >"$res"
	report_line "$res"
	if [ "$st" != ok ] || [ "$f" -gt 0 ]; then
		grep -E '^not ok' "$serial" 2>/dev/null | sed "s/^/  $series: /" | head -20
		echo "  $series: logs ${console#"$ROOT"/}, ${serial#"$ROOT"/}"
	fi
}

field() { sed -n "s/^$2=//p" "$1" | head -1; }

report_line() {
	local r=$1
	printf '%-5s %-22s %-9s passed %3s  failed %2s  skipped %2s  %4ss\n' \
		"$(field "$r" series)" "$(field "$r" kver)" "$(field "$r" status)" "$(field "$r" passed)" \
		"$(field "$r" failed)" "$(field "$r" skipped)" "$(field "$r" seconds)"
	cp_line "$r"
	gnic_line "$r"
}

# the control-plane figures of one kernel, 16-rule policies: the kernel
# writes' p50 ratio to a plain array update (the whole operation's)
cp_line() {
	local r=$1 o line
	[ -n "$(field "$r" cp_plain_r16_p50_us)" ] || return 0
	line="      control plane, 16 rules (kernel writes x p50 plain update $(field "$r" cp_plain_r16_kw_p50_us) us; whole operation):"
	for o in add update remove rebind; do
		line+=" $o x$(field "$r" cp_${o}_r16_kw_ratio) (x$(field "$r" cp_${o}_r16_ratio))"
	done
	echo "$line, first start $(field "$r" cp_first_start_ms) ms"
}

# the guard benchmark on virtio-net of one kernel: drops per busy second of
# the guest's CPU and the trusted flow's pass rate, by form
gnic_line() {
	local r=$1 f line
	[ -n "$(field "$r" gnic_run_rounds)" ] || return 0
	line="      guard on virtio-net ($(field "$r" gnic_run_rounds) rounds; drops/s/core, pass %):"
	for f in xdp tc nft_dev nft_inet auto; do
		[ -n "$(field "$r" "gnic_${f}_drops_core")" ] || continue
		line+=" ${f//_/-} $(field "$r" "gnic_${f}_drops_core") ($(field "$r" "gnic_${f}_pass_pct") %)"
	done
	echo "$line"
}

if [ "${1:-}" = "--one" ]; then
	run_one "$2"
	exit 0
fi

[ "$(id -u)" = 0 ] || { echo "vmtest: run as root" >&2; exit 1; }
series=${*:-${KERNELS:-$VT_ALL_SERIES}}
for s in $series; do
	[ -n "${VT_SERIES[$s]:-}" ] || { echo "vmtest: unknown kernel '$s' (known: $VT_ALL_SERIES)" >&2; exit 2; }
done
for b in "$BUILD/fastwalld" "$BUILD/fastwall" "$BUILD/tests/bpf_verdicts" "$BUILD/tests/abi_migrate" \
	"$BUILD/tests/bpf_cgroup_verdicts" \
	"$BUILD/tests/cp_kernel" "$BUILD/tests/uring_probe" "$BUILD/bpf/egress.bpf.o"; do
	[ -e "$b" ] || { echo "vmtest: $b missing: make all $BUILD/tests/bpf_verdicts $BUILD/tests/bpf_cgroup_verdicts $BUILD/tests/abi_migrate $BUILD/tests/cp_kernel $BUILD/tests/uring_probe first" >&2; exit 2; }
done
if [ "$VMTEST_GUARD_NIC" = 1 ]; then
	for b in "$BUILD/tests/udpblast" "$BUILD/tests/udpsink"; do
		[ -e "$b" ] || { echo "vmtest: $b missing (VMTEST_GUARD_NIC=1): make $BUILD/tests/udpblast $BUILD/tests/udpsink first" >&2; exit 2; }
	done
fi

T0=$(date +%s)
host_deps
mkdir -p "$VMTEST_CACHE" "$LOGS" "$OUT/results"
# one run at a time per cache
exec 9>"$VMTEST_CACHE/.lock"
flock 9
rm -rf "$VMTEST_CACHE"/tmp.*
for s in $series; do rm -f "$OUT/results/$s" "$LOGS/$s".*; done
vt_apt_update
vt_images >/dev/null
# drop cached kernels that are no longer the newest of any series
keep=" "
for s in $VT_ALL_SERIES; do vt_locate "$s" 2>/dev/null && keep+="$VT_KVER "; done
for d in "$VMTEST_CACHE"/k/*; do
	[ -d "$d" ] || continue
	case $keep in *" ${d##*/} "*) ;; *) echo "vmtest: dropping old kernel ${d##*/} from the cache"; rm -rf "$d" ;; esac
done
echo "vmtest: kernels $series, $VMTEST_JOBS VMs at a time, ${VMTEST_TIMEOUT}s each"
# shellcheck disable=SC2086 # the series, one word each
printf '%s\n' $series | xargs -P "$VMTEST_JOBS" -I{} "$VT_DIR/vmtest.sh" --one {} || true
T1=$(date +%s)

echo
printf '%-6s %-24s %-22s %-12s %6s %6s %7s %7s\n' kernel release package-version status passed failed skipped seconds
bad=0
for s in $series; do
	r=$OUT/results/$s
	printf '%-6s %-24s %-22s %-12s %6s %6s %7s %7s\n' "$s" "$(field "$r" kver)" "$(field "$r" version)" \
		"$(field "$r" status)" "$(field "$r" passed)" "$(field "$r" failed)" "$(field "$r" skipped)" "$(field "$r" seconds)"
	[ "$(field "$r" status)" = ok ] && [ "$(field "$r" failed)" = 0 ] || bad=$((bad + 1))
done
for s in $series; do
	if [ -n "$(field "$OUT/results/$s" cp_plain_p50_us)" ]; then
		printf '%-6s %s\n' "$s" "$(cp_line "$OUT/results/$s" | sed 's/^ *//')"
	fi
	if [ -n "$(field "$OUT/results/$s" gnic_run_rounds)" ]; then
		printf '%-6s %s\n' "$s" "$(gnic_line "$OUT/results/$s" | sed 's/^ *//')"
	fi
done
echo "total $((T1 - T0))s; logs in ${LOGS#"$ROOT"/}/"
if [ -n "$VMTEST_DOCS" ]; then
	# every series with a result, this run's or an earlier one's
	have=$(for s in $VT_ALL_SERIES; do [ -s "$OUT/results/$s" ] && printf '%s ' "$s"; done; true)
	# shellcheck disable=SC2086 # the series, one word each
	"$VT_DIR/gen-docs.sh" "$OUT/results" $have >"$VMTEST_DOCS.new" && mv "$VMTEST_DOCS.new" "$VMTEST_DOCS"
	echo "vmtest: $VMTEST_DOCS regenerated"
fi
# the plain closing line CI reads
tp=0 tf=0 ts=0
for s in $series; do
	r=$OUT/results/$s
	tp=$((tp + $(field "$r" passed))) tf=$((tf + $(field "$r" failed))) ts=$((ts + $(field "$r" skipped)))
done
echo "vmtest: $tp passed, $tf failed, $ts skipped"
[ "$bad" -eq 0 ]
