#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the gateway's Debian package, libnginx-mod-http-fastwall-ingress,
# as a gateway host gets it. Builds it (make deb builds it beside fastwall's),
# runs lintian on it (no errors, no warnings), checks its fields against
# Debian's own nginx modules (the nginx-abi dependency of nginx-dev's
# substvars, section httpd, dh_nginx's maintainer scripts), then installs it
# with dpkg inside a Debian 12 machine booted with systemd-nspawn (the
# cached debootstrap root, tests/e2e/lib/machine.sh), in a network
# namespace of the test, never on this host: postinst links the
# load_module file into /etc/nginx/modules-enabled, Debian's packaged
# nginx started with `systemctl start nginx` loads the module, and a
# request carrying a scope minted by the packaged `fastwall scope sign`
# reaches a stand-in Fastlet through the FastPath stand-in's answer
# (tests/e2e/ingress_servers.py, as ingress.sh runs them). Removing the
# package moves the link aside (prerm), purging removes it (postrm).
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'fw_machine_cleanup; fw_cleanup' EXIT
trap 'exit 130' INT TERM
fw_ingress_require nginx-deb
fw_machine_require
command -v lintian >/dev/null || fw_die "lintian not found (scripts/install-deps.sh)"
cd "$FW_ROOT" || exit 1
t0=$SECONDS

MPKG=libnginx-mod-http-fastwall-ingress
CONF=mod-http-fastwall-ingress.conf
SO=ngx_http_fastwall_ingress_module.so
DEB=$(scripts/build-deb.sh "$FW_TMP/deb" 2>"$FW_TMP/build.log") ||
	{ sed 's/^/  | /' "$FW_TMP/build.log" >&2; fw_die "make deb failed"; }
MDEB=$(ls "$FW_TMP/deb/${MPKG}"_*.deb 2>/dev/null)
check "make deb built $MPKG beside fastwall" test -s "$MDEB"
[ -s "$MDEB" ] || { fw_summary; exit 1; }

# --- the package -------------------------------------------------------------
lintian --tag-display-limit 0 --fail-on error,warning "$MDEB" >"$FW_TMP/lintian.out" 2>&1
rc=$?
sed -i '/running with root privileges/d' "$FW_TMP/lintian.out"
if [ "$rc" = 0 ] && ! grep -qE '^[EW]: ' "$FW_TMP/lintian.out"; then
	fw_ok "lintian: no errors, no warnings"
else
	fw_not_ok "lintian: no errors, no warnings"
	sed 's/^/#   /' "$FW_TMP/lintian.out"
fi
field() { dpkg-deb -f "$MDEB" "$1"; }
abi=$(sed -n 's/^nginx:abi=//p' /usr/share/nginx/src/debian/libnginx-mod.abisubstvars)
check "it depends on nginx-dev's ABI ($abi)" bash -c "dpkg-deb -f '$MDEB' Depends | tr ',' '\n' | sed 's/^ //' | grep -qx '$abi'"
check "this host's nginx provides that ABI" bash -c "apt-cache show nginx | grep -q '^Provides:.*$abi'"
check_eq "section httpd, recommends nginx, as Debian's modules" "$(field Section) $(field Recommends)" "httpd nginx"
dpkg-deb -c "$MDEB" | awk '{print $NF}' >"$FW_TMP/files"
for f in "./usr/lib/nginx/modules/$SO" "./usr/share/nginx/modules-available/$CONF" \
	./usr/share/man/man8/fastwall-ingress.8.gz "./usr/share/doc/$MPKG/copyright"; do
	check "it ships $f" grep -qxF "$f" "$FW_TMP/files"
done
dpkg-deb -c "$DEB" | awk '{print $NF}' >"$FW_TMP/fwfiles"
check_fails "fastwall's package no longer ships fastwall-ingress(8)" \
	grep -q 'man8/fastwall-ingress\.8' "$FW_TMP/fwfiles"
dpkg-deb -e "$MDEB" "$FW_TMP/ctl"
for s in postinst prerm postrm; do
	check "its $s is dh_nginx's, for $CONF at priority 50" \
		grep -q "for confpair in $CONF:50-$CONF" "$FW_TMP/ctl/$s"
done
check_eq "the load_module file" "$(dpkg-deb --fsys-tarfile "$MDEB" |
	tar -xOf - "./usr/share/nginx/modules-available/$CONF")" "load_module modules/$SO;"

# --- installed in a machine, the packaged nginx serving a scope -----------------
NS=fwngx-$FW_ID
GW=192.0.2.1
FASTPATH=192.0.2.2:50051
FASTLET=198.51.100.7:8080
CALLS=$FW_TMP/calls
ECHO_LOG=$FW_TMP/echo.log
fw_netns_add "$NS"
for a in $GW/32 192.0.2.2/32 198.51.100.7/32; do
	ip -n "$NS" addr add "$a" dev lo
done
fw_fastpath_stubs
: >"$CALLS"
fw_bg_ready "$NS" "$FW_TMP/fp.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" \
	--listen $FASTPATH --calls "$CALLS" --upstream "http://$FASTLET" --refused http://198.51.100.8:8081 \
	--tls-upstream https://198.51.100.9:8443
fw_bg_ready "$NS" "$FW_TMP/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$ECHO_LOG"

fw_machine_unpack
M=$FW_MACHINE_ROOT
# not /tmp: the booted machine mounts a tmpfs there
cp "$DEB" "$M/var/tmp/fastwall.deb"
cp "$MDEB" "$M/var/tmp/$MPKG.deb"
fw_machine_boot "$NS"
echo "# machine up after $((SECONDS - t0)) s"
check "dpkg -i installs fastwall and $MPKG in the machine" \
	fw_machine dpkg -i /var/tmp/fastwall.deb "/var/tmp/$MPKG.deb"
LINK=/etc/nginx/modules-enabled/50-$CONF
check_eq "postinst linked the module into modules-enabled" \
	"$(readlink "$M$LINK")" "/usr/share/nginx/modules-available/$CONF"
check_eq "the module is fastwall-ingress(8)'s package now" \
	"$(fw_machine dpkg -S /usr/share/man/man8/fastwall-ingress.8.gz | cut -d: -f1)" "$MPKG"

printf 'k=%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$M/etc/nginx/fastwall-ingress.keys"
chmod 0600 "$M/etc/nginx/fastwall-ingress.keys"
cat >"$M/etc/nginx/sites-enabled/fastwall-ingress" <<EOF
fastwall_ingress_keys /etc/nginx/fastwall-ingress.keys;
fastwall_ingress_resolver $FASTPATH;
server {
	listen $GW:80;
	location / {
		fastwall_ingress on;
		fastwall_ingress_mode header;
		proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
	}
	location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
		internal;
		grpc_pass grpc://\$fastwall_ingress_resolver;
		grpc_set_header Content-Type application/grpc;
		grpc_set_header TE trailers;
	}
}
EOF
check "nginx -t accepts the fastwall_ingress directives (the module loaded)" fw_machine nginx -t -q
check "nginx -T shows the package's load_module line" \
	bash -c "nsenter -t $FW_MACHINE_LEADER -a nginx -T 2>/dev/null | grep -qxF 'load_module modules/$SO;'"
check "systemctl start nginx" fw_machine systemctl start nginx.service
SCOPE=$(fw_machine fastwall scope sign --keys /etc/nginx/fastwall-ingress.keys --key-id k tenant-a sb-ok 44772)
code=$(fw_ns "$NS" curl -s -m 10 -o "$FW_TMP/body" -w '%{http_code}' \
	-H "OpenSandbox-Ingress-To: $SCOPE" "http://$GW/through/the/package?x=1")
check_eq "a request with the scope: 200" "$code" 200
check "it reached the stand-in Fastlet" grep -qxF '/through/the/package?x=1' "$ECHO_LOG"
check_eq "FastPath was asked for that sandbox" "$(cat "$CALLS")" "tenant-a sb-ok 44772 1"
check_eq "a request without a scope: 401" \
	"$(fw_ns "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$GW/")" 401
check "systemctl stop nginx" fw_machine systemctl stop nginx.service

# --- removal --------------------------------------------------------------------
check "dpkg -r $MPKG" fw_machine dpkg -r "$MPKG"
check_fails "prerm took the link out of modules-enabled" test -L "$M$LINK"
check "moved aside, as Debian's modules do (restored on reinstall)" test -L "$M$LINK.removed"
check "dpkg -P $MPKG" fw_machine dpkg -P "$MPKG"
check_fails "purge removed the moved link" test -L "$M$LINK.removed"
check_fails "the module is gone" test -e "$M/usr/lib/nginx/modules/$SO"
echo "# $((SECONDS - t0)) s"
fw_summary
