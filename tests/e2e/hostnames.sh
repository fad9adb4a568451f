#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: exposed-service hostnames in the ingress gateway, the real
# /usr/sbin/nginx with the module inside a namespace of its own. Services
# are exposed and deleted through the admin API on a loopback listener;
# readable and hashed hosts must reach the right (workspace, sandbox,
# port) through the FastPath stand-in of tests/e2e/ingress_servers.py.
# Checks an unknown hashed label (one refresh, then 404), a label
# collision (409, nothing stored), the SQLite store across a restart, the
# routing name's precedence (nginx -g over the environment over the file
# over unset), nginx -t on bad
# values, and two gateways sharing one PostgreSQL database (Debian's
# server, started here in a temporary directory on a unix socket).
# The services are exposed public (tests/e2e/hostnames-auth.sh checks
# the credentials the others need).
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PGD=""
PGBIN=""
hn_cleanup() {
	if [ -n "$PGD" ] && [ -f "$PGD/data/postmaster.pid" ]; then
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate stop >/dev/null 2>&1
	fi
	[ -n "$PGD" ] && rm -rf "$PGD"
	fw_cleanup
}
trap hn_cleanup EXIT
trap 'exit 130' INT TERM

fw_ingress_require hostnames sqlite3

NS=fwhost-$FW_ID
GW=192.0.2.1 # gateway A :80 (h2c :83), B :90; admin on 127.0.0.1
FASTPATH=192.0.2.2:50051
FASTLET=198.51.100.7:8080
CALLS=$FW_TMP/calls
KEYS=$FW_TMP/keys
DB=$FW_TMP/store/services.db
DOMAIN=apps.example.com

fw_netns_add "$NS"
for a in $GW/32 192.0.2.2/32 198.51.100.7/32 198.51.100.8/32; do
	ip -n "$NS" addr add "$a" dev lo
done
mkdir -p "$FW_TMP/store" "$FW_TMP/t" "$FW_TMP/gw-a" "$FW_TMP/pg-a" "$FW_TMP/pg-b"
fw_fastpath_stubs
: >"$CALLS"

fw_bg_ready "$NS" "$FW_TMP/fp.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" --listen $FASTPATH \
	--calls "$CALLS" --upstream "http://$FASTLET" --refused "http://198.51.100.8:8081" \
	--tls-upstream "https://198.51.100.8:8443"
fw_bg_ready "$NS" "$FW_TMP/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$FW_TMP/echo.log"
printf 'k=c2hhcmVkLXNlY3JldA==\n' >"$KEYS"

# ngx_conf DIR PORT ADMIN-PORT STORE [ROUTING-NAME-LINE] [EXTRA-HTTP]:
# one gateway's nginx.conf, its files under DIR
ngx_conf() {
	local dir=$1 port=$2 admin=$3 store=$4 routing=${5:-} extra=${6:-}
	mkdir -p "$dir/logs" "$dir/tmp"
	cat <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
# two workers: the index must be shared
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/logs/error.log info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	fastwall_ingress_keys $KEYS;
	fastwall_ingress_resolver $FASTPATH;
	fastwall_ingress_service_hosts *.$DOMAIN *.example.net;
	fastwall_ingress_service_store "$store";
	$routing
	$extra
	proxy_http_version 1.1;

	server {
		listen $GW:$port;
		listen $GW:$((port + 3)) http2;
		location / {
			fastwall_ingress on;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_connect_timeout 2s;
			grpc_send_timeout 2s;
			grpc_read_timeout 2s;
		}
	}
	server {
		listen $GW:$((port + 1));
		location / {
			fastwall_ingress on;
			fastwall_ingress_mode uri;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_read_timeout 2s;
		}
	}
	server {
		listen 127.0.0.1:$admin;
		# the same handler on a listener that is not local: refused
		listen $GW:$((admin + 100));
		listen unix:$dir/admin.sock;
		location /services {
			fastwall_ingress_admin;
		}
	}
}
EOF
}

# gw_start NAME DIR [ENV...]: starts a gateway, waits for it to answer;
# with GW_G set, that is nginx's -g (the command line's directives)
GW_G=""
gw_start() {
	local name=$1 dir=$2 port
	shift 2
	port=$(sed -n "s/^\t\tlisten $GW:\([0-9]*\);/\1/p;T;q" "$dir/nginx.conf")
	fw_bg "$NS" env "$@" "$FW_NGINX" -p "$dir" -c "$dir/nginx.conf" ${GW_G:+-g "$GW_G"}
	eval "PID_$name=${FW_PIDS[-1]}"
	fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://$GW:$port/" ||
		fw_die "gateway $name did not start: $(tail -5 "$dir/logs/error.log")"
}
gw_stop() {
	local pid
	pid=$(eval "echo \$PID_$1")
	kill -QUIT "$pid" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -9 "$pid"
}

# cget ARGS...: curl in the namespace; body to $FW_TMP/body; the status
cget() { fw_ns "$NS" curl -s --path-as-is -m 10 -o "$FW_TMP/body" -w '%{http_code}' "$@"; }
# host PORT HOST [PATH]: a request to a gateway by Host
host() { cget -H "Host: $2" "http://$GW:$1${3:-/}"; }
# admin PORT METHOD PATH: the admin API
admin() { cget -X "$2" "http://127.0.0.1:$1$3"; }
body() { cat "$FW_TMP/body"; }
jfield() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$FW_TMP/body" "$1"; }
got_header() {
	"$FW_PY" -c 'import json,sys
print("|".join(v for k, v in json.load(open(sys.argv[1]))["headers"] if k.lower() == sys.argv[2].lower()))' \
		"$FW_TMP/body" "$1"
}
calls() { grep -c "^$1\$" "$CALLS" || true; }
sql() { "$FW_PY" -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str, r)) for r in c.execute(sys.argv[2]))); c.commit()' "$DB" "$1"; }
refreshes() { grep -c 'refreshed from the store after a miss' "$1/logs/error.log" || true; }

echo "# fastwall hostname"
check_eq "hash gives the published vector of a named service" \
	"$("$FASTWALL" hostname hash --gateway gateway-a default my-sandbox web)" enh47uqyj7bpyttz
check_eq "and of an unnamed one" \
	"$("$FASTWALL" hostname hash --gateway gateway-a default my-sandbox)" eiud2z5apv3yeucg
check_eq "--gateway wins over FASTWALL_ROUTING_NAME" \
	"$(FASTWALL_ROUTING_NAME=gateway-b "$FASTWALL" hostname hash --gateway gateway-a default my-sandbox web)" \
	enh47uqyj7bpyttz
LABEL_B=$("$FASTWALL" hostname hash --gateway gateway-b default my-sandbox)
check_eq "FASTWALL_ROUTING_NAME alone is used" \
	"$(FASTWALL_ROUTING_NAME=gateway-b "$FASTWALL" hostname hash default my-sandbox)" "$LABEL_B"
"$FASTWALL" hostname hash default my-sandbox 2>"$FW_TMP/e"
check_eq "hash without a routing name: exit 2" "$?" 2
"$FASTWALL" hostname hash --gateway gateway-a default My 2>"$FW_TMP/e"
check_eq "hash of a bad name: exit 1 naming it" "$? $(cat "$FW_TMP/e")" \
	"1 fastwall hostname: sandbox 'My': not 1-19 bytes of [a-z0-9-] without an edge hyphen or \"--\""
check_eq "parse of a named service, the port dropped" \
	"$("$FASTWALL" hostname parse --base-domain "*.$DOMAIN" default--my-sandbox--web.$DOMAIN:8443)" \
	"default my-sandbox web"
check_eq "parse of an unnamed service prints -" \
	"$("$FASTWALL" hostname parse --base-domain $DOMAIN default--my-sandbox.$DOMAIN)" "default my-sandbox -"
"$FASTWALL" hostname parse --base-domain example.com --base-domain $DOMAIN ws--sb.$DOMAIN 2>"$FW_TMP/e"
check_eq "the first matching base domain decides: exit 1 with the reason" "$? $(cat "$FW_TMP/e")" \
	"1 fastwall hostname: 'ws--sb.$DOMAIN': not a service host: more than one label before the base domain"
"$FASTWALL" hostname parse --base-domain $DOMAIN ws---sb.$DOMAIN 2>"$FW_TMP/e"
check_eq "a bad part: exit 1" "$?" 1
"$FASTWALL" hostname parse -g gateway-a --base-domain $DOMAIN enh47uqyj7bpyttz.$DOMAIN 2>"$FW_TMP/e"
check_eq "a hashed label: exit 1, not reversible" "$? $(cat "$FW_TMP/e")" \
	"1 fastwall hostname: 'enh47uqyj7bpyttz.$DOMAIN': not a service host: a hashed label: only the gateway's index knows its target"

echo "# nginx -t"
A=$FW_TMP/gw-a
ngx_t() { # WANT-IN-ERROR CONF-ARGS...
	local want=$1
	shift
	ngx_conf "$FW_TMP/t" 70 8070 "sqlite:$FW_TMP/t/s.db" "$@" >"$FW_TMP/t.conf"
	if fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/t" -c "$FW_TMP/t.conf" >"$FW_TMP/t.out" 2>&1; then
		echo "nginx -t accepted it"
		return 1
	fi
	grep -F -- "$want" "$FW_TMP/t.out" || { cat "$FW_TMP/t.out"; return 1; }
}
ngx_conf "$A" 80 8081 "sqlite:$DB" "fastwall_ingress_routing_name gateway-a;" >"$A/nginx.conf"
check "the test's own nginx.conf passes nginx -t" fw_ns "$NS" "$FW_NGINX" -t -p "$A" -c "$A/nginx.conf"
check "nginx -t creates no store" test ! -e "$DB"
check "a routing name that is no DNS label: refused" \
	ngx_t '"Gateway_A": not a DNS label' "fastwall_ingress_routing_name Gateway_A;"
check "a service zone of 1k: refused" \
	ngx_t '"1k" is not a size of at least 32k' "" "fastwall_ingress_service_zone_size 1k;"
check "a service zone size that is no size: refused" \
	ngx_t 'fastwall_ingress_service_zone_size: "4q" is not a size of at least 32k' "" "fastwall_ingress_service_zone_size 4q;"
check "a service zone size given twice: refused" \
	ngx_t '"fastwall_ingress_service_zone_size" directive is duplicate' "" \
	"fastwall_ingress_service_zone_size 1m; fastwall_ingress_service_zone_size 1m;"
check "a service zone whose name another module took: refused" \
	ngx_t 'the shared memory zone "fastwall_ingress_services" is already declared for a different use' "" \
	"limit_conn_zone \$binary_remote_addr zone=fastwall_ingress_services:1m;"
ngx_t_sed() { # SED-SCRIPT WANT-IN-ERROR
	ngx_conf "$FW_TMP/t" 70 8070 "sqlite:$FW_TMP/t/s.db" | sed "$1" >"$FW_TMP/t.conf"
	if fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/t" -c "$FW_TMP/t.conf" >"$FW_TMP/t.out" 2>&1; then
		echo "nginx -t accepted it"
		return 1
	fi
	grep -F -- "$2" "$FW_TMP/t.out" || { cat "$FW_TMP/t.out"; return 1; }
}
check "a store of an unknown kind: refused" \
	ngx_t_sed 's|fastwall_ingress_service_store .*|fastwall_ingress_service_store mysql:x;|' \
	'"mysql:x" is neither sqlite:FILE nor postgresql:CONNINFO'
check "a service host that is not a wildcard name: refused" \
	ngx_t_sed "s/fastwall_ingress_service_hosts .*/fastwall_ingress_service_hosts $DOMAIN;/" \
	"\"$DOMAIN\": not a wildcard name *.DOMAIN"
check "a wildcard over a bad domain: refused" \
	ngx_t_sed 's/fastwall_ingress_service_hosts .*/fastwall_ingress_service_hosts *.a..b;/' \
	'"*.a..b": not a domain'
check "service hostname directives without service hosts: refused" \
	ngx_t_sed '/fastwall_ingress_service_hosts/d; /fastwall_ingress_admin/d' \
	'need "fastwall_ingress_service_hosts"'
check "the admin API without service hosts: refused" \
	ngx_t_sed '/fastwall_ingress_service_hosts/d; /fastwall_ingress_service_store/d' \
	'"fastwall_ingress_admin" needs "fastwall_ingress_service_hosts"'
ngx_conf "$FW_TMP/t" 70 8070 "sqlite:$FW_TMP/t/s.db" >"$FW_TMP/t.conf"
fw_ns "$NS" env FASTWALL_ROUTING_NAME=-bad "$FW_NGINX" -t -p "$FW_TMP/t" -c "$FW_TMP/t.conf" >"$FW_TMP/t.out" 2>&1
check_eq "a bad FASTWALL_ROUTING_NAME: refused" "$? $(grep -c 'FASTWALL_ROUTING_NAME "-bad": not a DNS label' "$FW_TMP/t.out")" "1 1"
# nginx reads -g before the file: the module is loaded there, not twice
sed 1d "$FW_TMP/t.conf" >"$FW_TMP/t-nolm.conf"
fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/t" -c "$FW_TMP/t-nolm.conf" \
	-g "load_module $FW_NGX_MODULE; fastwall_routing_name Gateway_D;" >"$FW_TMP/t.out" 2>&1
check_eq "a bad fastwall_routing_name on the command line: refused" \
	"$? $(grep -c 'fastwall_routing_name: "Gateway_D": not a DNS label .* in command line' "$FW_TMP/t.out")" "1 1"
fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/t" -c "$FW_TMP/t-nolm.conf" \
	-g "load_module $FW_NGX_MODULE; fastwall_routing_name gateway-d;" >"$FW_TMP/t.out" 2>&1
check_eq "a good one passes nginx -t" "$?" 0
fw_ns "$NS" env FASTWALL_ROUTING_NAME=-bad "$FW_NGINX" -t -p "$FW_TMP/t" -c "$FW_TMP/t-nolm.conf" \
	-g "load_module $FW_NGX_MODULE; fastwall_routing_name gateway-d;" >"$FW_TMP/t.out" 2>&1
check_eq "a bad FASTWALL_ROUTING_NAME is refused even under the command line's name" \
	"$? $(grep -c 'FASTWALL_ROUTING_NAME "-bad": not a DNS label' "$FW_TMP/t.out")" "1 1"
check "fastwall_routing_name in the file: refused, pointing at the http directive" \
	ngx_t_sed "1a fastwall_routing_name gateway-d;" \
	'"fastwall_routing_name" directive is for the command line (nginx -g)'

ngx_conf "$FW_TMP/t" 70 8070 "sqlite:$FW_TMP/no/such/dir/s.db" >"$FW_TMP/t.conf"
fw_ns "$NS" timeout 10 "$FW_NGINX" -p "$FW_TMP/t" -c "$FW_TMP/t.conf" >"$FW_TMP/t.out" 2>&1
check_eq "a store it can't open: nginx does not start, and says why" \
	"$? $(grep -c "can't open the sqlite service store \"$FW_TMP/no/such/dir/s.db\"" "$FW_TMP/t.out")" "1 1"

echo "# gateway A: SQLite store, routing name gateway-a"
gw_start A "$A"
check "the SQLite store was created on first start" test -s "$DB"
check "the index was hydrated before serving" grep -q 'service index hydrated from the store: 0 keys, routing name "gateway-a"' "$A/logs/error.log"
check_eq "expose default/my-sandbox/web on 8080: 200" "$(admin 8081 PUT '/services/default/my-sandbox/web?port=8080&public=true')" 200
check_eq "the answer gives the hashed host" "$(jfield host)" "enh47uqyj7bpyttz.$DOMAIN"
check_eq "and the readable one" "$(jfield readable_host)" "default--my-sandbox--web.$DOMAIN"
check_eq "expose the unnamed service of default/my-sandbox on 9090: 200" \
	"$(admin 8081 PUT '/services/default/my-sandbox?port=9090&public=true') $(jfield label)" "200 eiud2z5apv3yeucg"
check_eq "expose default/other/api on 7070: 200" "$(admin 8081 PUT '/services/default/other/api?port=7070&public=true')" 200
check_eq "the store holds the three" \
	"$(sql 'SELECT workspace, sandbox, service, port, label FROM fastwall_services ORDER BY port')" \
	"default|other|api|7070|$("$FASTWALL" hostname hash -g gateway-a default other api)
default|my-sandbox|web|8080|enh47uqyj7bpyttz
default|my-sandbox||9090|eiud2z5apv3yeucg"

check_eq "the hashed host of web: 200" "$(host 80 enh47uqyj7bpyttz.$DOMAIN '/a%2Fb?x=1')" 200
check_eq "resolved as workspace default, sandbox my-sandbox, port 8080" "$(calls 'default my-sandbox 8080 1')" 1
check_eq "the upstream got the raw path and the resolution's credential" \
	"$("$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"])' "$FW_TMP/body") $(got_header X-Fast-Sandbox-Route-Credential)" \
	"/a%2Fb?x=1 cred-my-sandbox"
check_eq "the hashed host of the unnamed service, with a port: 200" "$(host 80 eiud2z5apv3yeucg.$DOMAIN:80)" 200
check_eq "resolved to port 9090" "$(calls 'default my-sandbox 9090 1')" 1
check_eq "the readable host stays accepted with a routing name: 200" \
	"$(host 80 default--my-sandbox--web.$DOMAIN)" 200
check_eq "and shares the cache with the hashed one: still one resolve of 8080" \
	"$(calls 'default my-sandbox 8080 1')" 1
check_eq "the second base domain routes too" "$(host 80 default--other--api.example.net)" 200
check_eq "resolved to default/other:7070" "$(calls 'default other 7070 1')" 1
check_eq "HTTP/2 :authority with no Host: 200" \
	"$(cget --http2-prior-knowledge "http://enh47uqyj7bpyttz.$DOMAIN:83/" --connect-to "enh47uqyj7bpyttz.$DOMAIN:83:$GW:83")" 200
check_eq "a host outside the base domains is still a route scope: 401" "$(host 80 plain.example.org)" 401
check_eq "a scope header wins over a service host: 401 for a bad scope" \
	"$(cget -H "Host: enh47uqyj7bpyttz.$DOMAIN" -H 'OpenSandbox-Ingress-To: f1.x' "http://$GW:80/")" 401

target() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"])' "$FW_TMP/body"; }
check_eq "URI mode: a service host routes with the whole path" \
	"$(host 81 enh47uqyj7bpyttz.$DOMAIN /x/y?z) $(target)" "200 /x/y?z"
SCOPE=$("$FASTWALL" scope sign --keys "$KEYS" --key-id k default my-sandbox 8080)
sleep 0.1
check_eq "URI mode: an unknown service host falls through to the path's scope" \
	"$(host 81 zzzzzzzzzzzzzzzz.$DOMAIN "/$SCOPE/p") $(target)" "200 /p"
check_eq "URI mode: and without a scope there, 401" "$(host 81 zzzzzzzzzzzzzzzz.$DOMAIN /p)" 401

before=$(refreshes "$A")
sleep 0.1
check_eq "an unknown hashed label: 404" "$(host 80 aaaaaaaaaaaaaaaa.$DOMAIN)" 404
check_eq "after exactly one refresh of the index from the store" "$(($(refreshes "$A") - before))" 1
sleep 0.1
check_eq "an unknown readable service: 404" "$(host 80 default--nope.$DOMAIN)" 404
check_eq "a service host that is no valid label: 404" "$(host 80 default---x.$DOMAIN)" 404
check_eq "the resolver never heard of them" "$(grep -c -e nope -e aaaa "$CALLS")" 0

echo "# admin API"
check_eq "a listener that is not loopback: 403" "$(cget "http://$GW:8181/services")" 403
check_eq "a unix socket is local: 200" "$(cget --unix-socket "$A/admin.sock" http://gw/services)" 200
check_eq "a bad name: 400" "$(admin 8081 PUT '/services/Default/x?port=1')" 400
check_eq "no port: 400" "$(admin 8081 PUT '/services/default/x')" 400
check_eq "port 0: 400" "$(admin 8081 PUT '/services/default/x?port=0')" 400
check_eq "the policy port: 400" "$(admin 8081 PUT '/services/default/x?port=18080')" 400
check_eq "four parts: 404" "$(admin 8081 PUT '/services/a/b/c/d?port=1')" 404
check_eq "GET one service" "$(admin 8081 GET /services/default/my-sandbox/web) $(jfield port)" "200 8080"
check_eq "GET the list: three services" "$(admin 8081 GET /services) $(wc -l <"$FW_TMP/body")" "200 3"
check_eq "none of the refused ones was stored" "$(sql "SELECT count(*) FROM fastwall_services WHERE sandbox = 'x'")" 0

# a collision: the store says victim's label is another service's (80
# bits do not collide by chance, so the row is written as if they had)
VICTIM=$("$FASTWALL" hostname hash -g gateway-a default victim web)
sql "INSERT INTO fastwall_services (workspace, sandbox, service, port, routing_name, label, public) VALUES ('default', 'squatter', '', 7000, 'gateway-a', '$VICTIM', 1)" >/dev/null
sleep 0.1
host 80 bbbbbbbbbbbbbbbb.$DOMAIN >/dev/null # a miss: the index refreshes
check_eq "the squatter's row now routes by that label" "$(host 80 "$VICTIM.$DOMAIN")" 200
check_eq "expose of a service whose label is taken: 409" "$(admin 8081 PUT '/services/default/victim/web?port=8080&public=true')" 409
check_eq "with a clear error" "$(jfield error)" \
	"hostname label collision: $VICTIM is already default/squatter/; nothing was stored"
check_eq "nothing was stored" "$(sql "SELECT count(*) FROM fastwall_services WHERE sandbox = 'victim'")" 0
check_eq "nor indexed" "$(admin 8081 GET /services/default/victim/web)" 404
check_eq "the label still routes to the squatter" "$(host 80 "$VICTIM.$DOMAIN")" 200
check_eq "resolved as default/squatter:7000" "$(calls 'default squatter 7000 1')" 1

check_eq "delete default/other/api: 204" "$(admin 8081 DELETE /services/default/other/api)" 204
check_eq "its host is 404 at once" "$(host 80 default--other--api.$DOMAIN)" 404
check_eq "and its row is gone" "$(sql "SELECT count(*) FROM fastwall_services WHERE sandbox = 'other'")" 0
check_eq "a second delete: 404" "$(admin 8081 DELETE /services/default/other/api)" 404
check_eq "re-expose web on 8081: 200, same label" \
	"$(admin 8081 PUT '/services/default/my-sandbox/web?port=8081&public=true') $(jfield label)" "200 enh47uqyj7bpyttz"
check_eq "the store has the new port" "$(sql "SELECT port FROM fastwall_services WHERE service = 'web'")" 8081

echo "# restart"
gw_stop A
gw_start A "$A"
check "the index was hydrated from the file" grep -q 'hydrated from the store: 6 keys' "$A/logs/error.log"
check_eq "after a restart, web's hashed host: 200" "$(host 80 enh47uqyj7bpyttz.$DOMAIN)" 200
check_eq "at its new port" "$(calls 'default my-sandbox 8081 1')" 1
check_eq "the deleted service stays gone: 404" "$(host 80 default--other--api.$DOMAIN)" 404

echo "# the admin API on a listener that is not loopback, with a credential"
printf 'fw-admin-%s-0123456789\n' "$FW_ID" >"$FW_TMP/admin.cred"
CRED=$(head -n1 "$FW_TMP/admin.cred")
gw_stop A
cp "$A/nginx.conf" "$FW_TMP/nginx.conf.plain"
sed -i "/^http {/a\\	fastwall_ingress_service_admin_credential $FW_TMP/admin.cred;" "$A/nginx.conf"
gw_start A "$A"
check_eq "no credential: 401" "$(cget "http://$GW:8181/services")" 401
check_eq "another credential: 401" "$(cget -H "Authorization: Bearer ${CRED}x" "http://$GW:8181/services")" 401
check_eq "the credential as Basic: 401" "$(cget -H "Authorization: Basic $CRED" "http://$GW:8181/services")" 401
check_eq "the credential: 200, the list" \
	"$(cget -H "Authorization: Bearer $CRED" "http://$GW:8181/services") $(wc -l <"$FW_TMP/body")" "200 3"
check_eq "loopback needs none, as before: 200" "$(admin 8081 GET /services)" 200
check_fails "the credential is in no log line" grep -qF "$CRED" "$A/logs/error.log"
gw_stop A
cp "$FW_TMP/nginx.conf.plain" "$A/nginx.conf"
gw_start A "$A"
gw_stop A
gw_start A "$A" FASTWALL_ROUTING_NAME=gateway-b
check_eq "FASTWALL_ROUTING_NAME over the file: the gateway-b label routes" "$(host 80 "$LABEL_B.$DOMAIN")" 200
check_eq "and the gateway-a label of the same service is 404" "$(host 80 eiud2z5apv3yeucg.$DOMAIN)" 404
check_eq "readable hosts are unchanged" "$(host 80 default--my-sandbox.$DOMAIN)" 200
gw_stop A
LABEL_D=$("$FASTWALL" hostname hash -g gateway-d default my-sandbox)
sed -i 1d "$A/nginx.conf"
GW_G="load_module $FW_NGX_MODULE; fastwall_routing_name gateway-d;"
gw_start A "$A" FASTWALL_ROUTING_NAME=gateway-b
GW_G=""
check_eq "nginx -g over FASTWALL_ROUTING_NAME and the file: the gateway-d label routes" \
	"$(host 80 "$LABEL_D.$DOMAIN")" 200
check_eq "the environment's gateway-b label is 404" "$(host 80 "$LABEL_B.$DOMAIN")" 404
check_eq "the file's gateway-a label is 404" "$(host 80 eiud2z5apv3yeucg.$DOMAIN)" 404
check "the index was hydrated under the command line's name" \
	grep -q 'routing name "gateway-d"' "$A/logs/error.log"
n=$(grep -c 'reconfiguring' "$A/logs/error.log")
e=$(grep -c 'emerg' "$A/logs/error.log")
w=$(grep -c 'start worker process' "$A/logs/error.log")
kill -HUP "$PID_A"
# new workers: the master read the configuration again, -g and all
reloaded_d() { [ "$(grep -c 'start worker process' "$A/logs/error.log")" -gt "$w" ]; }
check "a reload with the module and the name on the command line starts new workers" \
	fw_eventually 5 reloaded_d
check_eq "without an error" \
	"$([ "$(grep -c 'reconfiguring' "$A/logs/error.log")" -gt "$n" ] && echo reloaded) $(grep -c 'emerg' "$A/logs/error.log")" \
	"reloaded $e"
check_eq "and it keeps the command line's name" "$(host 80 "$LABEL_D.$DOMAIN") $(host 80 "$LABEL_B.$DOMAIN")" "200 404"
gw_stop A
ngx_conf "$A" 80 8081 "sqlite:$DB" "fastwall_ingress_routing_name gateway-a;" >"$A/nginx.conf"
gw_start A "$A"
LABEL_C=$("$FASTWALL" hostname hash -g gateway-c default my-sandbox)
ngx_conf "$A" 80 8081 "sqlite:$DB" "fastwall_ingress_routing_name gateway-c;" >"$A/nginx.conf"
kill -HUP "$PID_A"
reloaded() { [ "$(host 80 "$LABEL_C.$DOMAIN")" = 200 ]; }
check "a reload with routing name gateway-c: its label routes" fw_eventually 5 reloaded
check_eq "and the gateway-a label no longer does" "$(host 80 eiud2z5apv3yeucg.$DOMAIN)" 404
gw_stop A
ngx_conf "$A" 80 8081 "sqlite:$DB" >"$A/nginx.conf"
gw_start A "$A"
check_eq "no routing name: a hashed host is no service host, 404" "$(host 80 enh47uqyj7bpyttz.$DOMAIN)" 404
check_eq "and the readable one routes" "$(host 80 default--my-sandbox--web.$DOMAIN)" 200
check_eq "expose without a routing name gives the readable host" \
	"$(admin 8081 PUT '/services/default/plain?port=6060&public=true') $(jfield host) $(jfield label)" \
	"200 default--plain.$DOMAIN "
gw_stop A

echo "# PostgreSQL: two gateways on one database"
PGBIN=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ] || ! id postgres >/dev/null 2>&1; then
	fw_not_ok "PostgreSQL server not installed (scripts/install-deps.sh installs postgresql)"
	fw_summary
	exit
fi
PGD=$(mktemp -d "/tmp/fastwall-pg-$FW_ID.XXXXXX")
chown postgres: "$PGD"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >"$PGD/initdb.log" 2>&1 ||
	fw_die "initdb failed: $(tail -3 "$PGD/initdb.log")"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w \
	-o "-k $PGD -c listen_addresses=''" start >/dev/null ||
	fw_die "postgres did not start: $(tail -3 "$PGD/log")"
PG="postgresql:host=$PGD dbname=postgres user=postgres"
psql_q() { runuser -u postgres -- psql -h "$PGD" -At -c "$1" postgres; }
PA=$FW_TMP/pg-a
PB=$FW_TMP/pg-b
# A also reads the store every second; B only after a miss
ngx_conf "$PA" 90 8091 "$PG" "fastwall_ingress_routing_name gateway-a;" \
	"fastwall_ingress_service_refresh 1s;" >"$PA/nginx.conf"
ngx_conf "$PB" 100 8092 "$PG" "fastwall_ingress_routing_name gateway-a;" >"$PB/nginx.conf"
gw_start PA "$PA"
gw_start PB "$PB"
check "the table was created in the database" psql_q "SELECT 1 FROM fastwall_services LIMIT 0"
check_eq "expose through gateway A: 200" "$(admin 8091 PUT '/services/team/db-box/web?port=5000&public=true')" 200
LABEL_PG=$(jfield label)
check_eq "the row is in PostgreSQL" "$(psql_q "SELECT workspace, sandbox, service, port, label FROM fastwall_services")" \
	"team|db-box|web|5000|$LABEL_PG"
before=$(refreshes "$PB")
sleep 0.1
check_eq "resolve the hashed host through gateway B: 200" "$(host 100 "$LABEL_PG.$DOMAIN")" 200
check_eq "B learned it by one refresh after the miss" "$(($(refreshes "$PB") - before))" 1
check_eq "resolved as team/db-box:5000" "$(calls 'team db-box 5000 1')" 1
check_eq "and the readable host through B" "$(host 100 team--db-box--web.$DOMAIN)" 200
# the database says team/other's label is db-box's (as if they had
# collided): B's own index does not know that, the unique index refuses it
OTHER=$("$FASTWALL" hostname hash -g gateway-a team other)
psql_q "UPDATE fastwall_services SET label = '$OTHER' WHERE sandbox = 'db-box'" >/dev/null
check_eq "expose through B of a label the database holds for another service: 409" \
	"$(admin 8092 PUT '/services/team/other?port=5001&public=true')" 409
check_eq "with a clear error" "$(jfield error)" \
	"hostname label collision: $OTHER is already another service's in the store; nothing was stored"
check_eq "nothing was stored" "$(psql_q "SELECT count(*) FROM fastwall_services WHERE sandbox = 'other'")" 0
psql_q "UPDATE fastwall_services SET label = '$LABEL_PG' WHERE sandbox = 'db-box'" >/dev/null
check_eq "delete through A: 204" "$(admin 8091 DELETE /services/team/db-box/web)" 204
check_eq "the row is gone from PostgreSQL" "$(psql_q "SELECT count(*) FROM fastwall_services WHERE sandbox = 'db-box'")" 0
check_eq "expose team/other through B now: 200" "$(admin 8092 PUT '/services/team/other?port=5001&public=true') $(jfield label)" "200 $OTHER"
gw_stop PB
gw_start PB "$PB"
check "a restarted B hydrates from PostgreSQL" grep -q 'hydrated from the store: 2 keys' "$PB/logs/error.log"
before=$(refreshes "$PB")
check_eq "team/other routes through it" "$(host 100 "$OTHER.$DOMAIN")" 200
check_eq "without a refresh" "$(($(refreshes "$PB") - before))" 0
sleep 0.1
check_eq "and the deleted one is 404" "$(host 100 team--db-box--web.$DOMAIN)" 404

in_index() { [ "$(admin 8091 GET "$1")" = "$2" ]; }
check_eq "expose team/keep through B: 200" "$(admin 8092 PUT '/services/team/keep?port=5002&public=true')" 200
check "A's timed refresh learns it without a miss" fw_eventually 5 in_index /services/team/keep 200
check_eq "delete it through B: 204" "$(admin 8092 DELETE /services/team/keep)" 204
check "and A's timed refresh forgets it" fw_eventually 5 in_index /services/team/keep 404
check "a refresh interval that is no time: refused" \
	ngx_t 'invalid value' "" "fastwall_ingress_service_refresh soon;"

for d in "$A" "$PA" "$PB"; do
	check "no worker crashed in $(basename "$d")" bash -c "! grep -q 'exited on signal' '$d/logs/error.log'"
done

fw_summary
