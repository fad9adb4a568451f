# shellcheck shell=bash
# Sourced by scripts/vmtest/vmtest.sh: Debian kernels by series, fetched
# through a private apt configuration (sources list, state and cache under
# $VMTEST_CACHE/apt), never the machine's own, and cached as vmlinuz, the
# few modules the tests need (decompressed, depmod'ed) and an initramfs.

# series -> "suite(s) | image package name pattern (extended regex)"
declare -A VT_SERIES=(
	[5.10]='bullseye-security|^linux-image-5\.10\.0-[0-9]+-amd64$'
	[6.1]='bookworm bookworm-security|^linux-image-6\.1\.0-[0-9]+-amd64$'
	[6.12]='bookworm-security|^linux-image-6\.12\.[0-9]+\+deb12-amd64$'
	[6.18]='trixie-backports|^linux-image-6\.18\.[0-9]+\+deb13-amd64$'
	[7.x]='trixie-backports|^linux-image-7\.[0-9]+\.[0-9]+\+deb13-amd64$'
)
VT_ALL_SERIES="5.10 6.1 6.12 6.18 7.x"

# Modules the guest needs: to boot (9p root, overlay) and for the tests.
VT_BOOT_MODS="virtio_pci virtio_mmio 9pnet_virtio 9p overlay"
VT_TEST_MODS="veth bridge sch_ingress cls_bpf act_bpf dummy sch_fq"
# and for the optional port-guard benchmark on virtio-net NICs
# (VMTEST_GUARD_NIC=1): the NIC driver and nftables, its rival (with
# the crc32c its libcrc32c dependency asks the crypto layer for)
VT_NIC_MODS="virtio_net nf_tables crc32c_generic"

# vt_mods: the modules this run wants in the cache
vt_mods() {
	if [ "${VMTEST_GUARD_NIC:-}" = 1 ]; then
		echo "$VT_BOOT_MODS $VT_TEST_MODS $VT_NIC_MODS"
	else
		echo "$VT_BOOT_MODS $VT_TEST_MODS"
	fi
}

# vt_has_mods KDIR: the cached kernel holds every module vt_mods names
# (a cache without a list holds the boot and test modules)
vt_has_mods() {
	local have m
	have=" $(cat "$1/mods" 2>/dev/null || echo "$VT_BOOT_MODS $VT_TEST_MODS") "
	for m in $(vt_mods); do
		[[ $have == *" $m "* ]] || return 1
	done
}

VT_APT=$VMTEST_CACHE/apt
VT_APT_OPTS=(
	-o "Dir::Etc::SourceList=$VT_APT/sources.list" -o "Dir::Etc::SourceParts=$VT_APT/empty"
	-o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$VT_APT/empty"
	-o "Dir::State=$VT_APT/state" -o "Dir::State::status=$VT_APT/state/status"
	-o "Dir::Cache=$VT_APT/cache" -o "Acquire::Languages=none"
	-o "APT::Architecture=amd64" -o "APT::Architectures=amd64" -o "Debug::NoLocking=1"
	-o "APT::Sandbox::User=root" -q
)
vt_apt_get() { apt-get "${VT_APT_OPTS[@]}" "$@"; }
vt_apt_cache() { apt-cache "${VT_APT_OPTS[@]}" "$@"; }

# The machine's Debian mirror (from its sources), reused for every suite.
vt_mirror() {
	local u
	u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE '(https?|file)://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ')
	echo "${u%/}"
}

vt_security_mirror() {
	local u
	u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE '(https?|file)://[^ ]+/debian-security/?( |$)' | head -1 | tr -d ' ')
	[ -n "$u" ] || u="$(vt_mirror)-security"
	echo "${u%/}"
}

# Writes the private sources list and refreshes its package lists when
# they are older than VMTEST_LISTS_MAX_AGE seconds (default 1 h).
vt_apt_update() {
	local m s k=/usr/share/keyrings/debian-archive-keyring.gpg stamp=$VT_APT/state/updated
	m=$(vt_mirror)
	s=$(vt_security_mirror)
	[ -n "$m" ] || { echo "vmtest: no Debian mirror in /etc/apt/sources.list(.d)" >&2; return 1; }
	mkdir -p "$VT_APT/empty" "$VT_APT/state/lists/partial" "$VT_APT/cache/archives/partial"
	[ -e "$VT_APT/state/status" ] || : >"$VT_APT/state/status"
	cat >"$VT_APT/sources.list.new" <<-EOS
		deb [signed-by=$k] $s bullseye-security main
		deb [signed-by=$k] $m bookworm main
		deb [signed-by=$k] $s bookworm-security main
		deb [signed-by=$k] $m trixie-backports main
	EOS
	if ! cmp -s "$VT_APT/sources.list.new" "$VT_APT/sources.list"; then
		mv "$VT_APT/sources.list.new" "$VT_APT/sources.list"
		rm -f "$stamp"
	else
		rm -f "$VT_APT/sources.list.new"
	fi
	if [ -e "$stamp" ] && [ $(($(date +%s) - $(stat -c %Y "$stamp"))) -lt "${VMTEST_LISTS_MAX_AGE:-3600}" ]; then
		return 0
	fi
	echo "vmtest: refreshing package lists from $m and $s"
	vt_apt_get update >"$VT_APT/update.log" 2>&1 || { cat "$VT_APT/update.log" >&2; return 1; }
	touch "$stamp"
}

# The image packages of every series with their versions and suites, one
# "package version suite" a line, from one apt-cache call.
vt_images() {
	local f=$VT_APT/images.txt re
	if [ ! -s "$f" ] || [ "$f" -ot "$VT_APT/state/updated" ]; then
		re=$(for s in $VT_ALL_SERIES; do printf '%s|' "${VT_SERIES[$s]#*|}"; done)
		re=${re%|}
		# shellcheck disable=SC2046
		vt_apt_cache madison $(vt_apt_cache pkgnames linux-image- | grep -E "$re") |
			awk -F' *[|] *' '{ split($3, a, " "); split(a[2], b, "/"); print $1, $2, b[1] }' >"$f.new"
		mv "$f.new" "$f"
	fi
	cat "$f"
}

# vt_resolve SERIES: prints "PACKAGE VERSION", the newest image package
# of that series in its suites.
vt_resolve() {
	local series=$1 spec suites re best="" bestv="" p v s
	spec=${VT_SERIES[$series]:-}
	[ -n "$spec" ] || { echo "vmtest: unknown kernel series '$series' (known: $VT_ALL_SERIES)" >&2; return 1; }
	suites=" ${spec%%|*} "
	re=${spec#*|}
	while read -r p v s; do
		[[ $p =~ $re && $suites == *" $s "* ]] || continue
		if [ -z "$bestv" ] || dpkg --compare-versions "$v" gt "$bestv"; then
			best=$p
			bestv=$v
		fi
	done < <(vt_images)
	[ -n "$best" ] || { echo "vmtest: no package for kernel $series in$suites" >&2; return 1; }
	echo "$best $bestv"
}

# vt_packages IMAGE: the packages that hold vmlinuz and modules (from 6.19
# on linux-image-* is a meta package over linux-binary/-modules/-base).
vt_packages() {
	local img=$1 kver=${1#linux-image-}
	local deps
	deps=$(vt_apt_cache depends "$img" 2>/dev/null | awk '/Depends:/ { print $2 }' |
		grep -E "^linux-(binary|modules|base)-$(printf '%s' "$kver" | sed 's/[.+]/\\&/g')$" || true)
	echo "$img${deps:+ ${deps//$'\n'/ }}"
}

# vt_locate SERIES: sets VT_PKG, VT_VERSION, VT_KVER (uname -r) and
# VT_KDIR (its cache directory) for the newest kernel of SERIES.
vt_locate() {
	local r
	r=$(vt_resolve "$1") || return 1
	VT_PKG=${r% *}
	VT_VERSION=${r#* }
	VT_KVER=${VT_PKG#linux-image-}
	VT_KDIR=$VMTEST_CACHE/k/$VT_KVER
}

# vt_prepare SERIES: makes $VMTEST_CACHE/k/KVER (vmlinuz or vmlinux,
# lib/modules, initramfs.cpio, package and version files) unless it is
# there already. Run it under set -e.
vt_prepare() {
	local series=$1 tmp x m f rel
	vt_locate "$series"
	if [ -e "$VT_KDIR/.complete" ] && [ "$(cat "$VT_KDIR/version")" = "$VT_VERSION" ] &&
		{ [ -e "$VT_KDIR/vmlinux" ] || [ -e "$VT_KDIR/vmlinuz" ]; } && vt_has_mods "$VT_KDIR"; then
		# a changed initramfs-init only needs a new initramfs
		# shellcheck disable=SC2153 # VT_DIR: set by vmtest.sh, which sources this file
		if [ "$VT_DIR/initramfs-init" -nt "$VT_KDIR/initramfs.cpio" ]; then
			vt_initramfs "$VT_KDIR" "$VT_KDIR/boot.order"
		fi
		return 0
	fi
	rm -rf "$VT_KDIR"
	tmp=$(mktemp -d "$VMTEST_CACHE/tmp.XXXXXX")
	x=$tmp/x
	mkdir -p "$x"
	# shellcheck disable=SC2046
	(cd "$tmp" && vt_apt_get download $(vt_packages "$VT_PKG")) >"$tmp/download.log" 2>&1 ||
		{ cat "$tmp/download.log" >&2; rm -rf "$tmp"; return 1; }
	for f in "$tmp"/*.deb; do dpkg-deb -x "$f" "$x"; done
	rm -f "$tmp"/*.deb
	# merged-/usr packages ship usr/lib/modules: depmod -b wants lib/modules
	if [ ! -d "$x/lib/modules/$VT_KVER" ] && [ -d "$x/usr/lib/modules/$VT_KVER" ]; then
		mkdir -p "$x/lib/modules"
		mv "$x/usr/lib/modules/$VT_KVER" "$x/lib/modules/"
	fi
	[ -d "$x/lib/modules/$VT_KVER" ] || { echo "vmtest: no modules for $VT_KVER in $VT_PKG" >&2; rm -rf "$tmp"; return 1; }
	depmod -b "$x" "$VT_KVER"
	mkdir -p "$VT_KDIR/lib/modules/$VT_KVER"
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		if [ -e "$x/lib/modules/$VT_KVER/$f" ]; then cp "$x/lib/modules/$VT_KVER/$f" "$VT_KDIR/lib/modules/$VT_KVER/"; fi
	done
	# the closure of the modules we need, decompressed (busybox insmod
	# can't read .ko.xz/.ko.zst), in load order for the initramfs
	: >"$tmp/boot.order"
	for m in $(vt_mods); do
		{ modprobe -d "$x" -S "$VT_KVER" --show-depends "$m" 2>/dev/null || true; } |
			awk '$1 == "insmod" { print $2 }' | while read -r f; do
				rel=${f#"$x"/lib/modules/"$VT_KVER"/}
				rel=${rel#"$x"/usr/lib/modules/"$VT_KVER"/}
				mkdir -p "$VT_KDIR/lib/modules/$VT_KVER/$(dirname "$rel")"
				case $f in
				*.ko.xz) xz -dc "$f" >"$VT_KDIR/lib/modules/$VT_KVER/${rel%.xz}"; rel=${rel%.xz} ;;
				*.ko.zst) zstd -qdc "$f" >"$VT_KDIR/lib/modules/$VT_KVER/${rel%.zst}"; rel=${rel%.zst} ;;
				*.ko.gz) gzip -dc "$f" >"$VT_KDIR/lib/modules/$VT_KVER/${rel%.gz}"; rel=${rel%.gz} ;;
				*) cp "$f" "$VT_KDIR/lib/modules/$VT_KVER/$rel" ;;
				esac
				case " $VT_BOOT_MODS " in *" $m "*) echo "$rel" >>"$tmp/boot.order" ;; esac
			done
	done
	depmod -b "$VT_KDIR" "$VT_KVER"
	# boot/ up to 6.18, lib/modules/KVER/ in the split packages from 6.19 on
	for f in "$x/boot/vmlinuz-$VT_KVER" "$x/lib/modules/$VT_KVER/vmlinuz"; do
		if [ -e "$f" ]; then cp "$f" "$VT_KDIR/vmlinuz"; fi
	done
	for f in "$x/boot/config-$VT_KVER" "$x/lib/modules/$VT_KVER/config"; do
		if [ -e "$f" ]; then cp "$f" "$VT_KDIR/config"; fi
	done
	[ -e "$VT_KDIR/vmlinuz" ] || { echo "vmtest: no vmlinuz in $(vt_packages "$VT_PKG")" >&2; return 1; }
	# keep only one of the two: vmlinux when it boots through PVH
	if vt_extract_vmlinux "$VT_KDIR/vmlinuz" "$VT_KDIR/vmlinux"; then
		rm -f "$VT_KDIR/vmlinuz"
	fi
	awk '!seen[$0]++' "$tmp/boot.order" >"$VT_KDIR/boot.order"
	vt_initramfs "$VT_KDIR" "$VT_KDIR/boot.order"
	echo "$VT_VERSION" >"$VT_KDIR/version"
	echo "$VT_PKG" >"$VT_KDIR/package"
	vt_mods >"$VT_KDIR/mods"
	touch "$VT_KDIR/.complete"
	rm -rf "$tmp"
}

# The uncompressed ELF kernel, bootable through its PVH note, saves the
# guest decompressing vmlinuz under emulation. Kept only when it has one.
vt_extract_vmlinux() {
	local in=$1 out=$2 off
	for sig in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
		off=$(LC_ALL=C grep -obUaP "${sig#*:}" "$in" 2>/dev/null | head -1 | cut -d: -f1)
		[ -n "$off" ] || continue
		case ${sig%%:*} in
		xz) tail -c +$((off + 1)) "$in" | xz -dc 2>/dev/null >"$out" ;;
		zstd) tail -c +$((off + 1)) "$in" | zstd -qdc 2>/dev/null >"$out" ;;
		gzip) tail -c +$((off + 1)) "$in" | gzip -dc 2>/dev/null >"$out" ;;
		esac
		if [ "$(head -c 4 "$out" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] &&
			readelf -n "$out" 2>/dev/null | grep -q 'Xen.*0x00000012'; then
			return 0
		fi
	done
	rm -f "$out"
	return 1
}

# A busybox initramfs: insmods the boot modules, mounts the host root
# (9p, read-only) under a tmpfs overlay and switches to it.
vt_initramfs() {
	local kdir=$1 order=$2 root
	root=$(mktemp -d "$VMTEST_CACHE/tmp.XXXXXX")
	mkdir -p "$root/bin" "$root/mods"
	cp /bin/busybox "$root/bin/busybox"
	while read -r rel; do
		cp "$kdir/lib/modules/$VT_KVER/$rel" "$root/mods/"
		basename "$rel" >>"$root/mods/order"
	done < <(awk '!seen[$0]++' "$order")
	cp "$VT_DIR/initramfs-init" "$root/init"
	chmod 755 "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$kdir/initramfs.cpio"
	rm -rf "$root"
}
