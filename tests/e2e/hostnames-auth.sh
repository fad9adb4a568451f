#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: a service host is served only with a credential for that
# service's sandbox, unless the service was exposed public. The real
# /usr/sbin/nginx with the module in a namespace of its own, the FastPath
# stand-in and an echo server posing as the sandbox, which records every
# request it gets; an auth endpoint written here for the auth subrequest.
# Checks each credential (a route scope, the gateway's cookie, the auth
# subrequest) and each attack on them: a guessed host, a sibling's scope,
# another port's, a scope whose key left the ring, a forged or altered
# cookie, host A's cookie on host B, an expired cookie, the scope header
# twice, case and trailing-dot variants of the host, the auth endpoint
# refusing, failing, down or slow; public exposures in the admin API and
# the metrics; and a store made before exposures could be public, in
# SQLite and in PostgreSQL, whose rows stay authenticated.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PGD=""
PGBIN=""
ha_cleanup() {
	if [ -n "$PGD" ] && [ -f "$PGD/data/postmaster.pid" ]; then
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate stop >/dev/null 2>&1
	fi
	[ -n "$PGD" ] && rm -rf "$PGD"
	fw_cleanup
}
trap ha_cleanup EXIT
trap 'exit 130' INT TERM

fw_ingress_require hostnames-auth sqlite3

NS=fwhauth-$FW_ID
GW=192.0.2.1
FASTPATH=192.0.2.2:50051
FASTLET=198.51.100.7:8080
AUTH=192.0.2.3:8000
CALLS=$FW_TMP/calls
HITS=$FW_TMP/echo.log
KEYS=$FW_TMP/keys
DB=$FW_TMP/store/services.db
DOMAIN=apps.example.com
A=$FW_TMP/gw

fw_netns_add "$NS"
for a in $GW/32 192.0.2.2/32 192.0.2.3/32 198.51.100.7/32 198.51.100.8/32 198.51.100.9/32; do
	ip -n "$NS" addr add "$a" dev lo
done
mkdir -p "$FW_TMP/store" "$A/logs" "$A/tmp"
fw_fastpath_stubs
: >"$CALLS"
: >"$HITS"

fw_bg_ready "$NS" "$FW_TMP/fp.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" --listen $FASTPATH \
	--calls "$CALLS" --upstream "http://$FASTLET" --refused "http://198.51.100.8:8081" \
	--tls-upstream "https://198.51.100.8:8443"
fw_bg_ready "$NS" "$FW_TMP/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$HITS"
printf 'k=c2hhcmVkLXNlY3JldA==\n' >"$KEYS"
# a key the gateway never had (or no longer has)
printf 'o=b2xkLXJvdGF0ZWQtb3V0\n' >"$FW_TMP/old-keys"

# the auth endpoint: Authorization "Bearer good" is 200, "Bearer no" 403,
# "Bearer boom" 500, /slow sleeps past the gateway's timeout, anything
# else 401 with a challenge; each request's service headers are logged
cat >"$FW_TMP/auth.py" <<'EOF'
import sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        with open(sys.argv[2], "a") as f:
            f.write("%s %s %s %s\n" % (self.command, self.path, self.headers.get("X-Service"),
                                       self.headers.get("X-Service-Port")))
        if self.path == "/slow":
            time.sleep(3)
        a = self.headers.get("Authorization", "")
        code = {"Bearer good": 200, "Bearer no": 403, "Bearer boom": 500}.get(a, 401)
        self.send_response(code)
        if code == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="sandboxes"')
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_POST = do_GET

host, port = sys.argv[1].rsplit(":", 1)
srv = ThreadingHTTPServer((host, int(port)), H)
open(sys.argv[3], "w").close()
srv.serve_forever()
EOF
: >"$FW_TMP/auth.log"
fw_bg_ready "$NS" "$FW_TMP/auth.ready" "$FW_PY" "$FW_TMP/auth.py" $AUTH "$FW_TMP/auth.log" "$FW_TMP/auth.ready"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=*.$DOMAIN" \
	-keyout "$FW_TMP/tls.key" -out "$FW_TMP/tls.crt" -days 2 >/dev/null 2>&1 || fw_die "openssl req failed"

# a location of the gateway, with EXTRA in it
ingress_loc() {
	cat <<EOF
		location / {
			fastwall_ingress on;
			$1
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_read_timeout 2s;
		}
EOF
}
# the auth location, to UPSTREAM
auth_loc() {
	cat <<EOF
		location = /_auth {
			internal;
			proxy_pass $1;
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
			proxy_set_header X-Service \$fastwall_ingress_service;
			proxy_set_header X-Service-Port \$fastwall_ingress_service_port;
			proxy_connect_timeout 1s;
			proxy_read_timeout 1s;
		}
EOF
}
ngx_conf() { # STORE
	cat <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
worker_processes 2;
pid $A/nginx.pid;
error_log $A/logs/error.log info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $A/tmp/body;
	proxy_temp_path $A/tmp/proxy;
	fastcgi_temp_path $A/tmp/fastcgi;
	uwsgi_temp_path $A/tmp/uwsgi;
	scgi_temp_path $A/tmp/scgi;
	fastwall_ingress_keys $KEYS;
	fastwall_ingress_resolver $FASTPATH;
	fastwall_ingress_service_hosts *.$DOMAIN;
	fastwall_ingress_service_store "$1";
	fastwall_ingress_routing_name gateway-a;
	proxy_http_version 1.1;

	# scope and cookie only
	server {
		listen $GW:80;
$(ingress_loc "")
	}
	# the same over TLS
	server {
		listen $GW:443 ssl http2;
		ssl_certificate $FW_TMP/tls.crt;
		ssl_certificate_key $FW_TMP/tls.key;
$(ingress_loc "")
	}
	# and the auth endpoint
	server {
		listen $GW:82;
		fastwall_ingress_service_auth /_auth;
$(ingress_loc "")
$(auth_loc "http://$AUTH/check")
	}
	# an auth endpoint that is down, one that is slow
	server {
		listen $GW:84;
		fastwall_ingress_service_auth /_auth;
$(ingress_loc "")
$(auth_loc "http://198.51.100.9:9/check")
	}
	server {
		listen $GW:85;
		fastwall_ingress_service_auth /_auth;
$(ingress_loc "")
$(auth_loc "http://$AUTH/slow")
	}
	# URI mode
	server {
		listen $GW:87;
$(ingress_loc "fastwall_ingress_mode uri;")
	}
	# cookies that live two seconds
	server {
		listen $GW:86;
		fastwall_ingress_service_cookie_ttl 2s;
$(ingress_loc "")
	}
	server {
		listen 127.0.0.1:8081;
		listen unix:$A/admin.sock;
		location /services {
			fastwall_ingress_admin;
		}
		location = /metrics {
			fastwall_ingress_service_metrics;
		}
	}
}
EOF
}

cget() { fw_ns "$NS" curl -s --path-as-is -m 10 -o "$FW_TMP/body" -D "$FW_TMP/head" -w '%{http_code}' "$@"; }
# req PORT HOST [CURL-ARGS...]: a request to the gateway by Host
req() {
	local port=$1 h=$2
	shift 2
	cget -H "Host: $h" "$@" "http://$GW:$port/p"
}
admin() { cget -X "$1" "http://127.0.0.1:8081$2"; }
jfield() { "$FW_PY" -c 'import json,sys; print(str(json.load(open(sys.argv[1]))[sys.argv[2]]).lower())' "$FW_TMP/body" "$1"; }
got_header() {
	"$FW_PY" -c 'import json,sys
print("|".join(v for k, v in json.load(open(sys.argv[1]))["headers"] if k.lower() == sys.argv[2].lower()))' \
		"$FW_TMP/body" "$1"
}
hits() { wc -l <"$HITS"; }
resolves() { wc -l <"$CALLS"; }
set_cookie() { sed -n 's/^[Ss]et-[Cc]ookie: \(.*\)\r$/\1/p' "$FW_TMP/head"; }
cookie_value() { set_cookie | sed -n 's/^fastwall_service_auth=\([^;]*\);.*/\1/p'; }
sql() { "$FW_PY" -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str, r)) for r in c.execute(sys.argv[2]))); c.commit()' "$DB" "$1"; }
metric() { fw_ns "$NS" curl -s "http://127.0.0.1:8081/metrics" | grep -F "$1 " | awk '{print $2}'; }
sign() { "$FASTWALL" scope sign --keys "${KEYRING:-$KEYS}" --key-id "${KID:-k}" "$@"; }

WEB=default--my-sandbox--web.$DOMAIN
WEB_H=enh47uqyj7bpyttz.$DOMAIN
SIB=default--sibling--web.$DOMAIN
DOCS=default--open--docs.$DOMAIN
LEGACY=default--legacy.$DOMAIN
NEED="this service needs a credential: a route scope for its sandbox and port in OpenSandbox-Ingress-To, or the cookie the gateway sets after one"

echo "# a store made before public exposures"
sql "CREATE TABLE fastwall_services (workspace TEXT NOT NULL, sandbox TEXT NOT NULL, service TEXT NOT NULL, port INTEGER NOT NULL, routing_name TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (workspace, sandbox, service))" >/dev/null
sql "INSERT INTO fastwall_services VALUES ('default', 'legacy', '', 6060, '', '')" >/dev/null
ngx_conf "sqlite:$DB" >"$A/nginx.conf"
check "nginx -t" fw_ns "$NS" "$FW_NGINX" -t -p "$A" -c "$A/nginx.conf"
fw_bg "$NS" "$FW_NGINX" -p "$A" -c "$A/nginx.conf"
GW_PID=${FW_PIDS[-1]}
fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://127.0.0.1:8081/services" ||
	fw_die "the gateway did not start: $(tail -5 "$A/logs/error.log")"
check_eq "the old table got the public column, false for its row" \
	"$(sql "SELECT sandbox, public FROM fastwall_services")" "legacy|0"
check_eq "the admin API shows it as not public" "$(admin GET /services/default/legacy) $(jfield public)" "200 false"
check_eq "its host without a credential: 401" "$(req 80 $LEGACY)" 401

echo "# exposures"
check_eq "expose default/my-sandbox/web on 8080: 200" "$(admin PUT '/services/default/my-sandbox/web?port=8080')" 200
check_eq "public is false unless asked for" "$(jfield public)" false
check_eq "expose default/sibling/web on 8080: 200" "$(admin PUT '/services/default/sibling/web?port=8080')" 200
check_eq "expose default/open/docs public on 7070: 200" "$(admin PUT '/services/default/open/docs?port=7070&public=true')" 200
check_eq "the answer says public" "$(jfield public)" true
check_eq "public=yes: 400" "$(admin PUT '/services/default/bad/x?port=7070&public=yes') $(jfield error)" \
	"400 public is true or false"
check_eq "and nothing was stored" "$(sql "SELECT count(*) FROM fastwall_services WHERE sandbox = 'bad'")" 0
check_eq "the store has public per row" \
	"$(sql 'SELECT sandbox, public FROM fastwall_services ORDER BY sandbox')" \
	"legacy|0
my-sandbox|0
open|1
sibling|0"
check_eq "GET shows it" "$(admin GET /services/default/open/docs) $(jfield public)" "200 true"
admin GET /services >/dev/null
check_eq "the list shows it per service" "$(grep -c '"public":true' "$FW_TMP/body") $(grep -c '"public":false' "$FW_TMP/body")" "1 3"
check_eq "metrics: one public exposure, three authenticated" \
	"$(metric 'fastwall_ingress_service_exposures{access="public"}') $(metric 'fastwall_ingress_service_exposures{access="authenticated"}')" \
	"1 3"

echo "# the CLI"
cli() { fw_ns "$NS" "$FASTWALL" hostname "$@" >"$FW_TMP/body" 2>"$FW_TMP/err"; }
cli expose --admin 127.0.0.1:8081 --port 5050 --public default cli-box app
check_eq "fastwall hostname expose --public: exit 0, public" "$? $(jfield public) $(jfield port)" "0 true 5050"
check_eq "stored public" "$(sql "SELECT public FROM fastwall_services WHERE sandbox = 'cli-box'")" 1
cli get --admin "unix:$A/admin.sock" default cli-box app
check_eq "get over the unix socket shows it" "$? $(jfield public)" "0 true"
cli expose --admin 127.0.0.1:8081 --port 5050 default cli-box app
check_eq "expose again without --public: authenticated" "$? $(jfield public)" "0 false"
cli list --admin 127.0.0.1:8081
check_eq "list: one line per service, each with public" "$? $(wc -l <"$FW_TMP/body") $(grep -c '"public":' "$FW_TMP/body")" "0 5 5"
cli expose --admin 127.0.0.1:8081 --port 0 default cli-box app
check_eq "port 0: exit 2, nothing asked" "$? $(cat "$FW_TMP/err")" "2 fastwall hostname: port '0': not decimal 1-65535"
cli expose --admin 127.0.0.1:8081 --port 18080 default cli-box app
check_eq "the policy port: exit 1 with the gateway's reason" "$? $(cat "$FW_TMP/err")" \
	'1 fastwall hostname: the gateway answered 400: {"error":"port 18080 is the policy port, which carries no traffic"}'
cli expose --admin 127.0.0.1:8081 --port 5050 default 'a/../b' app
check_eq "a bad name: exit 1, nothing sent" "$?" 1
cli delete --admin 127.0.0.1:8081 default cli-box app
check_eq "delete: exit 0" "$?" 0
cli get --admin 127.0.0.1:8081 default cli-box app
check_eq "then get: exit 1, 404" "$? $(cut -c1-43 "$FW_TMP/err")" "1 fastwall hostname: the gateway answered 404"
cli list --admin 127.0.0.1:9
check "a gateway that is not there: exit 1 naming it" grep -q "can't connect to 127.0.0.1:9: Connection refused" "$FW_TMP/err"

echo "# no credential"
h0=$(hits)
r0=$(resolves)
check_eq "a guessed readable host: 401" "$(req 80 $WEB)" 401
check_eq "with a body that says what would pass" "$(cat "$FW_TMP/body")" "$NEED"
check_eq "the hashed host: 401" "$(req 80 $WEB_H)" 401
check_eq "upper case: 401" "$(req 80 DEFAULT--MY-SANDBOX--WEB.APPS.EXAMPLE.COM)" 401
check_eq "a trailing dot: 401" "$(req 80 "$WEB.")" 401
check_eq "with a port: 401" "$(req 80 "$WEB:80")" 401
check_eq "HTTP/2 :authority: 401" \
	"$(cget --http2 -k --resolve "$WEB:443:$GW" "https://$WEB/")" 401
check_eq "the body names no other service" "$(grep -c -e sibling -e open -e docs "$FW_TMP/body")" 0
check_eq "the sandbox was never contacted, nor the resolver" "$(($(hits) - h0)) $(($(resolves) - r0))" "0 0"
check "and no cookie was set" test -z "$(set_cookie)"
# the trailing dot names no service host: refused as a route scope
check_eq "metrics: refused for no credential" "$(metric 'fastwall_ingress_service_refused_total{reason="no_credential"}')" 6

echo "# public"
check_eq "a public exposure needs no credential: 200" "$(req 80 $DOCS -H 'Cookie: a=1')" 200
check_eq "resolved as default/open:7070" "$(grep -c '^default open 7070 1$' "$CALLS")" 1
check_eq "its client's cookies reach it" "$(got_header Cookie)" "a=1"
check_eq "metrics count it" "$(metric 'fastwall_ingress_service_requests_total{credential="public"}')" 1

echo "# route scopes"
SCOPE=$(sign default my-sandbox 8080)
h0=$(hits)
check_eq "the service's scope: 200" "$(req 80 $WEB -H "OpenSandbox-Ingress-To: $SCOPE")" 200
check_eq "resolved as default/my-sandbox:8080" "$(grep -c '^default my-sandbox 8080 1$' "$CALLS")" 1
check_eq "the sandbox got no scope header" "$(got_header OpenSandbox-Ingress-To)" ""
check_eq "and the resolution's credential" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-my-sandbox
check_eq "the answer sets the cookie: host-only, HttpOnly, SameSite=Lax, Path=/, an hour, not Secure on plain HTTP" \
	"$(set_cookie | sed 's/=[^;]*;/=V;/')" "fastwall_service_auth=V; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax"
COOKIE=$(cookie_value)
check "its value is v1.<expiry>.<key id>.<mac>" grep -qE '^v1\.[1-9][0-9]*\.k\.[A-Za-z0-9_-]{43}$' <<<"$COOKIE"
exp=${COOKIE#v1.}
exp=${exp%%.*}
now=$(date +%s)
check "expiring within the hour" test "$exp" -gt "$now" -a "$exp" -le $((now + 3601))
check_eq "the legacy scope header works too" "$(req 80 $WEB -H "OPEN-SANDBOX-INGRESS: $SCOPE")" 200
check_eq "over TLS: 200" "$(cget -k --resolve "$WEB:443:$GW" -H "OpenSandbox-Ingress-To: $SCOPE" "https://$WEB/")" 200
check "and the cookie is Secure" grep -q '; Secure$' <<<"$(set_cookie)"
check_eq "a scope on a public exposure is the credential too: 200" \
	"$(req 80 $DOCS -H "OpenSandbox-Ingress-To: $(sign default open 7070)")" 200
h0=$(hits)
r0=$(resolves)
check_eq "a sibling's scope on this host: 401" "$(req 80 $WEB -H "OpenSandbox-Ingress-To: $(sign default sibling 8080)")" 401
check_eq "this sandbox's scope for another port: 401" "$(req 80 $WEB -H "OpenSandbox-Ingress-To: $(sign default my-sandbox 9090)")" 401
check_eq "another workspace's: 401" "$(req 80 $WEB -H "OpenSandbox-Ingress-To: $(sign other my-sandbox 8080)")" 401
check_eq "a scope under a key no longer in the ring: 401" \
	"$(KEYRING=$FW_TMP/old-keys KID=o sign default my-sandbox 8080 >"$FW_TMP/old"; req 80 $WEB -H "OpenSandbox-Ingress-To: $(cat "$FW_TMP/old")")" 401
check_eq "a tampered scope: 401" "$(req 80 $WEB -H "OpenSandbox-Ingress-To: ${SCOPE%?}B")" 401
check_eq "a public exposure with a bad scope: 401 (the scope decides)" "$(req 80 $DOCS -H "OpenSandbox-Ingress-To: ${SCOPE%?}B")" 401
check_eq "the scope header twice: 400" \
	"$(req 80 $WEB -H "OpenSandbox-Ingress-To: $SCOPE" -H "opensandbox-ingress-to: $(sign default sibling 8080)")" 400
check_eq "a good scope beside a cookie of another host does not matter: 200" \
	"$(req 80 $WEB -H "OpenSandbox-Ingress-To: $SCOPE" -H 'Cookie: fastwall_service_auth=v1.1.k.x')" 200
h1=$(hits)
check_eq "none of the refused reached the sandbox or the resolver" "$((h1 - h0 - 1)) $(($(resolves) - r0))" "0 0"
check "no refusal set a cookie" test -z "$(req 80 $WEB -H "OpenSandbox-Ingress-To: $(sign default sibling 8080)" >/dev/null; set_cookie)"
check_eq "metrics: the refused scopes by reason" \
	"$(metric 'fastwall_ingress_service_refused_total{reason="scope_other_service"}') $(metric 'fastwall_ingress_service_refused_total{reason="scope_invalid"}') $(metric 'fastwall_ingress_service_refused_total{reason="scope_twice"}')" \
	"4 3 1"
check "the log names the reasons, never a scope" \
	bash -c "grep -q 'route scope for a service host refused: unknown key id' '$A/logs/error.log' && ! grep -qF '$SCOPE' '$A/logs/error.log'"

target() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"])' "$FW_TMP/body"; }
check_eq "URI mode: a service host without a credential is 401, whatever the path holds" \
	"$(cget -H "Host: $WEB" "http://$GW:87/$SCOPE/x")" 401
check_eq "URI mode: with the scope header, the whole path goes to the service" \
	"$(cget -H "Host: $WEB" -H "OpenSandbox-Ingress-To: $SCOPE" "http://$GW:87/a/b?c") $(target)" "200 /a/b?c"

echo "# the cookie"
h0=$(hits)
check_eq "the cookie alone: 200" "$(req 80 $WEB -H "Cookie: a=1; fastwall_service_auth=$COOKIE; b=2")" 200
check_eq "the sandbox got the other cookies, not the gateway's" "$(got_header Cookie)" "a=1; b=2"
check_eq "a Cookie of the gateway's cookie alone is dropped" \
	"$(req 80 $WEB -H "Cookie: fastwall_service_auth=$COOKIE" >/dev/null; got_header Cookie)" ""
check_eq "upper case host with the cookie: 200 (hosts compare lowercased)" \
	"$(req 80 DEFAULT--MY-SANDBOX--WEB.$DOMAIN -H "Cookie: fastwall_service_auth=$COOKIE")" 200
check "a cookie's request sets no new cookie" test -z "$(set_cookie)"
check_eq "two cookies of the name, the good one second: 200" \
	"$(req 80 $WEB -H "Cookie: fastwall_service_auth=v1.1.k.x; fastwall_service_auth=$COOKIE")" 200
check_eq "three of them reached the sandbox" "$(($(hits) - h0))" 4
h0=$(hits)
r0=$(resolves)
last=${COOKIE: -1}
[ "$last" = A ] && other=B || other=A
check_eq "an altered mac: 401" "$(req 80 $WEB -H "Cookie: fastwall_service_auth=${COOKIE%?}$other")" 401
check_eq "with the same body" "$(cat "$FW_TMP/body")" "$NEED"
check_eq "a later expiry written in: 401" \
	"$(req 80 $WEB -H "Cookie: fastwall_service_auth=v1.$((exp + 100000)).${COOKIE#v1.*.}")" 401
check_eq "a forged value: 401" \
	"$(req 80 $WEB -H "Cookie: fastwall_service_auth=v1.9999999999.k.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")" 401
check_eq "host A's cookie on host B (a sibling): 401" "$(req 80 $SIB -H "Cookie: fastwall_service_auth=$COOKIE")" 401
check_eq "on the same service's hashed host: 401 (bound to the host)" \
	"$(req 80 $WEB_H -H "Cookie: fastwall_service_auth=$COOKIE")" 401
check_eq "the route scope where the cookie goes: 401" \
	"$(req 80 $WEB -H "Cookie: fastwall_service_auth=$SCOPE")" 401
check_eq "none reached the sandbox or the resolver" "$(($(hits) - h0)) $(($(resolves) - r0))" "0 0"
req 86 $WEB -H "OpenSandbox-Ingress-To: $SCOPE" >/dev/null
check "fastwall_ingress_service_cookie_ttl 2s: Max-Age=2" grep -q 'Max-Age=2;' <<<"$(set_cookie)"
SHORT=$(cookie_value)
check_eq "that cookie works at once" "$(req 86 $WEB -H "Cookie: fastwall_service_auth=$SHORT")" 200
sleep 2.2
check_eq "and is refused once expired: 401" "$(req 86 $WEB -H "Cookie: fastwall_service_auth=$SHORT")" 401
check_eq "metrics: cookies by reason" \
	"$(metric 'fastwall_ingress_service_refused_total{reason="cookie_invalid"}') $(metric 'fastwall_ingress_service_refused_total{reason="cookie_expired"}') $(metric 'fastwall_ingress_service_requests_total{credential="cookie"}')" \
	"6 1 5"

echo "# the auth subrequest"
h0=$(hits)
: >"$FW_TMP/auth.log"
check_eq "the endpoint says yes: 200" "$(req 82 $WEB -H 'Authorization: Bearer good')" 200
check_eq "it was asked about default/my-sandbox/web port 8080" "$(cat "$FW_TMP/auth.log")" \
	"GET /check default/my-sandbox/web 8080"
check "and no cookie is set on its yes" test -z "$(set_cookie)"
check_eq "it says 401: 401" "$(req 82 $WEB)" 401
check "with its challenge" grep -q 'WWW-Authenticate: Bearer realm="sandboxes"' "$FW_TMP/head"
check_eq "it says 403: 403" "$(req 82 $WEB -H 'Authorization: Bearer no')" 403
check_eq "it fails (500): 503, closed" "$(req 82 $WEB -H 'Authorization: Bearer boom')" 503
check_eq "it is down: 503" "$(req 84 $WEB -H 'Authorization: Bearer good')" 503
check_eq "it is slower than the location's timeout: 503" "$(req 85 $WEB -H 'Authorization: Bearer good')" 503
check_eq "only the yes reached the sandbox" "$(($(hits) - h0))" 1
check_eq "a cookie passes without asking it" \
	"$(: >"$FW_TMP/auth.log"; req 82 $WEB -H "Cookie: fastwall_service_auth=$COOKIE") $(wc -l <"$FW_TMP/auth.log")" "200 0"
check_eq "a bad scope is refused without asking it" \
	"$(req 82 $WEB -H "OpenSandbox-Ingress-To: $(sign default sibling 8080)" -H 'Authorization: Bearer good') $(wc -l <"$FW_TMP/auth.log")" "401 0"
check_eq "metrics: the auth endpoint's answers" \
	"$(metric 'fastwall_ingress_service_requests_total{credential="auth_request"}') $(metric 'fastwall_ingress_service_refused_total{reason="auth_denied"}') $(metric 'fastwall_ingress_service_refused_total{reason="auth_failed"}')" \
	"1 2 3"

echo "# nginx -t"
ngx_t() { # WANT-IN-ERROR SED-SCRIPT
	ngx_conf "sqlite:$FW_TMP/t.db" | sed "$2" >"$FW_TMP/t.conf"
	if fw_ns "$NS" "$FW_NGINX" -t -p "$A" -c "$FW_TMP/t.conf" >"$FW_TMP/t.out" 2>&1; then
		echo "nginx -t accepted it"
		return 1
	fi
	grep -F -- "$1" "$FW_TMP/t.out" || { cat "$FW_TMP/t.out"; return 1; }
}
check "an auth URI that is no URI: refused" \
	ngx_t '"check" is neither a URI starting with / nor off' 's|service_auth /_auth;|service_auth check;|'
check "a cookie lifetime of 30 days: refused" \
	ngx_t 'is not between 1s and 7d' 's|cookie_ttl 2s;|cookie_ttl 30d;|'

check "no worker crashed" bash -c "! grep -q 'exited on signal' '$A/logs/error.log'"

echo "# PostgreSQL: a table made before public exposures"
PGBIN=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ] || ! id postgres >/dev/null 2>&1; then
	fw_not_ok "PostgreSQL server not installed (scripts/install-deps.sh installs postgresql)"
	fw_summary
	exit
fi
kill -QUIT "$GW_PID"
gone() { ! kill -0 "$GW_PID" 2>/dev/null; }
fw_eventually 5 gone || kill -9 "$GW_PID"
check "a graceful stop finds no request left open (refusals finalize theirs)" \
	bash -c "! grep -E 'open socket|leak|alert' '$A/logs/error.log'"
PGD=$(mktemp -d "/tmp/fastwall-pg-$FW_ID.XXXXXX")
chown postgres: "$PGD"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >"$PGD/initdb.log" 2>&1 ||
	fw_die "initdb failed: $(tail -3 "$PGD/initdb.log")"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w \
	-o "-k $PGD -c listen_addresses=''" start >/dev/null ||
	fw_die "postgres did not start: $(tail -3 "$PGD/log")"
psql_q() { runuser -u postgres -- psql -h "$PGD" -At -c "$1" postgres; }
psql_q "CREATE TABLE fastwall_services (workspace TEXT NOT NULL, sandbox TEXT NOT NULL, service TEXT NOT NULL, port INTEGER NOT NULL, routing_name TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (workspace, sandbox, service))" >/dev/null
psql_q "INSERT INTO fastwall_services VALUES ('default', 'legacy', '', 6060, '', '')" >/dev/null
ngx_conf "postgresql:host=$PGD dbname=postgres user=postgres" >"$A/nginx.conf"
fw_bg "$NS" "$FW_NGINX" -p "$A" -c "$A/nginx.conf"
fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://127.0.0.1:8081/services" ||
	fw_die "the gateway did not start on PostgreSQL: $(tail -5 "$A/logs/error.log")"
check_eq "the old table got the public column, false for its row" \
	"$(psql_q "SELECT sandbox, public FROM fastwall_services")" "legacy|0"
check_eq "its host without a credential: 401" "$(req 80 $LEGACY)" 401
check_eq "expose default/open/docs public: 200" "$(admin PUT '/services/default/open/docs?port=7070&public=true') $(jfield public)" "200 true"
check_eq "stored public" "$(psql_q "SELECT public FROM fastwall_services WHERE sandbox = 'open'")" 1
check_eq "reachable without a credential" "$(req 80 $DOCS)" 200
check_eq "re-expose it without public: it needs a credential again" \
	"$(admin PUT '/services/default/open/docs?port=7070' >/dev/null; req 80 $DOCS) $(psql_q "SELECT public FROM fastwall_services WHERE sandbox = 'open'")" "401 0"
check "no worker crashed" bash -c "! grep -q 'exited on signal' '$A/logs/error.log'"

fw_summary
