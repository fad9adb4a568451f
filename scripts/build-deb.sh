#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Builds the Debian 12 package of fastwall with dpkg-deb: fastwalld and
# fastwall built with Debian's hardening flags in their own build
# directory, the man pages, bash, zsh and fish completions, JSON Schemas,
# the example configuration (a conffile) and the systemd unit. Prints the
# path of the .deb. No maintainer scripts: installing does not start or enable the
# unit (a firewall with no interfaces named would enforce nothing), and a
# package without them also installs into a temporary root
# (tests/e2e/deb.sh).
#
# usage: build-deb.sh [OUTDIR]   (default build/deb)
# env:   DEB_BUILD (build directory, default build-deb), DEB_VERSION,
#        DEB_MAINTAINER, MAKE, JOBS (default 2)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${1:-build/deb}
DEB_BUILD=${DEB_BUILD:-build-deb}
MAKE=${MAKE:-make}
JOBS=${JOBS:-2}
PKG=fastwall
MAINT=${DEB_MAINTAINER:-fastwall maintainers <fastwall@example.org>}

for t in dpkg-deb dpkg-shlibdeps dpkg-buildflags dpkg-architecture strip gzip; do
	command -v "$t" >/dev/null || { echo "build-deb: $t not found (scripts/install-deps.sh)" >&2; exit 1; }
done

# A Debian version from git: a tag v1.2.3 gives 1.2.3 (1.2.3+4.gHASH past
# it), no tag 0.0~gitDATE.HASH (sorts below any first release).
if [ -z "${DEB_VERSION:-}" ]; then
	if d=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
		DEB_VERSION=$(printf '%s' "${d#v}" | sed -E 's/-([0-9]+)-g/+\1.g/')
	elif h=$(git rev-parse --short HEAD 2>/dev/null); then
		DEB_VERSION=0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d).$h
	else
		DEB_VERSION=0.0
	fi
fi
case $DEB_VERSION in
[0-9]*) ;;
*) echo "build-deb: version '$DEB_VERSION' must start with a digit" >&2; exit 1 ;;
esac
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)

export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
# the package is never a sanitizer build, whatever the caller's make was
# (make test SANITIZE=1 passes SANITIZE down to every make below it); and
# objects of other flags in the build directory would be linked into it
unset SANITIZE
export MAKEFLAGS=
FLAGS="$CFLAGS | $LDFLAGS"
if [ -f "$DEB_BUILD/.deb-flags" ] && [ "$(cat "$DEB_BUILD/.deb-flags")" != "$FLAGS" ]; then
	rm -rf "$DEB_BUILD"
fi
mkdir -p "$DEB_BUILD"
printf '%s' "$FLAGS" >"$DEB_BUILD/.deb-flags"
"$MAKE" --no-print-directory -j"$JOBS" BUILD="$DEB_BUILD" SANITIZE= CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" \
	all "$DEB_BUILD/schema/fastwalld-config.schema.json" "$DEB_BUILD/bash-completion/fastwall" >&2

STAGE=$DEB_BUILD/pkgroot
rm -rf "$STAGE"
mkdir -p "$STAGE/DEBIAN"
"$MAKE" --no-print-directory BUILD="$DEB_BUILD" SANITIZE= CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" \
	DESTDIR="$ROOT/$STAGE" PREFIX=/usr SYSCONFDIR=/etc install >&2

# bookworm's systemd units live in /lib (the merged-/usr moratorium)
install -D -m 0644 deploy/systemd/fastwalld.service "$STAGE/lib/systemd/system/fastwalld.service"

# debug symbols are not shipped (no -dbgsym package)
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$STAGE/usr/sbin/fastwalld" "$STAGE/usr/sbin/fastwall"
gzip -9n "$STAGE"/usr/share/man/man8/*.8

DOC=$STAGE/usr/share/doc/$PKG
# the README and docs/ as the repository lays them out (the pages, their
# images, the man pages' sources the README links), so that every relative
# link of a page resolves in the package (to its .gz: pages are compressed)
install -d "$DOC/docs"
install -m 0644 README.md "$DOC/README.md"
install -m 0644 docs/*.md docs/*.svg docs/*.8 "$DOC/docs/"
gzip -9n "$DOC"/*.md "$DOC"/docs/*.md "$DOC"/docs/*.8
first=$(git log --max-parents=0 --format=%cd --date=format:%Y 2>/dev/null | sort | sed -n 1p || true)
last=$(git log -1 --format=%cd --date=format:%Y 2>/dev/null || date +%Y)
years=${first:-$last}
[ "$years" = "$last" ] || years=$years-$last
cat >"$DOC/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: fastwall
Comment: the BPF programs under bpf/ are built into the binaries

Files: *
Copyright: $years the fastwall authors
License: LGPL-2.1 or BSD-2-Clause

License: LGPL-2.1
 This library is free software; you can redistribute it and/or modify it
 under the terms of the GNU Lesser General Public License as published by
 the Free Software Foundation; version 2.1 of the License.
 .
 On Debian systems, the complete text of the GNU Lesser General Public
 License version 2.1 can be found in "/usr/share/common-licenses/LGPL-2.1".

License: BSD-2-Clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are
 met:
 .
 1. Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
 .
 2. Redistributions in binary form must reproduce the above copyright
    notice, this list of conditions and the following disclaimer in the
    documentation and/or other materials provided with the distribution.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS
 IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO,
 THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR
 PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR
 CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
 EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
 PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
 PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF
 LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING
 NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
 SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
EOF
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
date=$(git log -1 --format=%cD 2>/dev/null || date -R)
printf '%s (%s) bookworm; urgency=medium\n\n  * Build of commit %s.\n\n -- %s  %s\n' \
	"$PKG" "$DEB_VERSION" "$commit" "$MAINT" "$date" | gzip -9n >"$DOC/changelog.gz"

# the shared libraries the binaries link, as package dependencies
shl=$(mktemp -d)
trap 'rm -rf "$shl"' EXIT
mkdir -p "$shl/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$PKG" "$PKG" >"$shl/debian/control"
depends=$(cd "$shl" && dpkg-shlibdeps -O "$ROOT/$STAGE/usr/sbin/fastwalld" "$ROOT/$STAGE/usr/sbin/fastwall" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat >"$STAGE/DEBIAN/control" <<EOF
Package: $PKG
Version: $DEB_VERSION
Architecture: $ARCH
Maintainer: $MAINT
Installed-Size: $size
Depends: $depends
Recommends: bpftool
Suggests: bash-completion
Section: net
Priority: optional
Description: eBPF egress firewall for sandboxes
 fastwall enforces per-sandbox egress policy in the kernel: TC programs on
 the sandbox-facing interfaces decide each packet against the sandbox's
 allow and deny rules, with DNS-learned destinations, anti-spoofing and
 per-reason counters. fastwalld loads and programs the data plane from a
 YAML configuration or the Sandbox Actions protocol; fastwall inspects it.
 .
 The package ships fastwalld and fastwall, their manual pages, bash, zsh
 and fish completions, JSON Schemas of the configuration and policy, an example
 configuration in /etc/fastwall and a systemd unit, which is neither
 enabled nor started on installation.
EOF
echo /etc/fastwall/fastwalld.yaml >"$STAGE/DEBIAN/conffiles"
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print0 |
	sort -z | xargs -0 md5sum | sed 's| \./| |') >"$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/control" "$STAGE/DEBIAN/conffiles" "$STAGE/DEBIAN/md5sums"
find "$STAGE" -type d -exec chmod 0755 {} +

mkdir -p "$OUT"
rm -f "$OUT/${PKG}"_*.deb
deb=$OUT/${PKG}_${DEB_VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$deb" >&2
echo "$deb"
