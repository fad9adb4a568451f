#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the ingress module in the real /usr/sbin/nginx, inside a
# namespace of its own. A FastPath stand-in (grpcio, generated from
# gateway/proto/fastpath_v2.proto now) answers per sandbox name and logs
# each call; an echo upstream shows what reached it; curl is the client.
# Checks the status table, both route modes, raw path preservation, the
# credential header, the cache (by the resolver's call log) and
# single-flight misses, WebSocket and unbuffered server-sent events, and
# that nginx -t refuses bad directives.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM

fw_ingress_require ingress

NS=fwing-$FW_ID
GW=192.0.2.1           # nginx: :80 header mode, :81 URI mode
FASTPATH=192.0.2.2:50051
FASTLET=198.51.100.7:8080
REFUSED=198.51.100.8:8081 # nothing listens
CALLS=$FW_TMP/calls
NGX=$FW_TMP/nginx
KEYS=$FW_TMP/keys
NS_NAME=tenant-a

fw_netns_add "$NS"
FASTLET_TLS=198.51.100.9:8443
for a in $GW/32 192.0.2.2/32 198.51.100.7/32 198.51.100.8/32 198.51.100.9/32; do
	ip -n "$NS" addr add "$a" dev lo
done

mkdir -p "$NGX/logs" "$NGX/tmp"
fw_fastpath_stubs
: >"$CALLS"

fw_bg_ready "$NS" "$FW_TMP/fp.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" --listen $FASTPATH \
	--calls "$CALLS" --upstream "http://$FASTLET" --refused "http://$REFUSED" \
	--tls-upstream "https://$FASTLET_TLS"
ECHO_LOG=$FW_TMP/echo.log
fw_bg_ready "$NS" "$FW_TMP/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$ECHO_LOG"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=fastlet.test \
	-keyout "$FW_TMP/tls.key" -out "$FW_TMP/tls.crt" >/dev/null 2>&1 || fw_die "openssl req failed"
fw_bg_ready "$NS" "$FW_TMP/tls.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET_TLS --log "$ECHO_LOG" \
	--cert "$FW_TMP/tls.crt" --key "$FW_TMP/tls.key"

# two keys; the published vector's is "k"
printf '# test ring\nk=c2hhcmVkLXNlY3JldA==\nb=%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$KEYS"

# nginx.conf with the server blocks; $1 is extra http-level text
ngx_conf() {
	cat <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
# two workers: the cache and the single-flight marks must be shared
worker_processes 2;
pid $NGX/nginx.pid;
error_log $NGX/logs/error.log info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $NGX/tmp/body;
	proxy_temp_path $NGX/tmp/proxy;
	fastcgi_temp_path $NGX/tmp/fastcgi;
	uwsgi_temp_path $NGX/tmp/uwsgi;
	scgi_temp_path $NGX/tmp/scgi;
	${1:-fastwall_ingress_keys $KEYS;
	fastwall_ingress_resolver $FASTPATH;}
	fastwall_ingress_cache_size 1m;
	proxy_http_version 1.1;
	# streams: WebSocket upgrades, server-sent events unbuffered
	map \$http_upgrade \$connection_upgrade {
		default upgrade;
		'' '';
	}
	proxy_set_header Upgrade \$http_upgrade;
	proxy_set_header Connection \$connection_upgrade;
	proxy_buffering off;
	proxy_request_buffering off;
	proxy_read_timeout 1h;
	proxy_send_timeout 1h;
	client_max_body_size 0;

	server {
		listen $GW:80;
		# h2c clients on :83, the same location
		listen $GW:83 http2;
		location / {
			fastwall_ingress on;
			fastwall_ingress_mode header;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		# the same routes, resolved for another access mode
		location /central/ {
			fastwall_ingress on;
			fastwall_ingress_mode header;
			fastwall_ingress_access_mode central-proxy;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		include $NGX/resolve.conf;
	}
	# keep-alive to the Fastlets: the module's balancer in an upstream block
	upstream fastwall_fastlet {
		fastwall_ingress_upstream;
		keepalive 16;
	}
	server {
		listen $GW:82;
		location / {
			fastwall_ingress on;
			proxy_pass http://fastwall_fastlet\$fastwall_ingress_uri;
			# a location's own proxy_set_header drops the inherited ones
			proxy_set_header Host \$fastwall_ingress_upstream_host;
			proxy_set_header Upgrade \$http_upgrade;
			proxy_set_header Connection \$connection_upgrade;
		}
		# header mode without variables in proxy_pass (ingress.md,
		# "Performance"): nginx then sends the URI as the client did
		location /nv/ {
			fastwall_ingress on;
			proxy_pass http://fastwall_fastlet;
			proxy_set_header Host \$fastwall_ingress_upstream_host;
			proxy_set_header Connection "";
		}
		include $NGX/resolve.conf;
	}
	server {
		listen $GW:81;
		location / {
			fastwall_ingress on;
			fastwall_ingress_mode uri;
			fastwall_ingress_access_mode central-proxy;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		include $NGX/resolve.conf;
	}
}
EOF
}
cat >"$NGX/resolve.conf" <<'EOF'
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

echo "# fastwall scope"
check_eq "sign gives the published vector" \
	"$("$FASTWALL" scope sign --keys "$KEYS" --key-id k tenant-a sandbox-123 44772)" \
	f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA
check_eq "verify prints namespace, sandbox and port" \
	"$("$FASTWALL" scope verify --keys "$KEYS" f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA)" \
	"tenant-a sandbox-123 44772"
"$FASTWALL" scope verify --keys "$KEYS" f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfB \
	>"$FW_TMP/v.out" 2>"$FW_TMP/v.err"
check_eq "verify of a tampered scope: exit 1, nothing on stdout, the reason on stderr" \
	"$? $(wc -c <"$FW_TMP/v.out") $(cat "$FW_TMP/v.err")" \
	"1 0 fastwall scope: refused: a part is not canonical unpadded base64url"
"$FASTWALL" scope verify --keys "$FW_TMP/nope" x 2>"$FW_TMP/v.err"
check_eq "verify with a missing key ring: exit 1, the file named" \
	"$? $(cat "$FW_TMP/v.err")" "1 fastwall scope: can't open $FW_TMP/nope: No such file or directory"
"$FASTWALL" scope sign --keys "$KEYS" --key-id k tenant-a sb 0 2>"$FW_TMP/v.err"
check_eq "sign of port 0: exit 1" "$? $(cat "$FW_TMP/v.err")" \
	"1 fastwall scope: port '0': port is not decimal 1-65535 without sign or leading zero"
"$FASTWALL" scope frob --keys "$KEYS" 2>/dev/null
check_eq "an unknown verb: exit 2" "$?" 2

echo "# nginx -t"
ngx_test() { # EXTRA-HTTP-TEXT WANT-IN-ERROR
	ngx_conf "$1" >"$NGX/test.conf"
	if fw_ns "$NS" "$FW_NGINX" -t -p "$NGX" -c "$NGX/test.conf" >"$NGX/test.out" 2>&1; then
		echo "nginx -t accepted it"
		return 1
	fi
	grep -F -- "$2" "$NGX/test.out" || { cat "$NGX/test.out"; return 1; }
}
ngx_conf >"$NGX/nginx.conf"
check "the test's own nginx.conf passes nginx -t" fw_ns "$NS" "$FW_NGINX" -t -p "$NGX" -c "$NGX/nginx.conf"
printf 'k=c2hhcmVk\nK=bad\n' >"$FW_TMP/badkeys"
check "a key ring with a bad line: refused, file and line named" \
	ngx_test "fastwall_ingress_keys $FW_TMP/badkeys; fastwall_ingress_resolver $FASTPATH;" \
	"fastwall_ingress_keys: $FW_TMP/badkeys: line 2: not id=BASE64"
check "fastwall_ingress_upstream after keepalive: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver $FASTPATH; upstream u2 { keepalive 4; fastwall_ingress_upstream; }" \
	'must come before "keepalive"'
check "a missing key ring: refused" \
	ngx_test "fastwall_ingress_keys $FW_TMP/nope; fastwall_ingress_resolver $FASTPATH;" \
	"can't open $FW_TMP/nope"
check "a resolver that is a host name: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver fastpath:50051;" \
	'"fastpath:50051" is not ADDRESS:PORT'
check "a resolver without a port: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver 192.0.2.2;" \
	'"192.0.2.2" is not ADDRESS:PORT'
check "no key ring with fastwall_ingress on: refused" \
	ngx_test "fastwall_ingress_resolver $FASTPATH;" 'needs "fastwall_ingress_keys"'
check "a cache of 1k: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver $FASTPATH; fastwall_ingress_cache_size 1k;" \
	'"1k" is not a size of at least 32k'
check "a cache size that is no size: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver $FASTPATH; fastwall_ingress_cache_size 4q;" \
	'fastwall_ingress_cache_size: "4q" is not a size of at least 32k'
check "a cache size given twice: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver $FASTPATH; fastwall_ingress_cache_size 1m; fastwall_ingress_cache_size 2m;" \
	'"fastwall_ingress_cache_size" directive is duplicate'
check "a cache zone whose name another module took: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver $FASTPATH; limit_conn_zone \$binary_remote_addr zone=fastwall_ingress:1m;" \
	'the shared memory zone "fastwall_ingress" is already declared for a different use'
check "an unknown mode: refused" \
	ngx_test "fastwall_ingress_keys $KEYS; fastwall_ingress_resolver $FASTPATH; fastwall_ingress_mode wildcard;" \
	'invalid value "wildcard"'

fw_bg "$NS" "$FW_NGINX" -p "$NGX" -c "$NGX/nginx.conf"
NGINX_PID=${FW_PIDS[-1]}
fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://$GW:80/" ||
	fw_die "nginx did not start: $(tail -5 "$NGX/logs/error.log")"

scope() { "$FASTWALL" scope sign --keys "$KEYS" --key-id "${3:-k}" "$NS_NAME" "$1" "$2"; }
calls() { grep -c " $1 " "$CALLS" || true; }
# cget ARGS...: curl from inside the namespace; body to $FW_TMP/body,
# headers to $FW_TMP/hdr; prints the status code
cget() {
	fw_ns "$NS" curl -s --path-as-is -m 10 -o "$FW_TMP/body" -D "$FW_TMP/hdr" -w '%{http_code}' "$@"
}
hget() { cget -H "OpenSandbox-Ingress-To: $1" "http://$GW:80${2:-/}"; }
header() { grep -i "^$1:" "$FW_TMP/hdr" | cut -d' ' -f2- | tr -d '\r'; }
# what the echo upstream got: target, or all values of one header
got_target() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"])' "$FW_TMP/body"; }
got_header() {
	"$FW_PY" -c 'import json,sys
print("|".join(v for k, v in json.load(open(sys.argv[1]))["headers"] if k.lower() == sys.argv[2].lower()))' \
		"$FW_TMP/body" "$1"
}

echo "# header mode"
OK=$(scope sb-ok 44772)
check_eq "OpenSandbox-Ingress-To with a valid scope: 200" "$(hget "$OK" '/a%2Fb/..%2F/c//d?x=%20y&y=%2F')" 200
check_eq "the raw path and query reach the upstream byte for byte" "$(got_target)" '/a%2Fb/..%2F/c//d?x=%20y&y=%2F'
check_eq "the resolver got namespace, sandbox, port and direct-fastlet-proxy" \
	"$(grep -m1 ' sb-ok ' "$CALLS")" "tenant-a sb-ok 44772 1"
check_eq "the upstream gets the resolver's credential" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-sb-ok
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H 'x-fast-sandbox-route-credential: forged' \
	-H 'X-Fast-Sandbox-Route-Credential: forged-too' "http://$GW:80/creds")
check_eq "a caller's credential headers (any case): 200" "$code" 200
check_eq "are stripped, the resolver's alone goes upstream" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-sb-ok
check_eq "a cache hit makes no second resolver call" "$(calls sb-ok)" 1
code=$(cget -H "OPEN-SANDBOX-INGRESS: $OK" "http://$GW:80/deprecated")
check_eq "the deprecated OPEN-SANDBOX-INGRESS header routes: 200" "$code" 200
check_eq "to the same path" "$(got_target)" /deprecated
code=$(cget -H "Host: $OK" "http://$GW:80/via-host?q=1")
check_eq "a scope in Host routes: 200" "$code" 200
check_eq "to the same path and query" "$(got_target)" '/via-host?q=1'
code=$(cget -H "Host: $OK:80" "http://$GW:80/")
check_eq "a scope in Host with a port: 200" "$code" 200
code=$(cget -H "Host: f1.bad" -H "OpenSandbox-Ingress-To: $OK" "http://$GW:80/")
check_eq "OpenSandbox-Ingress-To wins over a bad Host" "$code" 200
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H "OPEN-SANDBOX-INGRESS: f1.bad" "http://$GW:80/")
check_eq "OpenSandbox-Ingress-To wins over the deprecated header" "$code" 200

echo "# scope headers: one route, and only the verified one goes upstream"
OTHER=$(scope sb-other 44772)
lines() { wc -l <"$ECHO_LOG"; }
before=$(lines)
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H "OpenSandbox-Ingress-To: $OTHER" "http://$GW:80/two-to")
check_eq "two OpenSandbox-Ingress-To: 400" "$code" 400
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H "opensandbox-ingress-to: $OK" "http://$GW:80/two-to")
check_eq "two OpenSandbox-Ingress-To in two cases, the same scope: 400" "$code" 400
code=$(cget -H "OPEN-SANDBOX-INGRESS: $OK" -H "Open-Sandbox-Ingress: $OTHER" "http://$GW:80/two-legacy")
check_eq "two OPEN-SANDBOX-INGRESS: 400" "$code" 400
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H "OPEN-SANDBOX-INGRESS: $OTHER" \
	-H "OPEN-SANDBOX-INGRESS: $OK" "http://$GW:80/two-legacy")
check_eq "two OPEN-SANDBOX-INGRESS beside one OpenSandbox-Ingress-To: 400" "$code" 400
code=$(cget --http2-prior-knowledge -H "OpenSandbox-Ingress-To: $OK" -H "OpenSandbox-Ingress-To: $OTHER" \
	"http://$GW:83/two-to-h2")
check_eq "two OpenSandbox-Ingress-To over h2c: 400" "$code" 400
check_eq "none of them reached the upstream or the resolver" "$(lines) $(calls sb-other)" "$before 0"
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H "OPEN-SANDBOX-INGRESS: $OTHER" "http://$GW:80/both")
check_eq "OpenSandbox-Ingress-To and another scope in OPEN-SANDBOX-INGRESS: 200, the first one's route" \
	"$code $(got_header X-Fast-Sandbox-Route-Credential)" "200 cred-sb-ok"
check_eq "the upstream gets the verified scope alone" \
	"$(got_header OpenSandbox-Ingress-To)/$(got_header OPEN-SANDBOX-INGRESS)" "$OK/"
code=$(cget -H "OpenSandbox-Ingress-To: f1.bad" -H "OPEN-SANDBOX-INGRESS: $OK" "http://$GW:80/")
check_eq "a bad OpenSandbox-Ingress-To beside a good OPEN-SANDBOX-INGRESS: 401, never the other" "$code" 401
code=$(cget -H "OPEN-SANDBOX-INGRESS: $OK" "http://$GW:80/legacy-alone")
check_eq "OPEN-SANDBOX-INGRESS alone: the upstream gets it, and no OpenSandbox-Ingress-To" \
	"$code $(got_header OPEN-SANDBOX-INGRESS)/$(got_header OpenSandbox-Ingress-To)" "200 $OK/"
code=$(cget -H "Host: $OK" "http://$GW:80/host-scope")
check_eq "a scope in Host: no scope header upstream" \
	"$code $(got_header OPEN-SANDBOX-INGRESS)/$(got_header OpenSandbox-Ingress-To)" "200 /"

echo "# refusals: 401, 501"
before=$(wc -l <"$CALLS")
check_eq "the published vector verifies: 200" \
	"$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA)" 200
check_eq "tampered mac: 401" \
	"$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfQ)" 401
check_eq "tampered port: 401" \
	"$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44773.k.gtJzW337dCO-kStxh2GPfA)" 401
check_eq "non-canonical mac: 401" \
	"$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfB)" 401
check_eq "port with a leading zero: 401" \
	"$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.044772.k.gtJzW337dCO-kStxh2GPfA)" 401
check_eq "unknown key id: 401" \
	"$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.z.gtJzW337dCO-kStxh2GPfA)" 401
check_eq "truncated mac: 401" "$(hget f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO)" 401
OLD=$("$FW_PY" -c 'import base64, hmac, hashlib
m = hmac.new(b"shared-secret", b"opensandbox-fleets-route-v1\ntenant-a\nsandbox-123\n44772\n", hashlib.sha256).digest()[:16]
print("f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k." + base64.urlsafe_b64encode(m).decode().rstrip("="))')
check_eq "the same scope under the older tag: 401" "$(hget "$OLD")" 401
check_eq "an unsigned legacy route: 401" "$(hget sb-ok-44772)" 401
check_eq "no scope at all: 401" "$(cget "http://$GW:80/")" 401
check_eq "a scope under another key id (b) for this ring: 200" "$(hget "$(scope sb-ok 44772 b)")" 200
# a worker remembers the scopes it verified: on one connection (so one
# worker) a remembered scope's text with another mac must still be refused
V=f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA
vmac() { printf '%s' "${V%.*}.$1"; }
codes=$(fw_ns "$NS" curl -s -m 10 -o /dev/null -w '%{http_code} ' \
	-H "OpenSandbox-Ingress-To: $V" "http://$GW:80/" --next -o /dev/null -w '%{http_code} ' \
	-H "OpenSandbox-Ingress-To: $(vmac gtJzW337dCO-kStxh2GPfQ)" "http://$GW:80/" --next -o /dev/null -w '%{http_code} ' \
	-H "OpenSandbox-Ingress-To: $(vmac "${OK##*.}")" "http://$GW:80/" --next -o /dev/null -w '%{http_code} ' \
	-H "OpenSandbox-Ingress-To: $(vmac gtJzW337dCO-kStxh2GPfAA)" "http://$GW:80/" --next -o /dev/null -w '%{http_code}' \
	-H "OpenSandbox-Ingress-To: $V" "http://$GW:80/")
check_eq "one worker: verified, one mac bit off, another scope's mac, a longer mac, verified again" \
	"$codes" "200 401 401 401 200"
check_eq "none of the refusals called the resolver" "$(wc -l <"$CALLS")" "$((before + 1))"
check_eq "the policy port 18080: 501" "$(hget "$(scope sb-policy 18080)")" 501
check_eq "without a resolver call" "$(calls sb-policy)" 0
check "the log names the reason, never the scope" \
	bash -c "grep -q 'route scope refused: mac does not match' '$NGX/logs/error.log' &&
		! grep -q 'gtJzW337dCO' '$NGX/logs/error.log'"

echo "# resolution failures"
check_eq "sandbox not found: 404" "$(hget "$(scope sb-missing 8080)")" 404
for s in sb-notready sb-unpublished sb-unavail sb-busy sb-internal sb-badendpoint sb-badcred; do
	code=$(hget "$(scope $s 8080)")
	check_eq "$s: 503 with Retry-After: 1" "$code $(header Retry-After)" "503 1"
done
cp "$FW_TMP/body" "$FW_TMP/body.notready"
hget "$(scope sb-busy 8080)" >/dev/null
check "not ready and overloaded answer the same body" cmp "$FW_TMP/body" "$FW_TMP/body.notready"
t0=$(date +%s%N)
code=$(hget "$(scope sb-slow 8080)")
ms=$((($(date +%s%N) - t0) / 1000000))
check_eq "a resolver slower than 2 s: 503 with Retry-After: 1" "$code $(header Retry-After)" "503 1"
check "after about 2 s (took ${ms} ms)" test "$ms" -ge 1800 -a "$ms" -lt 3500
check_eq "a failure is not cached: the next request calls again" \
	"$(hget "$(scope sb-missing 8080)") $(calls sb-missing)" "404 2"

echo "# upstream failures"
REF=$(scope sb-refused 8080)
check_eq "upstream connection refused: 502" "$(hget "$REF")" 502
check_eq "the entry is dropped: the next request resolves again" "$(hget "$REF") $(calls sb-refused)" "502 2"
MARK=$(scope sb-mark 8080)
check_eq "the marked sandbox resolves and answers: 200" "$(hget "$MARK" /plain)" 200
for v in stale_route credential_rejected route_unavailable upstream_unavailable; do
	code=$(hget "$MARK" "/__marker/$v/502")
	check_eq "upstream 502 with marker $v: 503, Retry-After: 1" "$code $(header Retry-After)" "503 1"
	check_eq "with an empty body" "$(wc -c <"$FW_TMP/body")" 0
	check "and neither the marker nor the internal header" \
		bash -c "! grep -qi -e '^X-Fast-Sandbox-Proxy-Error' -e '^X-Fastlet-Internal' '$FW_TMP/hdr'"
done
check_eq "each marker dropped the entry: the 3 after the first resolved again" "$(calls sb-mark)" 4
code=$(hget "$MARK" /__marker/stale_route/200)
check_eq "a marker on a 2xx is ignored: 200 and the body" "$code $(wc -c <"$FW_TMP/body")" "200 40"
code=$(hget "$MARK" /__marker/something_else/502)
check_eq "an unknown marker value: the upstream's 502 passes" "$code" 502
check_eq "neither dropped the entry (one resolve, after the last marker)" "$(calls sb-mark)" 5
code=$(hget "$MARK" /__marker/stale_route/404)
check_eq "a marker on a 404: 503" "$code" 503
check_eq "the request was not replayed" "$(grep -c '^/__marker/stale_route/404$' "$ECHO_LOG")" 1
check_eq "and the entry was dropped" "$(hget "$MARK" /plain) $(calls sb-mark)" "200 6"

echo "# cache lifetime"
SHORT=$(scope sb-short 8080)
hget "$SHORT" >/dev/null
check_eq "an answer expiring within 5 s is not cached" "$(hget "$SHORT") $(calls sb-short)" "200 2"
check_eq "the cache key holds the port: another port resolves" \
	"$(hget "$(scope sb-ok 44773)") $(grep -c ' sb-ok 44773 ' "$CALLS")" "200 1"

echo "# single flight"
SLOW=$(scope sb-slowok 8080)
sf=()
for i in 1 2 3 4 5; do
	fw_ns "$NS" curl -s -o /dev/null -w '%{http_code}\n' -m 10 \
		-H "OpenSandbox-Ingress-To: $SLOW" "http://$GW:80/sf$i" >"$FW_TMP/sf.$i" &
	sf+=($!)
done
wait "${sf[@]}"
check_eq "5 concurrent misses of one key: all 200" "$(cat "$FW_TMP"/sf.* | sort | uniq -c | tr -s ' ')" " 5 200"
check_eq "and one resolver call" "$(calls sb-slowok)" 1
# concurrent (status, Retry-After) of 5 requests for sandbox $1
burst() {
	local sc pids=() i
	sc=$(scope "$1" 8080)
	for i in 1 2 3 4 5; do
		fw_ns "$NS" curl -s -o /dev/null -D "$FW_TMP/bh.$i" -w '%{http_code}\n' -m 10 \
			-H "OpenSandbox-Ingress-To: $sc" "http://$GW:80/b$i" >"$FW_TMP/b.$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in 1 2 3 4 5; do
		echo "$(cat "$FW_TMP/b.$i") $(grep -i '^Retry-After:' "$FW_TMP/bh.$i" | tr -d '\r' | cut -d' ' -f2)"
	done | sort | uniq -c | tr -s ' '
}
check_eq "5 concurrent misses of a sandbox not found: all 404" "$(burst sb-slowmissing)" " 5 404 "
check_eq "from one resolver call" "$(calls sb-slowmissing)" 1
check_eq "5 concurrent misses while the resolver is unavailable: all 503, Retry-After: 1" \
	"$(burst sb-slowunavail)" " 5 503 1"
check_eq "from one resolver call" "$(calls sb-slowunavail)" 1
check_eq "the failure is not kept for a later request" \
	"$(hget "$(scope sb-slowmissing 8080)") $(calls sb-slowmissing)" "404 2"

echo "# access modes: a location's mode is part of the cache key"
# FastPath answers sb-mode with the plain Fastlet and cred-sb-mode-direct
# for direct-fastlet-proxy, the TLS one and cred-sb-mode-central for
# central-proxy; / is direct, /central/ central, on one server
MODE=$(scope sb-mode 7000)
mget() { # PATH: the status, the credential and the endpoint that got it
	local code
	code=$(hget "$MODE" "$1")
	echo "$code $(got_header X-Fast-Sandbox-Route-Credential) $(got_header Host)"
}
check_eq "direct first: the direct endpoint and credential" \
	"$(mget /m1)" "200 cred-sb-mode-direct $FASTLET"
check_eq "then central: the central endpoint and credential, not the cached direct ones" \
	"$(mget /central/m2)" "200 cred-sb-mode-central $FASTLET_TLS"
check_eq "each asked FastPath once, in its mode" \
	"$(grep ' sb-mode 7000 ' "$CALLS" | sort | tr '\n' ,)" "tenant-a sb-mode 7000 0,tenant-a sb-mode 7000 1,"
check_eq "direct again: its own cached answer" "$(mget /m3)" "200 cred-sb-mode-direct $FASTLET"
check_eq "central again: its own cached answer" "$(mget /central/m4)" "200 cred-sb-mode-central $FASTLET_TLS"
check_eq "no more calls" "$(grep -c ' sb-mode 7000 ' "$CALLS")" 2
MODE=$(scope sb-mode 7001)
check_eq "the reverse order: central first" "$(mget /central/r1)" "200 cred-sb-mode-central $FASTLET_TLS"
check_eq "then direct gets the direct answer" "$(mget /r2)" "200 cred-sb-mode-direct $FASTLET"
# concurrent misses in two modes: each waits only on a resolve of its mode
SMODE=$(scope sb-slowmode 7000)
smp=()
for i in 1 2 3 4; do
	p=/sm$i
	[ $((i % 2)) = 0 ] && p=/central/sm$i
	fw_ns "$NS" curl -s -m 10 -o "$FW_TMP/sm.$i" -H "OpenSandbox-Ingress-To: $SMODE" "http://$GW:80$p" &
	smp+=($!)
done
wait "${smp[@]}"
sm() { "$FW_PY" -c 'import json,sys
h = dict((k.lower(), v) for k, v in json.load(open(sys.argv[1]))["headers"])
print(h["x-fast-sandbox-route-credential"], h["host"])' "$FW_TMP/sm.$1"; }
check_eq "two concurrent misses per mode: each gets its mode's answer" \
	"$(sm 1); $(sm 2); $(sm 3); $(sm 4)" \
	"cred-sb-slowmode-direct $FASTLET; cred-sb-slowmode-central $FASTLET_TLS; cred-sb-slowmode-direct $FASTLET; cred-sb-slowmode-central $FASTLET_TLS"
check_eq "from one resolver call per mode" "$(grep ' sb-slowmode ' "$CALLS" | sort | uniq -c | tr -s ' ' | tr '\n' ,)" \
	" 1 tenant-a sb-slowmode 7000 0, 1 tenant-a sb-slowmode 7000 1,"

echo "# streams"
WS=$(scope sb-ws 8080)
check "a WebSocket handshake and two messages each way" \
	fw_ns "$NS" "$FW_PY" "$FW_NGX_SERVERS" ws --gateway $GW:80 --scope "$WS"
fw_ns "$NS" "$FW_PY" "$FW_NGX_SERVERS" sse --gateway $GW:80 --scope "$WS" >"$FW_TMP/sse" 2>&1
check "server-sent events: both arrive" grep -q 'data: two' "$FW_TMP/sse"
first=$(awk '/data: one/ { print int($4 * 1000) }' "$FW_TMP/sse")
check "the first arrives before the second is sent (unbuffered: ${first:-none} ms)" \
	test "${first:-9999}" -lt 1000
code=$(cget -H "OpenSandbox-Ingress-To: $WS" -H 'Upgrade: websocket' -H 'Connection: Upgrade' \
	-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
	"http://$GW:80/__marker/stale_route/502")
check_eq "a stale handshake (marker on the answer): 503" "$code" 503

echo "# an https proxy endpoint"
code=$(hget "$(scope sb-tls 8080)" '/tls%2F?q=1')
check_eq "the upstream over TLS: 200, the raw path" "$code $(got_target)" "200 /tls%2F?q=1"
check_eq "with the credential" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-sb-tls

echo "# HTTP/2 clients, large bodies"
code=$(cget --http2-prior-knowledge -H "OpenSandbox-Ingress-To: $OK" \
	-H 'X-Fast-Sandbox-Route-Credential: forged' "http://$GW:83/h2%2Fx?y=1")
check_eq "an h2c client: 200, the raw path" "$code $(got_target)" "200 /h2%2Fx?y=1"
check_eq "its credential header replaced" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-sb-ok
check_eq "a bad scope over h2c: 401" \
	"$(cget --http2-prior-knowledge -H "OpenSandbox-Ingress-To: f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfQ" "http://$GW:83/")" 401
head -c 3145728 /dev/urandom >"$FW_TMP/big"
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$FW_TMP/big" "http://$GW:80/big")
check_eq "a 3 MB request body reaches the upstream whole" \
	"$code $("$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["body"])' "$FW_TMP/body")" \
	"200 3145728"
code=$(cget -H "OpenSandbox-Ingress-To: $(scope sb-post 8080)" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$FW_TMP/big" "http://$GW:80/big")
check_eq "and on a miss, while the resolver is asked" \
	"$code $("$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["body"])' "$FW_TMP/body") $(calls sb-post)" \
	"200 3145728 1"

echo "# upstream keep-alive"
got_peer() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["peer_port"])' "$FW_TMP/body"; }
KA=$(scope sb-keepalive 8080)
code=$(cget -H "OpenSandbox-Ingress-To: $KA" -H 'X-Fast-Sandbox-Route-Credential: forged' "http://$GW:82/ka1?x=%2F")
check_eq "through the balancer upstream: 200, the raw URI" "$code $(got_target)" "200 /ka1?x=%2F"
check_eq "with the resolver's credential alone" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-sb-keepalive
check_eq "and the Fastlet's authority as Host" "$(got_header Host)" "$FASTLET"
code=$(cget -H "OpenSandbox-Ingress-To: $KA" -H 'X-Fast-Sandbox-Route-Credential: forged' \
	"http://$GW:82/nv/a%2Fb/..%2F/c//d?x=%20y")
check_eq "proxy_pass without variables in header mode: 200, the raw URI" \
	"$code $(got_target)" '200 /nv/a%2Fb/..%2F/c//d?x=%20y'
check_eq "with the resolver's credential alone and the Fastlet's Host" \
	"$(got_header X-Fast-Sandbox-Route-Credential) $(got_header Host)" "cred-sb-keepalive $FASTLET"
# two requests on one client connection (so one worker: pools are per
# worker); the echo prints a JSON line each, with the port it saw
peers() {
	fw_ns "$NS" curl -s -m 10 -H "OpenSandbox-Ingress-To: $KA" "http://$GW:$1/$2" "http://$GW:$1/$3" |
		"$FW_PY" -c 'import json,sys; print(" ".join(str(json.loads(l)["peer_port"]) for l in sys.stdin))'
}
read -r p1 p2 <<<"$(peers 82 ka2 ka3)"
check "a second request (a cache hit) reuses the upstream connection ($p1 $p2)" \
	test -n "$p1" -a "$p1" = "${p2:-}"
check_eq "one resolve for all" "$(calls sb-keepalive)" 1
read -r p1 p2 <<<"$(peers 80 v1 v2)"
check "while proxy_pass with variables opens a new one each time ($p1 $p2)" \
	test -n "${p2:-}" -a "$p1" != "${p2:-}"
REF2=$(scope sb-refused 8081)
check_eq "a refused upstream through the balancer: 502" "$(cget -H "OpenSandbox-Ingress-To: $REF2" "http://$GW:82/")" 502
check_eq "and the entry dropped" \
	"$(cget -H "OpenSandbox-Ingress-To: $REF2" "http://$GW:82/") $(grep -c ' sb-refused 8081 ' "$CALLS")" "502 2"

echo "# URI mode"
UOK=$(scope sb-uri 9000)
code=$(cget "http://$GW:81/$UOK/a%2Fb/..%2F/c//d?x=%20y")
check_eq "/<scope>/<rest>: 200" "$code" 200
check_eq "the rest goes upstream raw, query included" "$(got_target)" '/a%2Fb/..%2F/c//d?x=%20y'
check_eq "the upstream gets the credential" "$(got_header X-Fast-Sandbox-Route-Credential)" cred-sb-uri
code=$(cget "http://$GW:81/$UOK")
check_eq "/<scope> alone: the upstream gets /" "$code $(got_target)" "200 /"
code=$(cget "http://$GW:81/$UOK?q=%2F1")
check_eq "/<scope>?query: the upstream gets /?query" "$code $(got_target)" "200 /?q=%2F1"
code=$(cget -X POST --data-binary 'hello body' "http://$GW:81/$UOK/post")
check_eq "a POST body goes through" "$code $("$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["body"])' "$FW_TMP/body")" "200 10"
check_eq "a bad scope in the path: 401" \
	"$(cget "http://$GW:81/f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfQ/x")" 401
check_eq "a header scope is not used in URI mode: 401" \
	"$(cget -H "OpenSandbox-Ingress-To: $UOK" "http://$GW:81/plain")" 401
check_eq "URI mode shares the cache: one resolve for sb-uri" "$(calls sb-uri)" 1
check_eq "central-proxy access mode reaches the resolver" "$(grep ' sb-uri ' "$CALLS")" "tenant-a sb-uri 9000 0"
code=$(cget -H "OpenSandbox-Ingress-To: $OK" -H "OPEN-SANDBOX-INGRESS: $OK" "http://$GW:81/$UOK/hdrs")
check_eq "URI mode: no client scope header reaches the upstream" \
	"$code $(got_header OpenSandbox-Ingress-To)/$(got_header OPEN-SANDBOX-INGRESS)" "200 /"

echo "# reload"
B=$(scope sb-ok 44772 b)
check_eq "before: a scope under key b: 200" "$(hget "$B")" 200
printf 'k=c2hhcmVkLXNlY3JldA==\n' >"$KEYS"
kill -HUP "$NGINX_PID"
reloaded() { [ "$(hget "$B")" = 401 ]; }
check "after a reload without key b: its scope is 401" fw_eventually 5 reloaded
check_eq "a key-k scope still routes" "$(hget "$OK")" 200
check_eq "and the cache survived the reload: still one resolve of sb-ok:44772" \
	"$(grep -c ' sb-ok 44772 ' "$CALLS")" 1
printf 'k=c2hhcmVk\nK=bad\n' >"$KEYS"
kill -HUP "$NGINX_PID"
sleep 1
check "a reload with a bad key ring is refused and logged" \
	grep -q "fastwall_ingress_keys: $KEYS: line 2" "$NGX/logs/error.log"
check_eq "and the running configuration keeps routing" "$(hget "$OK")" 200

check "nginx is still running" kill -0 "$NGINX_PID"
check "no worker crashed" bash -c "! grep -q 'exited on signal' '$NGX/logs/error.log'"

fw_summary
