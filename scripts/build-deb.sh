#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Builds the Debian 12 packages of fastwall with dpkg-deb:
#  - fastwall: fastwalld and fastwall built with Debian's hardening flags
#    in their own build directory, the man pages, bash, zsh and fish
#    completions, JSON
#    Schemas, the example configuration (a conffile) and the systemd unit.
#    No maintainer scripts: installing does not start or enable the unit
#    (a firewall with no interfaces named would enforce nothing), and a
#    package without them also installs into a temporary root
#    (tests/e2e/deb.sh).
#  - libnginx-mod-http-fastwall-ingress: the gateway's nginx module, built
#    and packaged the way Debian's libnginx-mod-* are (dh_nginx): the ABI
#    dependency from nginx-dev's substvars, the load_module file in
#    /usr/share/nginx/modules-available, its link in
#    /etc/nginx/modules-enabled made by postinst and moved aside by prerm
#    (dh_nginx's own scripts), and fastwall-ingress(8). Only with nginx-dev
#    installed (tests/e2e/nginx-deb.sh).
# Prints the path of fastwall's .deb; the module's is written beside it
# (OUTDIR/libnginx-mod-http-fastwall-ingress_VERSION_ARCH.deb).
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

# fastwall-ingress(8) is the module package's
rm -f "$STAGE/usr/share/man/man8/fastwall-ingress.8"

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
write_copyright() {
cat >"$1/copyright" <<EOF
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
}
write_copyright "$DOC"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
date=$(git log -1 --format=%cD 2>/dev/null || date -R)
write_changelog() { # PACKAGE DOCDIR
	printf '%s (%s) bookworm; urgency=medium\n\n  * Build of commit %s.\n\n -- %s  %s\n' \
		"$1" "$DEB_VERSION" "$commit" "$MAINT" "$date" | gzip -9n >"$2/changelog.gz"
}
write_changelog "$PKG" "$DOC"

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

# --- libnginx-mod-http-fastwall-ingress ----------------------------------------
MPKG=libnginx-mod-http-fastwall-ingress
NGX_SRC=${NGINX_SRC:-/usr/share/nginx/src}
ABIVARS=$NGX_SRC/debian/libnginx-mod.abisubstvars
AUTOSCRIPTS=/usr/share/debhelper/autoscripts
rm -f "$OUT/${MPKG}"_*.deb
if [ ! -f "$NGX_SRC/conf_flags" ] || [ ! -f "$ABIVARS" ] || [ ! -f "$AUTOSCRIPTS/postinst-nginx" ]; then
	echo "build-deb: nginx-dev is not installed: $MPKG is not built" >&2
	echo "$deb"
	exit 0
fi
# dh_nginx's ${misc:Depends}: the ABI of the nginx the module is built for
abi=$(sed -n 's/^nginx:abi=//p' "$ABIVARS")
[ -n "$abi" ] || { echo "build-deb: no nginx:abi in $ABIVARS" >&2; exit 1; }
# Debian's hardening flags, as debhelper's nginx_mod build system passes
# them; other flags configured the copy of nginx's tree: configure it again
MFLAGS="$CFLAGS -fPIC | $LDFLAGS -fPIC"
if [ "$(cat "$DEB_BUILD/ingress/.deb-flags" 2>/dev/null)" != "$MFLAGS" ]; then
	rm -rf "$DEB_BUILD/ingress"
fi
"$MAKE" --no-print-directory BUILD="$DEB_BUILD" SANITIZE= NGINX_SRC="$NGX_SRC" \
	INGRESS_CC_OPT="$CFLAGS -fPIC" INGRESS_LD_OPT="$LDFLAGS -fPIC" ingress >&2
printf '%s' "$MFLAGS" >"$DEB_BUILD/ingress/.deb-flags"
MSTAGE=$DEB_BUILD/pkgroot-ingress
rm -rf "$MSTAGE"
mkdir -p "$MSTAGE/DEBIAN"
SO=ngx_http_fastwall_ingress_module.so
install -D -m 0644 "$DEB_BUILD/ingress/$SO" "$MSTAGE/usr/lib/nginx/modules/$SO"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$MSTAGE/usr/lib/nginx/modules/$SO"
CONF=mod-http-fastwall-ingress.conf
install -d "$MSTAGE/usr/share/nginx/modules-available"
echo "load_module modules/$SO;" >"$MSTAGE/usr/share/nginx/modules-available/$CONF"
chmod 0644 "$MSTAGE/usr/share/nginx/modules-available/$CONF"
install -D -m 0644 docs/fastwall-ingress.8 "$MSTAGE/usr/share/man/man8/fastwall-ingress.8"
gzip -9n "$MSTAGE/usr/share/man/man8/fastwall-ingress.8"
MDOC=$MSTAGE/usr/share/doc/$MPKG
install -d "$MDOC"
install -m 0644 docs/ingress.md "$MDOC/"
gzip -9n "$MDOC/ingress.md"
write_copyright "$MDOC"
write_changelog "$MPKG" "$MDOC"
# dh_nginx's maintainer scripts, with the priority (50) it gives a module
for s in postinst prerm postrm; do
	{
		printf '#!/bin/sh\nset -e\n# Automatically added by dh_nginx\n'
		sed "s|#NAMES#|$CONF:50-$CONF|" "$AUTOSCRIPTS/$s-nginx"
		printf '# End automatically added section\n'
	} >"$MSTAGE/DEBIAN/$s"
	chmod 0755 "$MSTAGE/DEBIAN/$s"
done
mdepends=$(cd "$shl" && dpkg-shlibdeps -O "$ROOT/$MSTAGE/usr/lib/nginx/modules/$SO" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$mdepends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies of $SO" >&2; exit 1; }
msize=$(du -sk --exclude=DEBIAN "$MSTAGE" | cut -f1)
cat >"$MSTAGE/DEBIAN/control" <<EOF
Package: $MPKG
Source: $PKG
Version: $DEB_VERSION
Architecture: $ARCH
Maintainer: $MAINT
Installed-Size: $msize
Depends: $abi, $mdepends
Recommends: nginx
Breaks: $PKG (<< $DEB_VERSION)
Replaces: $PKG (<< $DEB_VERSION)
Section: httpd
Priority: optional
Description: fastwall's sandbox ingress gateway module for Nginx
 fastwall-ingress routes HTTP requests to sandboxes: it verifies the
 signed sandbox scope a request carries, asks the cluster's FastPath
 resolver (or its cache) which Fastlet serves the sandbox, and proxies
 the request there with the route's credential, over HTTP/1.1, HTTP/2,
 WebSocket and server-sent events.
 .
 Installing the package enables the module (a link in
 /etc/nginx/modules-enabled); the server blocks that use it are the
 administrator's, see fastwall-ingress(8).
EOF
(cd "$MSTAGE" && find . -path ./DEBIAN -prune -o -type f -print0 |
	sort -z | xargs -0 md5sum | sed 's| \./| |') >"$MSTAGE/DEBIAN/md5sums"
chmod 0644 "$MSTAGE/DEBIAN/control" "$MSTAGE/DEBIAN/md5sums"
find "$MSTAGE" -type d -exec chmod 0755 {} +
mdeb=$OUT/${MPKG}_${DEB_VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$MSTAGE" "$mdeb" >&2
echo "$deb"
