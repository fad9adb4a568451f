#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: cross-cluster routing and placement in the ingress module.
# Two real nginx gateways in one namespace stand for two clusters: "west"
# (A, plain HTTP) and "east" (B, TLS with a certificate made here, its
# data plane under the prefix /xc). Each has its own FastPath stand-in and
# both route to one echo Fastlet. Two more peers of A are echo servers
# posing as gateways, so the hop itself can be seen: "north" over TLS and
# "south" over plain HTTP. Checks that a request at A for a sandbox of B
# reaches B (Host, SNI, path) and B's Fastlet without the hop headers, that
# the hop carries none of the routing markers a gateway built like the
# public reference acts on (x-agentbox-cross-cluster, -cluster-scheme) and
# the peer's scheme in x-forwarded-proto, that B knows a hop by its path
# prefix alone and refuses to forward one again (a cluster "loop" that A
# and B each believe the other serves), that WebSocket works across, that
# an unknown cluster is 502, that a local
# sandbox is resolved at A, the placement endpoint's five steps, the TTL of
# member records, that A publishes its own records to B's admin API (on
# change and each interval, refused without the shared token or for
# B's own cluster, logged once while B hangs or is down, never holding up
# A's requests, a refusal logged with its reason and without the token),
# and that nginx -t refuses bad cluster directives.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM

fw_ingress_require xcluster

NS=fwxc-$FW_ID
GW_A=192.0.2.1      # cluster west: :80 header mode, :81 URI mode, :88 admin
GW_B=192.0.2.11     # cluster east: :443 TLS, data plane under /xc
FP_A=192.0.2.2:50051
FP_B=192.0.2.12:50051
FASTLET=198.51.100.7:8080
NORTH=198.51.100.21:9443 # an echo posing as north's gateway (TLS)
SOUTH=198.51.100.22:8080 # an echo posing as south's gateway (plain)
KEYS=$FW_TMP/keys
NS_NAME=tenant-a
UUID=0f8fad5b-d9cb-469f-a165-70867728950e

fw_netns_add "$NS"
for a in $GW_A 192.0.2.2 $GW_B 192.0.2.12 198.51.100.7 198.51.100.21 198.51.100.22; do
	ip -n "$NS" addr add "$a/32" dev lo
done

fw_fastpath_stubs


# one certificate per TLS gateway, named as the peers are configured
for h in gw-east.test gw-north.test; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj "/CN=$h" -addext "subjectAltName=DNS:$h" \
		-keyout "$FW_TMP/$h.key" -out "$FW_TMP/$h.crt" >/dev/null 2>&1 || fw_die "openssl req failed"
done
cat "$FW_TMP/gw-east.test.crt" "$FW_TMP/gw-north.test.crt" >"$FW_TMP/peers.crt"

: >"$FW_TMP/calls.a"
: >"$FW_TMP/calls.b"
for c in a b; do
	fp=$FP_A
	[ $c = b ] && fp=$FP_B
	fw_bg_ready "$NS" "$FW_TMP/fp.$c.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" --listen $fp \
		--calls "$FW_TMP/calls.$c" --upstream "http://$FASTLET" --refused "http://198.51.100.99:1" \
		--tls-upstream "https://198.51.100.99:1"
done
fw_bg_ready "$NS" "$FW_TMP/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$FW_TMP/echo.log"
fw_bg_ready "$NS" "$FW_TMP/north.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $NORTH --log "$FW_TMP/north.log" \
	--cert "$FW_TMP/gw-north.test.crt" --key "$FW_TMP/gw-north.test.key"
fw_bg_ready "$NS" "$FW_TMP/south.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $SOUTH --log "$FW_TMP/south.log"

printf 'k=c2hhcmVkLXNlY3JldA==\n' >"$KEYS"
TOKEN=$FW_TMP/cluster.token
printf 'xc-token-7f3a9c2e5b1d4f60\n' >"$TOKEN"
# the admin listeners are not loopback: they need a credential
ADMIN_CRED=$FW_TMP/admin.cred
printf 'xc-admin-3e8d1c7b9a2f4e60\n' >"$ADMIN_CRED"

# common http-level text of both gateways; $1 is the prefix dir
ngx_head() {
	cat <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
# two workers: the member records must be seen by both
worker_processes 2;
pid $1/nginx.pid;
error_log $1/error.log info;
events { worker_connections 256; }
http {
	client_body_temp_path $1/body;
	proxy_temp_path $1/proxy;
	fastcgi_temp_path $1/fastcgi;
	uwsgi_temp_path $1/uwsgi;
	scgi_temp_path $1/scgi;
	fastwall_ingress_keys $KEYS;
	proxy_http_version 1.1;
	map \$http_upgrade \$connection_upgrade {
		default upgrade;
		'' '';
	}
EOF
}

resolve_loc() {
	cat <<'EOF'
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_connect_timeout 2s;
			grpc_send_timeout 2s;
			grpc_read_timeout 2s;
		}
EOF
}

# the data-plane location, the same for a local and a forwarded sandbox
data_loc() { # MODE
	cat <<EOF
		location / {
			fastwall_ingress on;
			fastwall_ingress_mode $1;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
			proxy_set_header Host \$fastwall_ingress_cluster_host;
			proxy_set_header Upgrade \$http_upgrade;
			proxy_set_header Connection \$connection_upgrade;
			proxy_ssl_server_name on;
			proxy_ssl_name \$fastwall_ingress_cluster_sni;
			proxy_ssl_verify on;
			proxy_ssl_trusted_certificate $FW_TMP/peers.crt;
			proxy_read_timeout 1h;
		}
EOF
}

# A (west); $1 replaces the cluster directives when given
conf_a() {
	ngx_head "$FW_TMP/a"
	cat <<EOF
	fastwall_ingress_resolver $FP_A;
	${1:-fastwall_ingress_cluster_id west;
	fastwall_ingress_cluster east https://gw-east.test/xc address=$GW_B;
	fastwall_ingress_cluster north https://gw-north.test:9443/n/ address=${NORTH%:*};
	fastwall_ingress_cluster south http://gw-south.test:8080/s address=$SOUTH;
	# misconfigured on purpose: east is not the gateway of loop, and east
	# believes west is
	fastwall_ingress_cluster loop https://gw-east.test/xc address=$GW_B;
	fastwall_ingress_cluster_ttl 5s;
	fastwall_ingress_cluster_token $TOKEN;
	fastwall_ingress_cluster_admin_credential $ADMIN_CRED;
	fastwall_ingress_cluster_publish east http://$GW_B:88/fastwall/cluster/members;
	fastwall_ingress_cluster_publish south http://$SOUTH/s/fastwall/cluster/members;
	fastwall_ingress_cluster_publish_interval 1s;}
	access_log $FW_TMP/a/access.log;
	server {
		listen $GW_A:80;
$(data_loc header)
$(resolve_loc)
	}
	server {
		listen $GW_A:81;
$(data_loc uri)
$(resolve_loc)
	}
	server {
		listen $GW_A:88;
		location /fastwall/cluster/ {
			fastwall_ingress_cluster_admin;
		}
	}
}
EOF
}

# B (east): TLS, logs the server name, Host and target each hop arrived with
conf_b() {
	ngx_head "$FW_TMP/b"
	cat <<EOF
	fastwall_ingress_resolver $FP_B;
	fastwall_ingress_cluster_id east;
	fastwall_ingress_cluster_prefix /xc;
	fastwall_ingress_cluster west http://gw-west.test address=$GW_A;
	fastwall_ingress_cluster loop http://gw-west.test address=$GW_A;
	fastwall_ingress_cluster_token $TOKEN;
	fastwall_ingress_cluster_admin_credential $ADMIN_CRED;
	fastwall_ingress_cluster_ttl 3s;
	log_format hop '\$ssl_server_name \$host \$request_uri';
	access_log $FW_TMP/b/access.log hop;
	server {
		listen $GW_B:443 ssl;
		ssl_certificate $FW_TMP/gw-east.test.crt;
		ssl_certificate_key $FW_TMP/gw-east.test.key;
$(data_loc header)
$(resolve_loc)
	}
	server {
		listen $GW_B:88;
		location /fastwall/cluster/ {
			fastwall_ingress_cluster_admin;
		}
	}
}
EOF
}

mkdir -p "$FW_TMP/a" "$FW_TMP/b"

echo "# nginx -t"
ngx_test() { # CLUSTER-DIRECTIVES WANT-IN-ERROR
	conf_a "$1" >"$FW_TMP/a/test.conf"
	if fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/a" -c "$FW_TMP/a/test.conf" >"$FW_TMP/a/test.out" 2>&1; then
		echo "nginx -t accepted it"
		return 1
	fi
	grep -F -- "$2" "$FW_TMP/a/test.out" || { cat "$FW_TMP/a/test.out"; return 1; }
}
conf_a >"$FW_TMP/a/nginx.conf"
conf_b >"$FW_TMP/b/nginx.conf"
check "A's nginx.conf passes nginx -t" fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/a" -c "$FW_TMP/a/nginx.conf"
check "B's nginx.conf passes nginx -t" fw_ns "$NS" "$FW_NGINX" -t -p "$FW_TMP/b" -c "$FW_TMP/b/nginx.conf"
check "a cluster id with a dot: refused" \
	ngx_test "fastwall_ingress_cluster_id we.st;" '"we.st" is not 1-63 characters'
check "a peer with an ftp:// URL: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster east ftp://gw-east.test;" \
	'"ftp://gw-east.test" is not http(s)://HOST[:PORT][/PREFIX]'
check "a peer whose host does not resolve, without address=: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster east https://gw-east.invalid;" \
	'host not found in "gw-east.invalid"'
check "a peer with a bad address=: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster east https://gw-east.test address=gw-east;" \
	'"gw-east" is not an IP address'
check "an unknown peer parameter: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster east https://gw-east.test weight=2;" \
	'unknown parameter "weight=2"'
check "a peer prefix with a query: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster east https://gw-east.test/x?y address=$GW_B;" \
	'is not http(s)://HOST[:PORT][/PREFIX]'
check "a peer given twice: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster east http://e address=$GW_B; fastwall_ingress_cluster east http://e address=$GW_B;" \
	'"east" is duplicate'
check "a peer with this cluster's own id: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster west http://w address=$GW_B;" \
	"\"west\" is this cluster's own id"
check "peers without a cluster id: refused" \
	ngx_test "fastwall_ingress_cluster east http://e address=$GW_B;" 'need "fastwall_ingress_cluster_id"'
check "the admin endpoint without a cluster id: refused" \
	ngx_test "fastwall_ingress_cluster_ttl 30s;" '"fastwall_ingress_cluster_admin" needs "fastwall_ingress_cluster_id"'
check "a member zone of 1k: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster_zone_size 1k;" \
	'"1k" is not a size of at least 32k'
check "a member zone size that is no size: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster_zone_size 4q;" \
	'fastwall_ingress_cluster_zone_size: "4q" is not a size of at least 32k'
check "a member zone size given twice: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster_zone_size 1m; fastwall_ingress_cluster_zone_size 1m;" \
	'"fastwall_ingress_cluster_zone_size" directive is duplicate'
check "a member zone whose name another module took: refused" \
	ngx_test "fastwall_ingress_cluster_id west; limit_conn_zone \$binary_remote_addr zone=fastwall_ingress_cluster:1m;" \
	'the shared memory zone "fastwall_ingress_cluster" is already declared for a different use'
check "a TTL of 0: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster_ttl 0s;" \
	'fastwall_ingress_cluster_ttl must be at least 1s'
check "a prefix that is no path: refused" \
	ngx_test "fastwall_ingress_cluster_id west; fastwall_ingress_cluster_prefix xc;" \
	'"xc" is not a path'
EASTPEER="fastwall_ingress_cluster_id west; fastwall_ingress_cluster east http://e address=$GW_B;"
check "publishing to a cluster that is no peer: refused" \
	ngx_test "$EASTPEER fastwall_ingress_cluster_token $TOKEN; fastwall_ingress_cluster_publish mars http://$GW_B:88/m/members;" \
	'"mars" is not a peer'
check "publishing without a token: refused" \
	ngx_test "$EASTPEER fastwall_ingress_cluster_publish east http://$GW_B:88/m/members;" \
	'"fastwall_ingress_cluster_publish" needs "fastwall_ingress_cluster_token"'
check "a publish URL that is not the members endpoint: refused" \
	ngx_test "$EASTPEER fastwall_ingress_cluster_token $TOKEN; fastwall_ingress_cluster_publish east http://$GW_B:88/m;" \
	"\"http://$GW_B:88/m\" is not http(s)://HOST[:PORT]/PATH/members"
check "an https publish URL without trusted certificates: refused" \
	ngx_test "$EASTPEER fastwall_ingress_cluster_token $TOKEN; fastwall_ingress_cluster_publish east https://$GW_B/members;" \
	'needs "fastwall_ingress_cluster_publish_ssl_trusted_certificate"'
check "a publish interval of 10ms: refused" \
	ngx_test "$EASTPEER fastwall_ingress_cluster_publish_interval 10ms;" \
	'fastwall_ingress_cluster_publish_interval must be at least 100ms'
printf 'short-secret\n' >"$FW_TMP/short.token"
check "a token file of 12 characters: refused, without its content" \
	ngx_test "$EASTPEER fastwall_ingress_cluster_token $FW_TMP/short.token;" \
	"\"$FW_TMP/short.token\" does not hold one line of 16-256 visible ASCII characters"
check_eq "the message does not hold the secret" "$(grep -c short-secret "$FW_TMP/a/test.out")" 0
check "a token without a cluster id: refused" \
	ngx_test "fastwall_ingress_cluster_token $TOKEN;" 'need "fastwall_ingress_cluster_id"'

fw_bg "$NS" "$FW_NGINX" -p "$FW_TMP/a" -c "$FW_TMP/a/nginx.conf"
NGINX_A=${FW_PIDS[-1]}
fw_bg "$NS" "$FW_NGINX" -p "$FW_TMP/b" -c "$FW_TMP/b/nginx.conf"
NGINX_B=${FW_PIDS[-1]}
fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://$GW_A:80/" ||
	fw_die "nginx A did not start: $(tail -5 "$FW_TMP/a/error.log")"
fw_eventually 5 fw_ns "$NS" curl -sk -o /dev/null "https://$GW_B:443/" ||
	fw_die "nginx B did not start: $(tail -5 "$FW_TMP/b/error.log")"

scope() { "$FASTWALL" scope sign --keys "$KEYS" --key-id k "$NS_NAME" "$1" "${2:-8080}"; }
cget() {
	fw_ns "$NS" curl -s --path-as-is -m 10 -o "$FW_TMP/body" -D "$FW_TMP/hdr" -w '%{http_code}' "$@"
}
aget() { cget -H "OpenSandbox-Ingress-To: $1" "${@:3}" "http://$GW_A:80${2:-/}"; }
jget() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$FW_TMP/body" "$1"; }
got_header() {
	"$FW_PY" -c 'import json,sys
print("|".join(v for k, v in json.load(open(sys.argv[1]))["headers"] if k.lower() == sys.argv[2].lower()))' \
		"$FW_TMP/body" "$1"
}
markers() { echo "$(got_header x-agentbox-cross-cluster)/$(got_header x-agentbox-cluster-scheme)/$(got_header x-agentbox-upstream-host)"; }

echo "# a sandbox of cluster east, asked at west"
EAST=$(scope "east.$UUID")
code=$(aget "$EAST" '/a%2Fb/c?x=%20y' -H 'x-agentbox-upstream-host: 203.0.113.66:1' \
	-H 'X-Fast-Sandbox-Route-Credential: forged')
check_eq "reaches east's Fastlet through both gateways: 200" "$code" 200
check_eq "with the path as the client sent it (east stripped its /xc)" "$(jget target)" '/a%2Fb/c?x=%20y'
check_eq "and east's credential alone" "$(got_header X-Fast-Sandbox-Route-Credential)" "cred-east.$UUID"
check_eq "no hop header reaches the Fastlet (a client's forged one neither)" "$(markers)" "//"
check_eq "x-forwarded-proto is the hop's scheme (west to east over TLS)" "$(got_header X-Forwarded-Proto)" https
check_eq "east resolved it" "$(grep -c " east.$UUID " "$FW_TMP/calls.b")" 1
check_eq "west never asked its resolver" "$(grep -c " east.$UUID " "$FW_TMP/calls.a")" 0
check_eq "east saw SNI gw-east.test, Host gw-east.test and /xc + the path" \
	"$(tail -n 1 "$FW_TMP/b/access.log")" 'gw-east.test gw-east.test /xc/a%2Fb/c?x=%20y'
code=$(cget "http://$GW_A:81/$EAST/uri-mode?q=1")
check_eq "URI mode at west: 200, the scope segment gone" "$code $(jget target)" "200 /uri-mode?q=1"
check_eq "the hop carried it in OpenSandbox-Ingress-To (URI mode at west, header mode at east)" \
	"$(tail -n 1 "$FW_TMP/b/access.log")" 'gw-east.test gw-east.test /xc/uri-mode?q=1'
code=$(cget -H "Host: $EAST" "http://$GW_A:80/via-host")
check_eq "a scope in Host at west still reaches east: 200" "$code $(jget target)" "200 /via-host"

echo "# WebSocket across clusters"
check "a WebSocket echo through west and east" \
	fw_ns "$NS" "$FW_PY" "$FW_NGX_SERVERS" ws --gateway $GW_A:80 --scope "$(scope "east.$UUID")"

echo "# the hop itself: peers that are echo servers"
NORTH_SB=$(scope "north.$UUID" 9000)
code=$(aget "$NORTH_SB" '/p?x=1' -H 'X-Forwarded-Proto: gopher' -H 'x-agentbox-cluster-scheme: ftp')
check_eq "north (TLS): 200 at its path prefix" "$code $(jget target)" "200 /n/p?x=1"
check_eq "with Host as the peer is named" "$(got_header Host)" gw-north.test:9443
check_eq "with SNI as the peer is named" "$(jget sni)" gw-north.test
check_eq "the hop carries the resolved upstream host, and neither routing marker (the client's neither)" \
	"$(markers)" "//$NORTH"
check_eq "x-forwarded-proto is the peer's scheme, not the client's nor how it came in" \
	"$(got_header X-Forwarded-Proto)" https
check_eq "the scope rides in OpenSandbox-Ingress-To" "$(got_header OpenSandbox-Ingress-To)" "$NORTH_SB"
check_eq "no credential header from west" "$(got_header X-Fast-Sandbox-Route-Credential)" ""
code=$(aget "$(scope "south.$UUID")" '/q')
check_eq "south (plain http): 200, its prefix, no marker, no SNI" \
	"$code $(jget target) $(markers) $(jget sni)" "200 /s/q //$SOUTH None"
check_eq "Host as the peer is named" "$(got_header Host)" gw-south.test:8080
check_eq "x-forwarded-proto: http, south's scheme" "$(got_header X-Forwarded-Proto)" http

echo "# unknown clusters, loops, local sandboxes"
check_eq "a sandbox of an unknown cluster: 502" "$(aget "$(scope "mars.$UUID")")" 502
check_eq "an empty cluster part (.uuid): 502" "$(aget "$(scope ".$UUID")")" 502
check_eq "neither asked the resolver" "$(grep -c -e "mars.$UUID" -e " .$UUID" "$FW_TMP/calls.a")" 0
refused_again() { grep -c "a cross-cluster hop for sandbox \"loop.$UUID\" of another cluster, not forwarded again" \
	"$FW_TMP/b/error.log"; }
check_eq "a loop: west sends a sandbox of loop to east, which refuses a second hop: 502" \
	"$(aget "$(scope "loop.$UUID")" /loop) $(refused_again)" "502 1"
check_eq "east saw it once, under its prefix" "$(grep -c ' /xc/loop$' "$FW_TMP/b/access.log")" 1
check_eq "nobody resolved it" "$(grep -c "loop.$UUID" "$FW_TMP/calls.a" "$FW_TMP/calls.b" | cut -d: -f2 | tr '\n' ' ')" "0 0 "
code=$(aget "$(scope "west.$UUID")" '/local?z=2' -H 'x-agentbox-cross-cluster: true' \
	-H 'x-agentbox-upstream-host: 203.0.113.66:1')
check_eq "a sandbox of west itself: resolved here, straight to the Fastlet" \
	"$code $(jget target) $(grep -c " west.$UUID " "$FW_TMP/calls.a")" "200 /local?z=2 1"
check_eq "its Host is the Fastlet's, no hop header passes" "$(got_header Host) $(markers)" "$FASTLET //"
code=$(aget "$(scope sb-legacy)" /legacy)
check_eq "an id without a cluster is local" "$code $(grep -c ' sb-legacy ' "$FW_TMP/calls.a")" "200 1"
bget() { cget -k -H "OpenSandbox-Ingress-To: ${SB:-$EAST}" "${@:2}" "https://$GW_B$1"; }
check_eq "at east, a request under /xc is a hop, whoever sends it: /xc goes" \
	"$(bget /xc/keep) $(jget target)" "200 /keep"
check_eq "a marker header makes no hop: the path stays, the header goes" \
	"$(bget /keep -H 'x-agentbox-cross-cluster: true') $(jget target) $(markers)" "200 /keep //"
check_eq "and only a whole segment: /xcx stays" "$(bget /xcx) $(jget target)" "200 /xcx"
SB=$(scope "west.$UUID")
check_eq "at east, a client's request for a sandbox of west (not under /xc) is forwarded, a marker or not: 200" \
	"$(bget /to-west -H 'x-agentbox-cross-cluster: true') $(jget target)" "200 /to-west"
check_eq "the same under /xc is a hop for another cluster: 502" "$(bget /xc/to-west)" 502
unset SB

echo "# placement at west"
acurl() { fw_ns "$NS" curl -H "Authorization: Bearer $(cat "$ADMIN_CRED")" "$@"; }
ADMIN=http://$GW_A:88/fastwall/cluster
post() { acurl -s -m 5 -o "$FW_TMP/post" -w '%{http_code}' --data-binary "$1" "$ADMIN/members"; }
place() { acurl -s -m 5 -G --data-urlencode "namespace=${2:-$NS_NAME}" --data-urlencode "ref=$1" "$ADMIN/place"; }
rec() { # CLUSTER ENV POOL IDLE AUTOSCALE HEADROOM
	[ "$(post "cluster=$1&namespace=$NS_NAME&env=$2&pool=$3&idle=$4&autoscale=$5&headroom=$6")" = 204 ]
}
publish() {
	rec west e1 p 1 0 0 && rec east e1 p 5 0 0 &&
		rec west e2 p 0 1 -1 && rec east e2 pe 2 0 0 && rec north e2 pn 3 0 0 &&
		rec west e2t p 0 0 0 && rec north e2t a 2 0 0 && rec east e2t z 2 0 0 &&
		rec west e3 p 0 1 2 && rec east e3 p 0 1 -1 &&
		rec west e4 p 0 0 0 && rec east e4 p 0 1 3 && rec south e4 big 0 1 -1 &&
		rec west e5 p 0 1 0 && rec east e5 p 0 0 7
}
check_eq "a record is accepted: 204" "$(post "cluster=east&namespace=$NS_NAME&env=e0&pool=p&idle=1")" 204
check_eq "a record of a cluster that is no peer: 403" \
	"$(post "cluster=mars&namespace=$NS_NAME&env=e0&pool=p&idle=1") $(cat "$FW_TMP/post")" \
	'403 {"error":"not this cluster nor a configured peer"}'
check_eq "a malformed record: 400 with the reason" \
	"$(post "cluster=east&namespace=$NS_NAME&env=e0&pool=p&idle=01") $(cat "$FW_TMP/post")" \
	'400 {"error":"idle or headroom is not a decimal count up to 1000000 (headroom: or -1)"}'
check_eq "a record over 1k: 413" "$(post "cluster=east&pool=$(head -c 2000 /dev/zero | tr '\0' a)")" 413
check "the records of west, east, north and south are accepted" publish
check_eq "1: west has idle, east more: local" "$(place e1)" '{"decision":"local","step":1}'
check_eq "2: west none idle, north the most idle: forward as north::pn" \
	"$(place e2)" '{"decision":"forward","cluster":"north","target":"north::pn","step":2}'
check_eq "2: equal idle: the lower cluster id" \
	"$(place e2t)" '{"decision":"forward","cluster":"east","target":"east::z","step":2}'
check_eq "3: nobody idle, west can grow: local" "$(place e3)" '{"decision":"local","step":3}'
check_eq "4: only peers can grow: unbounded south wins" \
	"$(place e4)" '{"decision":"forward","cluster":"south","target":"south::big","step":4}'
check_eq "5: nobody can serve: park" "$(place e5)" '{"decision":"park","step":5}'
check_eq "a bare name that is no env: 404" "$(place ruby)" '{"error":"no such env"}'
check_eq "the same env in another namespace is another env: 404" "$(place e1 tenant-b)" '{"error":"no such env"}'
check_eq "cluster::pool is obeyed as written" \
	"$(place 'east::gpu//reg.example/img')" '{"decision":"forward","cluster":"east","target":"east::gpu","step":0}'
check_eq "west::pool is local" "$(place ' west :: p ')" '{"decision":"local","step":0}'
check_eq "an unknown cluster: 404" "$(place 'mars::p')" '{"error":"unknown cluster"}'
check_eq "a bad reference: 400 with the reason" "$(place '::p')" '{"error":"empty cluster before ::"}'
seen=0
for _ in 1 2 3 4 5 6 7 8; do
	[ "$(place e4)" = '{"decision":"forward","cluster":"south","target":"south::big","step":4}' ] &&
		seen=$((seen + 1))
done
check_eq "every worker sees the records (8 fresh connections)" "$seen" 8
acurl -s -m 5 "$ADMIN/members" >"$FW_TMP/members"
check "the records are listed with their time left" \
	grep -q "^cluster=south&namespace=$NS_NAME&env=e4&pool=big&idle=0&autoscale=1&headroom=-1 ttl=[0-5]\$" \
	"$FW_TMP/members"
check_eq "the admin API answers only its two endpoints" \
	"$(acurl -s -o /dev/null -w '%{http_code}' "$ADMIN/other") $(acurl -s -o /dev/null -w '%{http_code}' -X DELETE "$ADMIN/members")" \
	"404 405"
rec east e7 p 1 0 0
kill -HUP "$NGINX_A"
reloaded() { grep -q 'reconfiguring' "$FW_TMP/a/error.log"; }
fw_eventually 5 reloaded
sleep 0.5
check_eq "the records survive a reload" \
	"$(place e7)" '{"decision":"forward","cluster":"east","target":"east::p","step":2}'
# the TTL is 5 s here: west keeps publishing e2 each second, north stops
for _ in 1 2 3 4 5 6; do
	rec west e2 p 0 1 -1
	sleep 1
done
check_eq "after the TTL north stops counting: west grows instead" "$(place e2)" '{"decision":"local","step":3}'
sleep 5.5
check_eq "and when west's own record expires too the env is unknown" "$(place e2)" '{"error":"no such env"}'
acurl -s -m 5 "$ADMIN/members" >"$FW_TMP/members"
check_eq "expired records are gone from the list" "$(grep -c . "$FW_TMP/members")" 0

echo "# west publishes its own records to east"
BADMIN=http://$GW_B:88/fastwall/cluster
bplace() { acurl -s -m 5 -G --data-urlencode "namespace=$NS_NAME" --data-urlencode "ref=$1" "$BADMIN/place"; }
bpost() { # BODY CURL-ARGS...
	acurl -s -m 5 -o "$FW_TMP/post" -w '%{http_code}' --data-binary "$1" "${@:2}" "$BADMIN/members"
}
FWD_PUB='{"decision":"forward","cluster":"west","target":"west::pw","step":2}'
check_eq "east knows no env pub yet" "$(bplace pub)" '{"error":"no such env"}'
rec west pub pw 2 0 0
at_east() { [ "$(bplace "$1")" = "$2" ]; }
check "a record posted to west's admin reaches east's placement (within 6 s)" \
	fw_eventually 6 at_east pub "$FWD_PUB"
acurl -s -m 5 "$BADMIN/members" >"$FW_TMP/members.b"
check "east lists it with its own TTL (3 s)" \
	grep -q "^cluster=west&namespace=$NS_NAME&env=pub&pool=pw&idle=2&autoscale=0&headroom=0 ttl=[0-3]\$" \
	"$FW_TMP/members.b"
# the same record again and again is no change: only the interval sends it
for _ in 1 2 3 4 5; do
	rec west pub pw 2 0 0
	sleep 1
done
check_eq "west's periodic publication keeps it at east past east's TTL" "$(bplace pub)" "$FWD_PUB"
rec west pub pw 0 1 4
check "new counts are published: east now forwards for west's headroom (step 4)" \
	fw_eventually 3 at_east pub '{"decision":"forward","cluster":"west","target":"west::pw","step":4}'
check "west stops publishing it once it expires there (5 s), east drops it 3 s later" \
	fw_eventually 12 at_east pub '{"error":"no such env"}'
TOK=$(cat "$TOKEN")
PUB="cluster=west&namespace=$NS_NAME&env=q&pool=p&idle=1"
check_eq "a published record with the token, of the publisher's own cluster: 204" \
	"$(bpost "$PUB" -H 'X-Fastwall-Cluster-From: west' -H "X-Fastwall-Cluster-Token: $TOK")" 204
check_eq "a wrong token: 403" \
	"$(bpost "$PUB" -H 'X-Fastwall-Cluster-From: west' -H 'X-Fastwall-Cluster-Token: wrong-token-0123456789') $(cat "$FW_TMP/post")" \
	'403 {"error":"bad or missing X-Fastwall-Cluster-Token"}'
check_eq "no token: 403" \
	"$(bpost "$PUB" -H 'X-Fastwall-Cluster-From: west') $(cat "$FW_TMP/post")" \
	'403 {"error":"bad or missing X-Fastwall-Cluster-Token"}'
check_eq "a peer publishing east's own records: 403" \
	"$(bpost "cluster=east&namespace=$NS_NAME&env=q&pool=p&idle=1" -H 'X-Fastwall-Cluster-From: west' -H "X-Fastwall-Cluster-Token: $TOK") $(cat "$FW_TMP/post")" \
	"403 {\"error\":\"a peer publishes only its own cluster's records\"}"
check_eq "a publisher that is no peer: 403" \
	"$(bpost "cluster=mars&namespace=$NS_NAME&env=q&pool=p&idle=1" -H 'X-Fastwall-Cluster-From: mars' -H "X-Fastwall-Cluster-Token: $TOK") $(cat "$FW_TMP/post")" \
	'403 {"error":"published by a cluster that is no configured peer"}'
check_eq "nothing refused was kept" \
	"$(acurl -s -m 5 "$BADMIN/members" | grep -c -e '^cluster=east' -e '^cluster=mars')" 0
check "south's echo got the publications at the path of its URL" \
	grep -q '^/s/fastwall/cluster/members$' "$FW_TMP/south.log"
check "and west logged that south answered 200, not 204" \
	grep -q 'member records not published to cluster "south" at http://'"$SOUTH"'/s/fastwall/cluster/members: answered 200 OK (' \
	"$FW_TMP/a/error.log"
check_eq "the token never reached west's log (south echoed it back)" "$(grep -c -F "$TOK" "$FW_TMP/a/error.log")" 0

echo "# on change, not only each interval"
# west with an interval of a minute: its new workers publish once at start,
# then only a change can reach east before the minute is up
w=$(grep -c 'start worker process' "$FW_TMP/a/error.log")
sed -i 's/fastwall_ingress_cluster_publish_interval 1s;/fastwall_ingress_cluster_publish_interval 60s;/' "$FW_TMP/a/nginx.conf"
kill -HUP "$NGINX_A"
a_reloaded() { [ "$(grep -c 'start worker process' "$FW_TMP/a/error.log")" -gt "$w" ]; }
check "west reloaded with a publish interval of 60 s" fw_eventually 5 a_reloaded
sleep 1
rec west chg pc 1 0 0
check "a new record reaches east long before the interval (within 6 s)" \
	fw_eventually 6 at_east chg '{"decision":"forward","cluster":"west","target":"west::pc","step":2}'
w=$(grep -c 'start worker process' "$FW_TMP/a/error.log")
conf_a >"$FW_TMP/a/nginx.conf"
kill -HUP "$NGINX_A"
fw_eventually 5 a_reloaded || fw_die "west did not reload: $(tail -5 "$FW_TMP/a/error.log")"
sleep 0.5

echo "# east hangs, then is down"
unpublished() { grep -c 'member records not published to cluster "east"' "$FW_TMP/a/error.log" || true; }
check_eq "no failure logged while east was up" "$(unpublished)" 0
B_PIDS="$NGINX_B $(pgrep -P "$NGINX_B" | tr '\n' ' ')"
# shellcheck disable=SC2086 # a list of pids
kill -STOP $B_PIDS
WEST_SB=$(scope "west.$UUID")
answered=0
for _ in $(seq 12); do
	rec west pub2 pw 1 0 0
	[ "$(fw_ns "$NS" curl -s -m 2 -o /dev/null -w '%{http_code}' -H "OpenSandbox-Ingress-To: $WEST_SB" "http://$GW_A:80/while-east-hangs")" = 200 ] &&
		answered=$((answered + 1))
	sleep 0.5
done
check_eq "every request at west answered while east accepted and never answered (12, fresh connections)" \
	"$answered" 12
check "west logged that east does not answer" \
	fw_eventually 3 grep -q 'member records not published to cluster "east" at .*: no answer' "$FW_TMP/a/error.log"
# shellcheck disable=SC2086
kill -CONT $B_PIDS
kill -QUIT "$NGINX_B"
for _ in $(seq 100); do
	kill -0 "$NGINX_B" 2>/dev/null || break
	sleep 0.05
done
for _ in 1 2 3 4; do
	rec west pub2 pw 1 0 0
	sleep 1
done
check_eq "a hang and four refused publications within a minute: logged once" "$(unpublished)" 1
fw_bg "$NS" "$FW_NGINX" -p "$FW_TMP/b" -c "$FW_TMP/b/nginx.conf"
fw_eventually 5 fw_ns "$NS" curl -sk -o /dev/null "https://$GW_B:443/" ||
	fw_die "nginx B did not start again: $(tail -5 "$FW_TMP/b/error.log")"
rec west pub2 pw 1 0 0
check "east back: west's next publication reaches it" \
	fw_eventually 3 at_east pub2 '{"decision":"forward","cluster":"west","target":"west::pw","step":2}'
check "and west says so" grep -q 'member records published to cluster "east" at .* again' "$FW_TMP/a/error.log"

echo "# tokens that differ"
NGINX_B=${FW_PIDS[-1]}
printf 'another-token-0123456789\n' >"$FW_TMP/other.token"
sed -i "s|fastwall_ingress_cluster_token .*;|fastwall_ingress_cluster_token $FW_TMP/other.token;|" "$FW_TMP/b/nginx.conf"
w=$(grep -c 'start worker process' "$FW_TMP/b/error.log")
kill -HUP "$NGINX_B"
b_reloaded() { [ "$(grep -c 'start worker process' "$FW_TMP/b/error.log")" -gt "$w" ]; }
check "east reloaded with another token" fw_eventually 5 b_reloaded
# a fresh publisher at west, so its line is not held back by the minute
w=$(grep -c 'start worker process' "$FW_TMP/a/error.log")
kill -HUP "$NGINX_A"
fw_eventually 5 a_reloaded || fw_die "west did not reload: $(tail -5 "$FW_TMP/a/error.log")"
rec west tok p 1 0 0
check "west logs east's refusal with its reason" \
	fw_eventually 3 grep -q 'member records not published to cluster "east" at .*: answered 403 Forbidden {"error":"bad or missing X-Fastwall-Cluster-Token"}' \
	"$FW_TMP/a/error.log"
check_eq "and east kept none of them" "$(bplace tok)" '{"error":"no such env"}'
check_eq "the secrets never reached a log" \
	"$(cat "$FW_TMP/a/error.log" "$FW_TMP/b/error.log" | grep -c -F -e "$TOK" -e another-token)" 0

check "no worker crashed" bash -c "! grep -q 'exited on signal' '$FW_TMP/a/error.log' '$FW_TMP/b/error.log'"

fw_summary
