#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A Debian 12 root file system made with debootstrap, cached: the tests
# that need a real systemd as PID 1 (tests/e2e/systemd.sh, under
# systemd-nspawn), a container base image (tests/e2e/container.sh, podman
# import) and a system to install the packages into (tests/e2e/nginx-deb.sh)
# share it. The cache is keyed by the suite, the mirror and the package
# list: a second run with the same key reuses the tarball (seconds), a
# changed list makes a new one (minutes). Prints the path of the tarball
# (root-owned, numeric owners kept; a test unpacks its own copy, so a run
# never changes the cache).
#
# usage: debian-rootfs.sh [CACHEDIR]   (default build/rootfs)
# env:   DEBIAN_MIRROR (default http://deb.debian.org/debian)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${1:-$ROOT/build/rootfs}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
# systemd as PID 1, nginx to load the gateway's module, the shared
# libraries fastwall's two packages depend on (so installing them needs no
# network), and what the tests run inside: ip, curl, ps
PACKAGES=(
	systemd systemd-sysv dbus iproute2 curl procps ca-certificates
	nginx
	libbpf1 libelf1 zlib1g libyaml-0-2 libjansson4 libmicrohttpd12 libssl3
	libsqlite3-0 libpq5
)

command -v debootstrap >/dev/null || { echo "debian-rootfs: debootstrap not found (scripts/install-deps.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "debian-rootfs: needs root" >&2; exit 1; }

key=$(printf '%s\n' "$SUITE" "$MIRROR" minbase "${PACKAGES[@]}" | sha256sum | cut -c1-12)
tar=$CACHE/debian-$SUITE-$key.tar
if [ -s "$tar" ]; then
	echo "$tar"
	exit 0
fi
mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/.build.XXXXXX")
# debootstrap mounts /proc (and more) in the root while it runs: nothing
# of the host is removed with the directory if it failed half-way
cleanup() {
	set +e
	grep -F " $work/" /proc/mounts | cut -d' ' -f2 | sort -r | xargs -r -n1 umount -l
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
t0=$SECONDS
include=$(
	IFS=,
	echo "${PACKAGES[*]}"
)
echo "debian-rootfs: debootstrap $SUITE from $MIRROR (first run: a few minutes)" >&2
if ! debootstrap --variant=minbase --include="$include" "$SUITE" "$work/root" "$MIRROR" \
	>"$work/debootstrap.log" 2>&1; then
	tail -n 30 "$work/debootstrap.log" >&2
	[ -f "$work/root/debootstrap/debootstrap.log" ] && tail -n 30 "$work/root/debootstrap/debootstrap.log" >&2
	echo "debian-rootfs: debootstrap failed" >&2
	exit 1
fi
# the archive, for apt-get in a container build; nothing cached
echo "deb $MIRROR $SUITE main" >"$work/root/etc/apt/sources.list"
chroot "$work/root" apt-get clean
rm -rf "$work/root/var/lib/apt/lists/"*
# nginx's package enabled its default site: the tests bring their own
rm -f "$work/root/etc/nginx/sites-enabled/default"
# a machine of its own: an empty machine-id is filled at first boot
: >"$work/root/etc/machine-id"
tar -C "$work/root" --numeric-owner -cf "$work/rootfs.tar" .
# older tarballs of other package lists go: one cache, the current key
rm -f "$CACHE"/debian-"$SUITE"-*.tar
mv "$work/rootfs.tar" "$tar"
echo "debian-rootfs: $tar in $((SECONDS - t0)) s" >&2
echo "$tar"
