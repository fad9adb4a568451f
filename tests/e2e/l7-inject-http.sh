#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: credential injection by the layer-7 proxy's nginx module
# (egress/, make l7proxy) in its pinned plain-HTTP server, on its own,
# without fastwalld: the test creates the pinning maps and the two vault
# maps (include/fastwall/l7vault.h) in a pin directory of its own, writes
# the vault blobs with its own encoder (tests/e2e/l7vault.py), and a real
# nginx upstream answers with the credential headers it received.
#
#   sandbox fwsb-ID-a 10.42.0.2 --- pod 10.42.0.1: the proxy (nginx,
#   :15080 HTTP) --- internet 203.0.113.10: nginx on :80 and :8080
#   answering "key=<X-Api-Key> auth=<Authorization> uri=<request URI>"
#
# Clients bind a fixed source port, since the nat entry that tells the
# proxy where a connection was going is keyed by it.
set -euo pipefail
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FW_NGINX=${FW_NGINX:-/usr/sbin/nginx}
STREAM_SO=/usr/lib/nginx/modules/ngx_stream_module.so
L7_SO=$FW_BUILD/l7/ngx_fastwall_l7_module.so
HELPER=$FW_E2E_DIR/l7proxy.py
VAULT=$FW_E2E_DIR/l7vault.py
if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ] || [ ! -f "$STREAM_SO" ]; then
	echo "l7-inject-http: skipped: nginx, nginx-dev or libnginx-mod-stream is not installed (scripts/install-deps.sh)"
	exit 77
fi
[ "$(id -u)" = 0 ] || fw_die "must run as root"
for t in ip bpftool nsenter; do
	command -v "$t" >/dev/null || fw_die "$t not found"
done
make -s -C "$FW_ROOT" BUILD="$BUILD" l7proxy >/dev/null || fw_die "make l7proxy failed"
trap fw_cleanup EXIT

fw_topology
fw_sandbox a 2
SB=$(fw_sb_ns a)
ip -n "$NS_INET" route add 10.42.0.0/24 via 192.0.2.1 2>/dev/null || true
C=10.42.0.2
PX=10.42.0.1
D4=203.0.113.10

# ---- the maps: pinning (abi.h) and the vaults (l7vault.h) ----
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/fastwall_l7_nat" type hash key 20 value 40 entries 1024 \
	name fastwall_l7_nat flags 1
bpftool map create "$BPFFS/fastwall_learned" type hash key 24 value 24 entries 1024 \
	name fastwall_learned flags 1
bpftool map create "$BPFFS/fastwall_learned_names" type hash key 24 value 32 entries 1024 \
	name fastwall_learned_nam flags 1
bpftool map create "$BPFFS/fastwall_names" type hash key 4 value 256 entries 1024 \
	name fastwall_names flags 1
# hash, BPF_F_NO_PREALLOC; array, BPF_F_MMAPABLE (1 << 10)
bpftool map create "$BPFFS/fastwall_l7_vaults" type hash key 4 value 131072 entries 8192 \
	name fastwall_l7_vaul flags 1
bpftool map create "$BPFFS/fastwall_l7_vault_gen" type array key 4 value 8 entries 8192 \
	name fastwall_l7_vgen flags 1024

py() { "$FW_PY" "$HELPER" "$@"; }
PXPORT=15080 # the proxy's port ask() connects to
nat() { py put-nat "$BPFFS" "$C" "$1" "$PXPORT" $D4 "$2" "$3" http; } # CPORT DPORT SUBJECT
vault() { "$FW_PY" "$VAULT" "$@"; }

py put-name "$BPFFS" 1 api.example.com
py put-name "$BPFFS" 2 www.example.org
# subject 7 learned 203.0.113.10 from both names, subject 12 from one
py put-lease "$BPFFS" 7 $D4 3600 1 2
py put-lease "$BPFFS" 12 $D4 3600 1

# subject 7's vault: an https-only binding first (never for plain http),
# an api key for two methods and two paths of api.example.com, a bearer
# token for any name under example.org on port 80
bindings() { # API-KEY-VALUE
	cat <<JSON
[{"auth": "apiKey", "name": "tls-only", "header": "X-Api-Key", "value": "sk-https-only",
  "hosts": ["api.example.com"]},
 {"auth": "apiKey", "name": "api", "header": "X-Api-Key", "value": "$1",
  "hosts": ["api.example.com"], "schemes": ["http"], "methods": ["GET", "POST"],
  "paths": ["/v1/*", "/exact"]},
 {"auth": "bearer", "name": "org", "header": "Authorization", "value": "Bearer tok-org-1",
  "hosts": ["*.example.org"], "schemes": ["http", "https"], "ports": [80]}]
JSON
}
vault put "$BPFFS" 7 1 "$(bindings sk-live-1)"

# ---- the internet's HTTP server, answering with what it was sent ----
mkdir -p "$FW_TMP/inet" "$FW_TMP/proxy"
cat >"$FW_TMP/inet/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
error_log $FW_TMP/inet/error.log info;
pid $FW_TMP/inet/nginx.pid;
events { worker_connections 256; }
http {
	log_format keys '\$http_x_api_key|\$http_authorization|\$request_uri';
	access_log $FW_TMP/inet/access.log keys;
	client_body_temp_path $FW_TMP/inet/body;
	proxy_temp_path $FW_TMP/inet/proxy;
	fastcgi_temp_path $FW_TMP/inet/fastcgi;
	uwsgi_temp_path $FW_TMP/inet/uwsgi;
	scgi_temp_path $FW_TMP/inet/scgi;
	default_type text/plain;
	server { listen $D4:80; listen $D4:8080;
		return 200 "key=\$http_x_api_key auth=\$http_authorization uri=\$request_uri\n"; }
}
CONF

# ---- the proxy, in the pod ----
REPORTS=$FW_TMP/reports.txt
touch "$REPORTS"
fw_bg_ready "$NS_POD" "$FW_TMP/reports.ready" "$FW_PY" "$HELPER" reports "$FW_TMP/reports.sock" "$REPORTS"
proxy_conf() {
	cat <<CONF
load_module $STREAM_SO;
load_module $L7_SO;
daemon off;
master_process on;
worker_processes 2;
user root;
error_log $FW_TMP/proxy/error.log info;
pid $FW_TMP/proxy/nginx.pid;
fastwall_l7_maps pin:$BPFFS;
fastwall_l7_vaults pin:$BPFFS;
fastwall_l7_report unix:$FW_TMP/reports.sock;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $FW_TMP/proxy/body;
	proxy_temp_path $FW_TMP/proxy/proxy;
	fastcgi_temp_path $FW_TMP/proxy/fastcgi;
	uwsgi_temp_path $FW_TMP/proxy/uwsgi;
	scgi_temp_path $FW_TMP/proxy/scgi;
	server {
		listen $PX:15080;
		fastwall_l7_pin http;
		location / {
			proxy_pass http://\$fastwall_l7_upstream;
			proxy_set_header Host \$http_host;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
CONF
}
proxy_conf >"$FW_TMP/proxy/nginx.conf"

listening() { fw_ns "$1" ss -Hltn "sport = :$2" | grep -q .; }
fw_bg "$NS_INET" "$FW_NGINX" -e stderr -p "$FW_TMP/inet" -c "$FW_TMP/inet/nginx.conf"
fw_bg "$NS_POD" "$FW_NGINX" -e stderr -p "$FW_TMP/proxy" -c "$FW_TMP/proxy/nginx.conf"
fw_eventually 10 listening "$NS_INET" 80 || fw_die "the server did not start: $(tail -5 "$FW_TMP/bg.log")"
fw_eventually 10 listening "$NS_POD" 15080 || fw_die "the proxy did not start: $(tail -5 "$FW_TMP/bg.log")"

report() { { grep " client=$C:$1 " "$REPORTS" || true; } | { grep "^type=verdict " || true; } | tail -1; }
has_report() { report "$1" | grep -q .; }
check_report() { # DESC PORT FIELD=VALUE...
	local d=$1 port=$2 line f
	shift 2
	fw_eventually 5 has_report "$port" || true
	line=$(report "$port")
	for f in "$@"; do
		case " $line " in
		*" $f "*) ;;
		*)
			fw_not_ok "$d (no $f in '${line:-no report}')"
			return
			;;
		esac
	done
	fw_ok "$d"
}
http() { fw_ns "$SB" "$FW_PY" "$HELPER" http "$C:$1" "$PX:$PXPORT" "${@:2}"; }
# req METHOD PATH HOST [HEADER-LINE...]: one request, \r\n written as escapes
req() {
	local m=$1 p=$2 h=$3 extra="" l
	shift 3
	for l in "$@"; do extra="$extra$l\\r\\n"; done
	printf '%s %s HTTP/1.1\\r\\nHost: %s\\r\\n%s\\r\\n' "$m" "$p" "$h" "$extra"
}
# ask SUBJECT DPORT REQUEST...: the answers on a new connection from the
# next source port (kept in a file: ask runs in a command substitution)
echo 43000 >"$FW_TMP/port"
last_port() { cat "$FW_TMP/port"; }
ask() {
	local port
	port=$(($(last_port) + 1))
	echo "$port" >"$FW_TMP/port"
	nat "$port" "$2" "$1"
	http "$port" "${@:3}"
}

# ---- matching ----
check_eq "GET of a bound path: the binding's key reaches the server" \
	"$(ask 7 80 "$(req GET /v1/models api.example.com)")" \
	"200:key=sk-live-1_auth=_uri=/v1/models open"
check_report "an injected request is reported l7-injected with its host" "$(last_port)" \
	reason=l7-injected kind=http subject=7 name=api.example.com
check_eq "POST of the exact path, with a query: injected" \
	"$(ask 7 80 "$(req POST '/exact?q=1' API.Example.com:80 'Content-Length: 0')")" \
	"200:key=sk-live-1_auth=_uri=/exact?q=1 open"
check_eq "DELETE (not a bound method): nothing injected" \
	"$(ask 7 80 "$(req DELETE /v1/models api.example.com)")" "200:key=_auth=_uri=/v1/models open"
check_report "a request without a binding is reported l7-pinned" "$(last_port)" reason=l7-pinned name=api.example.com
check_eq "a path outside the binding's: nothing injected" \
	"$(ask 7 80 "$(req GET /exact/more api.example.com)")" "200:key=_auth=_uri=/exact/more open"
check_eq "a path that is bound only once nginx removed its dot segments: nothing injected" \
	"$(ask 7 80 "$(req GET /v2/../v1/x api.example.com)")" "200:key=_auth=_uri=/v2/../v1/x open"
check_eq "a bound path the dot segments leave: nothing injected" \
	"$(ask 7 80 "$(req GET /v1/../admin api.example.com)")" "200:key=_auth=_uri=/v1/../admin open"
check_eq "keep-alive: injected, then not for the next request that matches nothing, then again" \
	"$(ask 7 80 "$(req GET /v1/a api.example.com)" "$(req GET /other api.example.com)" \
		"$(req GET /v1/b api.example.com)")" \
	"200:key=sk-live-1_auth=_uri=/v1/a 200:key=_auth=_uri=/other 200:key=sk-live-1_auth=_uri=/v1/b open"
check_eq "an absolute-form request of the bound name: injected" \
	"$(ask 7 80 'GET http://api.example.com/v1/abs HTTP/1.1\r\nHost: api.example.com\r\n\r\n')" \
	"200:key=sk-live-1_auth=_uri=/v1/abs open"
check_eq "an absolute-form request whose Host names another pinned name: nothing injected" \
	"$(ask 7 80 'GET http://api.example.com/v1/abs HTTP/1.1\r\nHost: www.example.org\r\n\r\n')" \
	"200:key=_auth=_uri=/v1/abs open"

# ---- the sandbox's own header ----
check_eq "the sandbox's own X-Api-Key is replaced" \
	"$(ask 7 80 "$(req GET /v1/x api.example.com 'X-Api-Key: mine')")" \
	"200:key=sk-live-1_auth=_uri=/v1/x open"
check_eq "two copies of it, in any case, are both replaced" \
	"$(ask 7 80 "$(req GET /v1/two api.example.com 'X-Api-Key: mine-1' 'x-api-KEY: mine-2')")" \
	"200:key=sk-live-1_auth=_uri=/v1/two open"
check "the server saw the binding's key alone for them" \
	grep -qx 'sk-live-1|-|/v1/two' "$FW_TMP/inet/access.log"
check_eq "a request that matches nothing keeps the sandbox's own header" \
	"$(ask 7 80 "$(req GET /other api.example.com 'X-Api-Key: mine')")" "200:key=mine_auth=_uri=/other open"
check_eq "Authorization: the sandbox's own replaced by the bearer binding, under a wildcard" \
	"$(ask 7 80 "$(req GET /any www.example.org 'Authorization: Basic c2FuZGJveDpw')")" \
	"200:key=_auth=Bearer_tok-org-1_uri=/any open"
check_eq "the binding's port only: the same name on port 8080 keeps the sandbox's header" \
	"$(ask 7 8080 "$(req GET /any www.example.org 'Authorization: Basic c2FuZGJveDpw')")" \
	"200:key=_auth=Basic_c2FuZGJveDpw_uri=/any open"
check_eq "another subject, without a vault: nothing injected" \
	"$(ask 12 80 "$(req GET /v1/models api.example.com)")" "200:key=_auth=_uri=/v1/models open"

# ---- the vault changes ----
vault put "$BPFFS" 7 2 "$(bindings sk-live-2)"
got=""
for _ in 1 2 3 4; do
	got="$got $(ask 7 80 "$(req GET /v1/models api.example.com)")"
done
check_eq "a new generation is seen by the next request, on either worker" "$got" \
	"$(printf ' 200:key=sk-live-2_auth=_uri=/v1/models open%.0s' 1 2 3 4)"
# a value with CR LF (fastwalld refuses it at push; the proxy does too)
vault put "$BPFFS" 7 3 '[{"auth": "apiKey", "name": "bad", "header": "X-Api-Key",
	"value": "sk-evil\r\nX-Injected: 1", "hosts": ["api.example.com"], "schemes": ["http"]}]'
check_eq "a vault that does not decode injects nothing" \
	"$(ask 7 80 "$(req GET /v1/models api.example.com)")" "200:key=_auth=_uri=/v1/models open"
check "the error log says it does not decode, and why" \
	grep -q 'vault of subject 7 (generation 3, [0-9]* bytes) does not decode: a value with CR, LF or NUL' \
	"$FW_TMP/proxy/error.log"
vault put "$BPFFS" 7 4 "$(bindings sk-live-4)"
check_eq "the next good generation injects again" \
	"$(ask 7 80 "$(req GET /v1/models api.example.com)")" "200:key=sk-live-4_auth=_uri=/v1/models open"
vault delete "$BPFFS" 7
got=""
for _ in 1 2 3 4; do
	got="$got $(ask 7 80 "$(req GET /v1/models api.example.com 'X-Api-Key: mine')")"
done
check_eq "a deleted vault injects nothing, on either worker" "$got" \
	"$(printf ' 200:key=mine_auth=_uri=/v1/models open%.0s' 1 2 3 4)"
check_report "after the delete: l7-pinned" "$(last_port)" reason=l7-pinned

check "no credential in the proxy's log" \
	sh -c "! grep -E 'sk-live|sk-evil|tok-org|sk-https' '$FW_TMP/proxy/error.log' '$FW_TMP/bg.log'"
check "no credential in a report" sh -c "! grep -E 'sk-|tok-' '$REPORTS'"
check "the https-only binding never reached plain http" sh -c "! grep -q sk-https '$FW_TMP/inet/access.log'"
check "the generations were mapped (pin: opens them for writing, maps them read-only)" \
	sh -c "! grep -q \"can't be mapped\" '$FW_TMP/proxy/error.log'"
check "the proxy logged no alert" \
	sh -c "! grep -E '\\[(alert|emerg|crit)\\]' '$FW_TMP/proxy/error.log'"

# ---- as fastwalld runs it: every map inherited read-only ----
# fds 3-6 the pinning maps, 7 the report socket, 8 and 9 the vault maps;
# the kernel maps no read-only descriptor, so generations are read with
# bpf() per request
mkdir -p "$FW_TMP/proxy2"
proxy_conf | sed -e "s|pin:$BPFFS|fd:3,4,5,6|" -e "s|fastwall_l7_vaults fd:3,4,5,6|fastwall_l7_vaults fd:8,9|" \
	-e "s|unix:$FW_TMP/reports.sock|fd:7|" -e "s|$FW_TMP/proxy/|$FW_TMP/proxy2/|g" \
	-e "s|$PX:15080|$PX:15081|" -e "s|worker_processes 2|worker_processes 1|" >"$FW_TMP/proxy2/nginx.conf"
fw_bg "$NS_POD" "$FW_PY" "$VAULT" launch "$BPFFS" "$FW_TMP/reports.sock" -- \
	"$FW_NGINX" -e stderr -p "$FW_TMP/proxy2" -c "$FW_TMP/proxy2/nginx.conf"
fw_eventually 10 listening "$NS_POD" 15081 || fw_die "the fd: proxy did not start: $(tail -5 "$FW_TMP/bg.log")"
PXPORT=15081
vault put "$BPFFS" 7 5 "$(bindings sk-live-5)"
check_eq "fd: maps: a bound request gets the key" \
	"$(ask 7 80 "$(req GET /v1/models api.example.com)")" "200:key=sk-live-5_auth=_uri=/v1/models open"
vault put "$BPFFS" 7 6 "$(bindings sk-live-6)"
check_eq "fd: maps: the next generation is seen by the next request" \
	"$(ask 7 80 "$(req GET /v1/models api.example.com)")" "200:key=sk-live-6_auth=_uri=/v1/models open"
check "fd: maps: the error log says the read-only generations are read with bpf()" \
	grep -q "fastwall_l7_vault_gen can't be mapped (a read-only descriptor), generations are read with bpf() per request" \
	"$FW_TMP/proxy2/error.log"
check "fd: maps: no credential in the proxy's log" sh -c "! grep -E 'sk-live' '$FW_TMP/proxy2/error.log'"

# ---- an error log at debug level: nginx would write the headers it
# sends upstream there, so a request a binding applies to fails ----
mkdir -p "$FW_TMP/proxy3"
proxy_conf | sed -e "s|$FW_TMP/proxy/|$FW_TMP/proxy3/|g" -e "s|error.log info|error.log debug|" \
	-e "s|$PX:15080|$PX:15082|" -e "s|worker_processes 2|worker_processes 1|" >"$FW_TMP/proxy3/nginx.conf"
fw_bg "$NS_POD" "$FW_NGINX" -e stderr -p "$FW_TMP/proxy3" -c "$FW_TMP/proxy3/nginx.conf"
fw_eventually 10 listening "$NS_POD" 15082 || fw_die "the debug proxy did not start: $(tail -5 "$FW_TMP/bg.log")"
PXPORT=15082
check_eq "debug error log: a bound request fails with 500 and goes nowhere" \
	"$(ask 7 80 "$(req GET /v1/debug api.example.com)" | sed 's/:[^ ]*//')" "500 closed"
check_eq "debug error log: a request no binding applies to passes" \
	"$(ask 7 80 "$(req GET /other api.example.com)")" "200:key=_auth=_uri=/other open"
check "debug error log: it says why" grep -q 'binding "api": not injected, the error log writes debug lines' \
	"$FW_TMP/proxy3/error.log"
check "debug error log: no credential in it" sh -c "! grep -E 'sk-live' '$FW_TMP/proxy3/error.log'"
check "debug error log: the bound request never reached the server" \
	sh -c "! grep -q /v1/debug '$FW_TMP/inet/access.log'"
PXPORT=15080

# ---- configuration errors: nginx -t refuses them and says why ----
bad_conf() { # WANT-IN-MESSAGE SED-EXPRESSION
	proxy_conf | sed "$2" >"$FW_TMP/proxy/bad.conf"
	! "$FW_NGINX" -t -e stderr -p "$FW_TMP/proxy" -c "$FW_TMP/proxy/bad.conf" >"$FW_TMP/proxy/bad.out" 2>&1 &&
		grep -q "$1" "$FW_TMP/proxy/bad.out"
}
check "a missing vault pin directory is refused" bad_conf "can't open" \
	"s|fastwall_l7_vaults pin:$BPFFS|fastwall_l7_vaults pin:$BPFFS/nonexistent|"
check "fd: with one fd is refused" bad_conf "is not two file descriptors" \
	"s|fastwall_l7_vaults pin:$BPFFS|fastwall_l7_vaults fd:8|"
check "neither fd: nor pin: is refused" bad_conf "is neither fd:N,N nor pin:DIR" \
	"s|fastwall_l7_vaults pin:$BPFFS|fastwall_l7_vaults $BPFFS|"
check "fd: of something that is no map is refused" bad_conf "is not a BPF map" \
	"s|fastwall_l7_vaults pin:$BPFFS|fastwall_l7_vaults fd:0,0|"
check "given twice is refused" bad_conf "is duplicate" \
	"s|^fastwall_l7_vaults pin:$BPFFS;|&fastwall_l7_vaults pin:$BPFFS;|"
mkdir -p "$BPFFS/old"
bpftool map create "$BPFFS/old/fastwall_l7_vaults" type hash key 4 value 4096 entries 8 \
	name fastwall_l7_vaul flags 1
bpftool map pin pinned "$BPFFS/fastwall_l7_vault_gen" "$BPFFS/old/fastwall_l7_vault_gen"
check "a vault map of another layout is refused" bad_conf "value 4096 bytes, 8 entries, not the layout" \
	"s|fastwall_l7_vaults pin:$BPFFS|fastwall_l7_vaults pin:$BPFFS/old|"
fw_summary
