#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: TLS termination in the layer-7 proxy's nginx module (egress/,
# make l7proxy) on its own, in the real /usr/sbin/nginx, without fastwalld:
# the test creates the pinned maps of tests/e2e/l7-proxy.sh and the two
# vault maps (include/fastwall/l7vault.h) itself, a CA for the proxy and
# another for the internet's server, and listens for the module's reports.
#
#   sandbox fwsb-ID-a 10.42.0.2 --- pod 10.42.0.1: the proxy (stream :15443
#   handing vault names to the terminating http server on a unix socket)
#   --- internet 203.0.113.10: nginx serving TLS for api.example.com,
#   www.example.org, plain.example.net (the internet's CA), echoing the
#   X-Api-Key it got; 203.0.113.11: bad.example.com with a certificate no
#   one trusts
set -euo pipefail
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FW_NGINX=${FW_NGINX:-/usr/sbin/nginx}
STREAM_SO=/usr/lib/nginx/modules/ngx_stream_module.so
L7_SO=$FW_BUILD/l7/ngx_fastwall_l7_module.so
HELPER=$FW_E2E_DIR/l7proxy.py
TERM_HELPER=$FW_E2E_DIR/l7term.py
if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ] || [ ! -f "$STREAM_SO" ]; then
	echo "l7-term: skipped: nginx, nginx-dev or libnginx-mod-stream is not installed (scripts/install-deps.sh)"
	exit 77
fi
[ "$(id -u)" = 0 ] || fw_die "must run as root"
for t in ip bpftool curl openssl nsenter setpriv; do
	command -v "$t" >/dev/null || fw_die "$t not found"
done
make -s -C "$FW_ROOT" BUILD="$BUILD" l7proxy >/dev/null || fw_die "make l7proxy failed"
# the terminating socket's directory: nobody may reach it (for the peer
# check; fastwalld's is 0700)
VAR=$(mktemp -d /tmp/fastwall-l7-var.XXXXXX)
chmod 0755 "$VAR"
# the unprivileged proxy's own directory
P2=$(mktemp -d /tmp/fastwall-l7-nobody.XXXXXX)
chmod 0755 "$P2"
term_cleanup() {
	fw_cleanup
	rm -rf "$VAR" "$P2"
}
trap term_cleanup EXIT

fw_topology
fw_sandbox a 2
SB=$(fw_sb_ns a)
ip -n "$NS_INET" addr add 203.0.113.11/32 dev lo
ip -n "$NS_INET" addr add 203.0.113.12/32 dev lo
C=10.42.0.2
PX=10.42.0.1
SUBJ=7
D4=203.0.113.10
BAD=203.0.113.11

# ---- the maps: part 1's pinned maps and the two vault maps ----
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/fastwall_l7_nat" type hash key 20 value 40 entries 1024 \
	name fastwall_l7_nat flags 1
bpftool map create "$BPFFS/fastwall_learned" type hash key 24 value 24 entries 1024 \
	name fastwall_learned flags 1
bpftool map create "$BPFFS/fastwall_learned_names" type hash key 24 value 32 entries 1024 \
	name fastwall_learned_nam flags 1
bpftool map create "$BPFFS/fastwall_names" type hash key 4 value 256 entries 1024 \
	name fastwall_names flags 1
# hash, BPF_F_NO_PREALLOC; array, BPF_F_MMAPABLE
bpftool map create "$BPFFS/fastwall_l7_vaults" type hash key 4 value 131072 entries 8192 \
	name fastwall_l7_vaul flags 1
bpftool map create "$BPFFS/fastwall_l7_vault_gen" type array key 4 value 8 entries 8192 \
	name fastwall_l7_vgen flags 1024

py() { "$FW_PY" "$HELPER" "$@"; }
tpy() { "$FW_PY" "$TERM_HELPER" "$@"; }
nat() { py put-nat "$BPFFS" "$C" "$1" 15443 "$2" "$3" "$SUBJ" tls; } # CPORT DST DPORT

py put-name "$BPFFS" 1 api.example.com
py put-name "$BPFFS" 2 www.example.org
py put-name "$BPFFS" 3 plain.example.net
py put-name "$BPFFS" 4 bad.example.com
py put-name "$BPFFS" 5 other.example.com
LONG="a-name-longer-than-sixty-four.characters-a-common-name.holds.example.org"
py put-name "$BPFFS" 6 $LONG
py put-lease "$BPFFS" $SUBJ $D4 3600 1 2 3 6
py put-lease "$BPFFS" $SUBJ $BAD 3600 4
py put-lease "$BPFFS" $SUBJ 2001:db8::10 3600 1
py put-name "$BPFFS" 7 ws.example.org
py put-lease "$BPFFS" $SUBJ 203.0.113.12 3600 7
# subject 7's vault: api.example.com, *.example.org (POST only) and
# bad.example.com (https, any port); plain.example.net is pinned, not in
# it
vault() { # GEN
	tpy put-vault "$BPFFS" $SUBJ "$1" \
		"v1|X-Api-Key|k-v1|api.example.com||0||/v1/*" \
		"api|X-Api-Key|k-api-$1|api.example.com||0" \
		"org|X-Api-Key|k-org-$1|*.example.org||0|POST" \
		"bad|X-Api-Key|k-bad|bad.example.com||0"
}
vault 5

# ---- the PKI: the proxy's CA, the internet's CA, an untrusted cert ----
mkdir -p "$FW_TMP/pki" "$FW_TMP/inet" "$FW_TMP/proxy"
(
	cd "$FW_TMP/pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
		-subj "/CN=fastwall layer-7 CA test" -addext keyUsage=critical,keyCertSign,cRLSign \
		-keyout l7ca.key -out l7ca.crt 2>/dev/null
	cat l7ca.crt l7ca.key >l7ca.pem
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=fastwall-inet-ca -keyout ca.key -out ca.pem 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=api.example.com -keyout leaf.key -out leaf.csr 2>/dev/null
	printf 'subjectAltName=DNS:api.example.com,DNS:www.example.org,DNS:plain.example.net\n' >ext.cnf
	openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile ext.cnf -out leaf.pem 2>/dev/null
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=bad.example.com -addext subjectAltName=DNS:bad.example.com \
		-keyout bad.key -out bad.pem 2>/dev/null
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=placeholder -keyout placeholder.key -out placeholder.crt 2>/dev/null
	cat l7ca.crt ca.key >mixed.pem
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=ws.example.org -keyout ws.key -out ws.csr 2>/dev/null
	printf 'subjectAltName=DNS:ws.example.org\n' >ws.cnf
	openssl x509 -req -in ws.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile ws.cnf -out ws.pem 2>/dev/null
)
CA=$FW_TMP/pki/ca.pem
L7CA=$FW_TMP/pki/l7ca.crt
cat >"$FW_TMP/inet/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
error_log $FW_TMP/inet/error.log info;
pid $FW_TMP/inet/nginx.pid;
events { worker_connections 256; }
http {
	log_format conn '\$connection \$ssl_server_name \$request_uri';
	access_log $FW_TMP/inet/access.log conn;
	client_body_temp_path $FW_TMP/inet/body;
	proxy_temp_path $FW_TMP/inet/proxy;
	fastcgi_temp_path $FW_TMP/inet/fastcgi;
	uwsgi_temp_path $FW_TMP/inet/uwsgi;
	scgi_temp_path $FW_TMP/inet/scgi;
	default_type text/plain;
	ssl_certificate $FW_TMP/pki/leaf.pem;
	ssl_certificate_key $FW_TMP/pki/leaf.key;
	server { listen $D4:443 ssl; listen [2001:db8::10]:443 ssl; server_name api.example.com;
		return 200 "api key=\$http_x_api_key host=\$http_host\n"; }
	server { listen $D4:443 ssl; server_name www.example.org;
		return 200 "www key=\$http_x_api_key\n"; }
	server { listen $D4:443 ssl; server_name plain.example.net;
		return 200 "plain key=\$http_x_api_key\n"; }
	server { listen $BAD:443 ssl; ssl_certificate $FW_TMP/pki/bad.pem;
		ssl_certificate_key $FW_TMP/pki/bad.key; return 200 "bad\n"; }
}
CONF

# ---- the proxy, in the pod ----
REPORTS=$FW_TMP/reports.txt
touch "$REPORTS"
fw_bg_ready "$NS_POD" "$FW_TMP/reports.ready" "$FW_PY" "$HELPER" reports "$FW_TMP/reports.sock" "$REPORTS"
# one worker: its leaf cache and its idle upstream connections are what
# the checks look at
proxy_conf() {
	cat <<CONF
load_module $STREAM_SO;
load_module $L7_SO;
daemon off;
master_process on;
worker_processes 1;
user root;
error_log $FW_TMP/proxy/error.log info;
pid $FW_TMP/proxy/nginx.pid;
fastwall_l7_maps pin:$BPFFS;
fastwall_l7_vaults pin:$BPFFS;
fastwall_l7_ca file:$FW_TMP/pki/l7ca.pem;
fastwall_l7_report unix:$FW_TMP/reports.sock;
events { worker_connections 256; }
stream {
	server {
		listen $PX:15443;
		ssl_preread on;
		fastwall_l7_pin tls;
		fastwall_l7_terminate_to unix:$VAR/term.sock;
		proxy_pass \$fastwall_l7_upstream;
		proxy_connect_timeout 2s;
	}
}
http {
	access_log off;
	client_body_temp_path $FW_TMP/proxy/body;
	proxy_temp_path $FW_TMP/proxy/proxy;
	fastcgi_temp_path $FW_TMP/proxy/fastcgi;
	uwsgi_temp_path $FW_TMP/proxy/uwsgi;
	scgi_temp_path $FW_TMP/proxy/scgi;
	map \$http_upgrade \$fastwall_l7_connection { default upgrade; "" ""; }
	upstream fastwall_l7_origin {
		fastwall_l7_origin;
		fastwall_l7_keepalive 8;
	}
	server {
		listen unix:$VAR/term.sock ssl http2 proxy_protocol;
		ssl_certificate $FW_TMP/pki/placeholder.crt;
		ssl_certificate_key $FW_TMP/pki/placeholder.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		fastwall_l7_terminate on;
		location / {
			proxy_pass https://fastwall_l7_origin;
			proxy_http_version 1.1;
			proxy_set_header Host \$host;
			proxy_set_header Upgrade \$http_upgrade;
			proxy_set_header Connection \$fastwall_l7_connection;
			proxy_ssl_server_name on;
			proxy_ssl_name \$fastwall_l7_sni;
			proxy_ssl_verify on;
			proxy_ssl_verify_depth 8;
			proxy_ssl_trusted_certificate $CA;
			proxy_request_buffering off;
			proxy_buffering off;
			proxy_connect_timeout 2s;
		}
	}
}
CONF
}
proxy_conf >"$FW_TMP/proxy/nginx.conf"

listening() { fw_ns "$1" ss -Hltn "sport = :$2" | grep -q .; }
fw_bg "$NS_INET" "$FW_NGINX" -e stderr -p "$FW_TMP/inet" -c "$FW_TMP/inet/nginx.conf"
fw_bg "$NS_POD" "$FW_NGINX" -e stderr -p "$FW_TMP/proxy" -c "$FW_TMP/proxy/nginx.conf"
fw_eventually 10 listening "$NS_INET" 443 || fw_die "the server did not start: $(tail -5 "$FW_TMP/bg.log")"
fw_bg_ready "$NS_INET" "$FW_TMP/ws.ready" "$FW_PY" "$TERM_HELPER" echo-server 203.0.113.12:443 \
	"$FW_TMP/pki/ws.pem" "$FW_TMP/pki/ws.key"
fw_eventually 10 listening "$NS_POD" 15443 || fw_die "the proxy did not start: $(tail -5 "$FW_TMP/bg.log")"
fw_eventually 10 test -S "$VAR/term.sock" || fw_die "no terminating socket: $(tail -5 "$FW_TMP/bg.log")"
# anyone may connect: the module's peer check is what refuses
chmod 0777 "$VAR/term.sock"

# report PORT TYPE [REASON]: the last report line of that type (and
# reason) for the client port
report() {
	{ grep " client=$C:$1 " "$REPORTS" || true; } | { grep "^type=$2 " || true; } |
		{ grep "reason=${3:-}" || true; } | tail -1
}
has_report() { report "$@" | grep -q .; }
# check_report DESC PORT TYPE REASON FIELD=VALUE...
check_report() {
	local d=$1 port=$2 type=$3 reason=$4 line f
	shift 4
	fw_eventually 5 has_report "$port" "$type" "$reason" || true
	line=$(report "$port" "$type" "$reason")
	for f in "reason=$reason" "$@"; do
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
# get PORT NAME [CURL-ARGS...]: a request through the proxy, trusting the
# proxy's CA only (HTTP/2 unless the arguments say otherwise: curl asks
# for it by ALPN)
get() {
	local port=$1 name=$2
	shift 2
	fw_ns "$SB" curl -sS --max-time 5 --local-port "$port" --cacert "$L7CA" \
		--resolve "$name:15443:$PX" "$@" "https://$name:15443/"
}
leaf() { # PORT NAME CA
	fw_ns "$SB" "$FW_PY" "$TERM_HELPER" leaf --src "$C:$1" --dst "$PX:15443" --sni "$2" --ca "$3"
}

# ---- a terminated connection ----
nat 44001 $D4 443
check_eq "vault name: the origin's page, the vault's credential set, trusting the proxy's CA" \
	"$(get 44001 api.example.com || true)" "api key=k-api-5 host=api.example.com"
check_report "vault name: l7-injected" 44001 verdict l7-injected subject=7 name=api.example.com \
	dst=203.0.113.10:443
check_report "vault name: the stream server's close report" 44001 close l7-pinned subject=7

nat 44012 $D4 443
check_eq "vault name over HTTP/1.1: the page and the credential" \
	"$(get 44012 api.example.com --http1.1 -w '%{http_version}' | tr '\n' ' ' || true)" \
	"api key=k-api-5 host=api.example.com 1.1"

nat 44013 $D4 443
check_eq "the sandbox's own X-Api-Key (two of them) replaced by the binding's" \
	"$(get 44013 api.example.com -H 'X-Api-Key: sandbox-own' -H 'x-api-key: sandbox-2' || true)" \
	"api key=k-api-5 host=api.example.com"

nat 44002 $D4 443
leaf 44002 api.example.com "$L7CA" >"$FW_TMP/leaf1.pem"
cert() { openssl x509 -in "$FW_TMP/leaf1.pem" -noout "$@" 2>&1; }
check "the leaf verifies against the proxy's CA for the name" \
	openssl verify -CAfile "$L7CA" -purpose sslserver -verify_hostname api.example.com "$FW_TMP/leaf1.pem"
check_eq "the leaf's subject and issuer" "$(cert -subject -issuer)" \
	"$(printf 'subject=CN = api.example.com\nissuer=CN = fastwall layer-7 CA test')"
check_eq "the leaf names the server name alone" \
	"$(cert -ext subjectAltName | tail -n +2 | tr -d ' ')" "DNS:api.example.com"
check_eq "the leaf: CA:FALSE, digital signature, server auth" \
	"$(cert -ext basicConstraints,keyUsage,extendedKeyUsage | grep -v '^X509v3' | tr -d ' ' | tr '\n' ' ')" \
	"CA:FALSE DigitalSignature TLSWebServerAuthentication "
check_fails "the leaf expires within 7 days" \
	openssl x509 -in "$FW_TMP/leaf1.pem" -noout -checkend $((7 * 86400 + 60))
check "the leaf is valid for 6 days at least" \
	openssl x509 -in "$FW_TMP/leaf1.pem" -noout -checkend $((6 * 86400))
check_eq "the leaf is signed with SHA-256" \
	"$(cert -text | sed -n 's/^ *Signature Algorithm: //p' | head -1)" ecdsa-with-SHA256
check "the leaf has subject and authority key identifiers" \
	sh -c "openssl x509 -in '$FW_TMP/leaf1.pem' -noout -text | grep -q 'Subject Key Identifier' &&
		openssl x509 -in '$FW_TMP/leaf1.pem' -noout -text | grep -q 'Authority Key Identifier'"
serial1=$(cert -serial)
nat 44003 $D4 443
leaf 44003 api.example.com "$L7CA" >"$FW_TMP/leaf2.pem"
check_eq "the same leaf for the next connection (the worker's cache)" \
	"$(openssl x509 -in "$FW_TMP/leaf2.pem" -noout -serial)" "$serial1"
vault 6
nat 44004 $D4 443
leaf 44004 api.example.com "$L7CA" >"$FW_TMP/leaf3.pem"
check "a new vault generation: a new leaf" \
	test "$(openssl x509 -in "$FW_TMP/leaf3.pem" -noout -serial 2>&1)" != "$serial1"
nat 44005 $D4 443
check_eq "a new vault generation: the new credential" \
	"$(get 44005 api.example.com || true)" "api key=k-api-6 host=api.example.com"

nat 44006 $D4 443
check_eq "a wildcard binding (*.example.org), its method: terminated, injected, HTTP/2" \
	"$(get 44006 www.example.org --http2 -d x -w '%{http_version}' | tr '\n' ' ' || true)" "www key=k-org-6 2"
nat 44008 $D4 443
check_eq "a request no binding matches (GET): passed unchanged, twice on one connection" \
	"$(get 44008 www.example.org --next --local-port 44008 --cacert "$L7CA" \
		--resolve "www.example.org:15443:$PX" https://www.example.org:15443/ || true)" \
	"$(printf 'www key=\nwww key=')"
check_eq "a request no binding matches: one l7-pinned report for the connection" \
	"$(fw_eventually 5 has_report 44008 verdict l7-pinned; grep -c "^type=verdict .*reason=l7-pinned client=$C:44008 " "$REPORTS")" 1

nat 44007 2001:db8::10 443
check_eq "an IPv6 original destination: terminated, its page" \
	"$(get 44007 api.example.com || true)" "api key=k-api-6 host=api.example.com"
check_report "an IPv6 original destination: reported" 44007 verdict l7-injected dst=2001:db8::10:443

nat 44009 $D4 443
leaf 44009 $LONG "$L7CA" >"$FW_TMP/leaf-long.pem"
check_eq "a name past 64 characters: no common name, the name in a critical SAN" \
	"$(openssl x509 -in "$FW_TMP/leaf-long.pem" -noout -subject -ext subjectAltName 2>&1 | tr -d ' ' | tr '\n' ' ')" \
	"subject= X509v3SubjectAlternativeName:critical DNS:$LONG "

# a session resumes, and only for its own subject, destination and name
# (every hello goes through the checks, a resumed one too)
resume() { # PORTS [ARGS...]: "reused R ticket T | BODY" of the second connection
	local ports=$1
	shift
	fw_ns "$SB" "$FW_PY" "$TERM_HELPER" resume --src "$C:$ports" --dst "$PX:15443" \
		--ca "$L7CA" "$@"
}
nat 44080 $D4 443
nat 44081 $D4 443
check_eq "TLS 1.3: the second connection resumes the first one's ticket, injected" \
	"$(resume 44080,44081 --sni api.example.com)" "reused True ticket True | api key=k-api-6 host=api.example.com"
nat 44082 $D4 443
nat 44083 $D4 443
check_eq "TLS 1.2: a session resumed, injected" \
	"$(resume 44082,44083 --sni api.example.com --tls12 | sed 's/ticket [A-Za-z]* //')" \
	"reused True | api key=k-api-6 host=api.example.com"
nat 44084 $D4 443
nat 44085 $D4 443
check_eq "TLS 1.3: api.example.com's ticket offered for www.example.org: not resumed (a full handshake), www's page" \
	"$(resume 44084,44085 --sni api.example.com --sni2 www.example.org)" "reused False ticket True | www key="
nat 44086 $D4 443
nat 44087 $D4 443
check_eq "TLS 1.2: api.example.com's session offered for www.example.org: not resumed" \
	"$(resume 44086,44087 --sni api.example.com --sni2 www.example.org --tls12 | cut -d' ' -f1,2)" "reused False"
# subject 8 has the same lease and a vault of its own
py put-lease "$BPFFS" 8 $D4 3600 1
tpy put-vault "$BPFFS" 8 1 "api|X-Api-Key|k-api-s8|api.example.com||0"
nat 44088 $D4 443
py put-nat "$BPFFS" "$C" 44089 15443 $D4 443 8 tls
check_eq "TLS 1.3: subject 7's ticket offered by subject 8: not resumed, subject 8's credential" \
	"$(resume 44088,44089 --sni api.example.com)" "reused False ticket True | api key=k-api-s8 host=api.example.com"
nat 44090 $D4 443
py put-nat "$BPFFS" "$C" 44091 15443 $D4 443 8 tls
check_eq "TLS 1.2: subject 7's session offered by subject 8: not resumed" \
	"$(resume 44090,44091 --sni api.example.com --tls12 | cut -d' ' -f1,2)" "reused False"
nat 44092 2001:db8::10 443
nat 44093 $D4 443
check_eq "TLS 1.3: a ticket of another original destination: not resumed" \
	"$(resume 44092,44093 --sni api.example.com | cut -d' ' -f1,2)" "reused False"

# TLS 1.3 early data: a resumed session's 0-RTT request would be
# replayable, injected each time; the tickets allow none (openssl
# s_client through a relay that connects from the nat entries' ports)
nat 44094 $D4 443
nat 44095 $D4 443
fw_bg_ready "$SB" "$FW_TMP/relay.ready" "$FW_PY" "$TERM_HELPER" relay 127.0.0.1:18443 "$C:44094,44095" \
	"$PX:15443"
printf 'GET / HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n' >"$FW_TMP/early.txt"
sclient() { # ARGS...: s_client to the relay for api.example.com
	fw_ns "$SB" timeout 10 openssl s_client -connect 127.0.0.1:18443 -servername api.example.com \
		-CAfile "$L7CA" -tls1_3 -ign_eof "$@" <"$FW_TMP/early.txt" 2>&1
}
sclient -sess_out "$FW_TMP/sess.pem" >"$FW_TMP/early1.out" || true
sclient -sess_in "$FW_TMP/sess.pem" -early_data "$FW_TMP/early.txt" >"$FW_TMP/early2.out" || true
check_eq "early data: the ticket resumes, and its early data is not taken" \
	"$(grep -o -e '^Reused, TLSv1.3' -e '^Early data was [a-z ]*' "$FW_TMP/early2.out" | tr '\n' ' ')" \
	"Reused, TLSv1.3 Early data was not sent "
check "early data: the tickets allow none (Max Early Data: 0)" \
	grep -q "Max Early Data: 0" "$FW_TMP/early1.out"

# a HelloRetryRequest, then a second ClientHello: the checks ran on the
# first one's name, which the second must keep
hrr() { # PORT NAME2
	fw_ns "$SB" "$FW_PY" "$TERM_HELPER" hrr --src "$C:$1" --dst "$PX:15443" --sni api.example.com \
		--sni2 "$2"
}
nat 44096 $D4 443
check_eq "HelloRetryRequest, the second hello for the same name: taken" \
	"$(hrr 44096 api.example.com)" "hrr server-hello"
nat 44097 $D4 443
check_eq "HelloRetryRequest, the second hello for another name of the vault: refused" \
	"$(hrr 44097 www.example.org)" "hrr alert"
check "... by the hello callback" grep -q "the second ClientHello names another server" \
	"$FW_TMP/proxy/error.log"

# a terminated connection outlives its subject: the id retires, its nat
# entries are reaped and the id goes to another sandbox with a vault of
# its own for the same name. The connection's next request must not get
# that sandbox's credential (a process sandbox's socket handed to a
# process outside its cgroup keeps the connection up)
nat 44098 $D4 443
rm -f "$FW_TMP/reused"
fw_ns "$SB" "$FW_PY" "$TERM_HELPER" twice --src "$C:44098" --dst "$PX:15443" --sni api.example.com \
	--ca "$L7CA" --wait "$FW_TMP/reused" >"$FW_TMP/twice.out" 2>&1 &
TWICE=$!
fw_eventually 5 grep -q "^200 " "$FW_TMP/twice.out" || true
read -ra NATKEY < <("$FW_PY" -c "import ipaddress, struct
print(' '.join('%02x' % b for b in
	ipaddress.ip_address('::ffff:$C').packed + struct.pack('>HH', 44098, 15443)))")
bpftool map delete pinned "$BPFFS/fastwall_l7_nat" key hex "${NATKEY[@]}"
tpy put-vault "$BPFFS" $SUBJ 40 "api|X-Api-Key|k-other-sandbox|api.example.com||0"
touch "$FW_TMP/reused"
wait "$TWICE" || true
check_eq "a connection whose subject's id went to another sandbox: no credential of the other's" \
	"$(sed 's/k-other-sandbox/LEAKED/; s/ host=api.example.com//g' "$FW_TMP/twice.out")" \
	"200 api key=k-api-6 | closed"
vault 6
# a push for the same subject (its nat entry in place): the next request
# on the connection gets the new credential
nat 44099 $D4 443
rm -f "$FW_TMP/reused"
fw_ns "$SB" "$FW_PY" "$TERM_HELPER" twice --src "$C:44099" --dst "$PX:15443" --sni api.example.com \
	--ca "$L7CA" --wait "$FW_TMP/reused" >"$FW_TMP/twice.out" 2>&1 &
TWICE=$!
fw_eventually 5 grep -q "^200 " "$FW_TMP/twice.out" || true
vault 7
touch "$FW_TMP/reused"
wait "$TWICE" || true
check_eq "a vault pushed again for the connection's own subject: its next request gets the new credential" \
	"$(sed 's/ host=api.example.com//g' "$FW_TMP/twice.out")" "200 api key=k-api-6 | 200 api key=k-api-7"
vault 6

nat 44014 203.0.113.12 443
check_eq "a WebSocket upgrade on a terminated connection: 101, then bytes both ways" \
	"$(fw_ns "$SB" "$FW_PY" "$TERM_HELPER" upgrade --src "$C:44014" --dst "$PX:15443" \
		--sni ws.example.org --ca "$L7CA" 2>&1)" "101 ping"

# ---- not in the vault: passed through as in part 1 ----
nat 44010 $D4 443
check_eq "pinned name not in the vault: the origin's own certificate" \
	"$(leaf 44010 plain.example.net "$CA" | openssl x509 -noout -issuer 2>&1)" "issuer=CN = fastwall-inet-ca"
check_report "pinned name not in the vault: l7-pinned from the stream server" 44010 verdict l7-pinned \
	name=plain.example.net
nat 44011 $D4 443
check_eq "pinned name not in the vault: no credential" \
	"$(fw_ns "$SB" curl -sS --max-time 5 --local-port 44011 --cacert "$CA" \
		--resolve "plain.example.net:15443:$PX" https://plain.example.net:15443/ || true)" "plain key="

# ---- Host must be the server name ----
lines() { grep -c . "$FW_TMP/inet/access.log" || true; }
n0=$(lines)
nat 44020 $D4 443
check_eq "Host another name than the server name: 421" \
	"$(get 44020 api.example.com -o /dev/null -w '%{http_code}' -H 'Host: other.example.com' || true)" 421
check_report "Host != server name: l7-misdirected" 44020 verdict l7-misdirected name=other.example.com
check_eq "Host != server name: nothing reached the origin" "$(lines)" "$n0"
nat 44023 $D4 443
check_eq "an absolute-form URI of the server name with another Host: 421" \
	"$(get 44023 api.example.com --http1.1 -o /dev/null -w "%{http_code}" --request-target https://api.example.com/ \
		-H 'Host: other.example.com' || true)" 421
nat 44024 $D4 443
check_eq "an absolute-form URI of another name: 421" \
	"$(get 44024 api.example.com --http1.1 -o /dev/null -w "%{http_code}" --request-target https://other.example.com/ || true)" 421
check_eq "absolute-form URIs: nothing reached the origin" "$(lines)" "$n0"
nat 44021 $D4 443
check_eq "Host with a port and upper case: the page" \
	"$(get 44021 api.example.com -H 'Host: API.Example.com:443' || true)" "api key=k-api-6 host=api.example.com"
n0=$(lines)
nat 44022 $D4 443
check_eq "HTTP/2 :authority another name: 421" \
	"$(get 44022 api.example.com --http2 -o /dev/null -w '%{http_code}' -H 'Host: www.example.org' || true)" 421
check_eq "HTTP/2 :authority another name: nothing reached the origin" "$(lines)" "$n0"

# ---- a binding scoped by paths (v1: /v1/* of api.example.com) ----
# nginx resolves "/v1/../admin" but keeps "/v1/..;/admin" and
# "/v1/..\admin" as sent, which Tomcat, Jetty and Spring (";") or some
# servers ("\") read as /admin: v1's credential must not go with them
path_key() { # PORT PATH: the key the origin got, and the path it got
	nat "$1" $D4 443
	fw_ns "$SB" curl -sS --max-time 5 --local-port "$1" --cacert "$L7CA" --path-as-is \
		--resolve "api.example.com:15443:$PX" "https://api.example.com:15443$2" |
		sed 's/ host=.*//'
	echo " $(tail -1 "$FW_TMP/inet/access.log" | cut -d' ' -f3)"
}
check_eq "paths: /v1/models gets the /v1/* binding's credential" \
	"$(path_key 44025 /v1/models | tr -d '\n')" "api key=k-v1 /v1/models"
check_eq "paths: /v1/..;/admin reaches the origin as sent, without v1's credential" \
	"$(path_key 44026 '/v1/..;/admin' | tr -d '\n')" "api key=k-api-6 /v1/..;/admin"
check_eq "paths: /v1/..%5cadmin (a backslash) without v1's credential" \
	"$(path_key 44027 '/v1/..%5cadmin' | tr -d '\n')" "api key=k-api-6 /v1/..%5cadmin"

# ---- the origin's certificate ----
nat 44030 $BAD 443
check_eq "origin certificate no one trusts: 502" \
	"$(get 44030 bad.example.com -o /dev/null -w '%{http_code}' || true)" 502
check_report "origin certificate: l7-upstream-cert" 44030 verdict l7-upstream-cert name=bad.example.com
check "origin certificate: nothing was sent to it" sh -c "! grep -q bad '$FW_TMP/inet/access.log'"
nat 44031 $D4 444
check_eq "origin refusing the connection: 502" \
	"$(get 44031 api.example.com -o /dev/null -w '%{http_code}' || true)" 502
check_report "origin refusing: l7-upstream-failed, not l7-upstream-cert" 44031 verdict l7-upstream-failed
check_fails "origin refusing: no l7-upstream-cert" has_report 44031 verdict l7-upstream-cert

# ---- the terminating socket ----
pline() { echo "PROXY TCP4 $C $PX $1 15443"; }
# the PROXY line of a live connection (44040 holds its nat entry),
# written by a process of the proxy's user that is not the proxy (the
# default l7.user is nobody, which a process sandbox may run as): it
# would be served as that connection's subject, with its credential
nat 44040 $D4 443
check_eq "the socket's peer of the proxy's user but no process of the proxy: refused" \
	"$(tpy unix "$VAR/term.sock" "$(pline 44040)" api.example.com "$L7CA" body)" "refused SSLError"
check "a peer of the proxy's user, not the proxy: the error log says so" \
	grep -q "the terminating socket's peer (pid [0-9]*) is not a process of this proxy" \
	"$FW_TMP/proxy/error.log"
check_report "a peer of the proxy's user, not the proxy: l7-untracked-peer" 44040 verdict l7-untracked-peer
nat 44041 $D4 443
cp "$L7CA" "$VAR/l7ca.crt"
check_eq "the socket's peer of another user: refused" \
	"$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$FW_PY" "$TERM_HELPER" unix \
		"$VAR/term.sock" "$(pline 44041)" api.example.com "$VAR/l7ca.crt")" "refused SSLError"
check "another user's peer: the error log says so" \
	grep -q "the terminating socket's peer (uid 65534) is not this proxy's user" "$FW_TMP/proxy/error.log"
check_eq "no nat entry, on the socket: handshake refused" \
	"$(tpy unix "$VAR/term.sock" "$(pline 44043)" api.example.com "$L7CA")" "refused SSLError"
check_report "no nat entry: l7-untracked-peer" 44043 verdict l7-untracked-peer

# ---- idle origin connections, by {address, port, server name} ----
for p in 44050 44051 44052 44053; do nat $p $D4 443; done
get 44050 api.example.com -o /dev/null
get 44051 www.example.org -o /dev/null
get 44052 api.example.com -o /dev/null
get 44053 www.example.org -o /dev/null
fw_eventually 5 sh -c "[ \$(grep -c . '$FW_TMP/inet/access.log') -ge 4 ]" || true
conns() { tail -4 "$FW_TMP/inet/access.log" | awk -v n="$1" '$2 == n { print $1 }' | sort -u | wc -l; }
check_eq "keep-alive: two requests for api.example.com on one origin connection" "$(conns api.example.com)" 1
check_eq "keep-alive: two requests for www.example.org on one origin connection" "$(conns www.example.org)" 1
check "keep-alive: never a connection made for one name used for the other" \
	test "$(tail -4 "$FW_TMP/inet/access.log" | awk '{ print $1 }' | sort -u | wc -l)" = 2

check "every report is a whole struct fw_l7_report of version 1" \
	sh -c "! grep -v ' version=1\$' '$REPORTS'"
check "the proxy logged no error" sh -c "! grep -E '\\[(alert|emerg|crit)\\]' '$FW_TMP/proxy/error.log'"
check "no credential in the proxy's error log" sh -c "! grep -q k-api '$FW_TMP/proxy/error.log'"
core0() { grep -q 'core file size *0 *0' "/proc/$1/limits"; }
cores_off() {
	local m p
	m=$(cat "$FW_TMP/proxy/nginx.pid")
	core0 "$m" || return 1
	for p in $(pgrep -P "$m"); do core0 "$p" || return 1; done
}
check "the master and its worker dump no core (RLIMIT_CORE 0)" cores_off
locked() { # [PIDFILE]
	local p kb
	p=$(pgrep -P "$(cat "${1:-$FW_TMP/proxy/nginx.pid}")" | head -1)
	kb=$(sed -n 's/^VmLck:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$p/status")
	[ "${kb:-0}" -gt 1000 ]
}
check "the worker's memory is locked (CAP_IPC_LOCK)" locked

# ---- as fastwalld runs it: unprivileged, with inherited descriptors ----
# nginx as nobody with CAP_BPF and CAP_IPC_LOCK (ambient), the maps
# read-only on fds 3-6 and 8-9, reports on 7, the CA through a pipe on 10;
# its terminating socket in a directory only nobody reaches
chown nobody "$P2"
mkdir -m 0700 "$P2/var"
cp "$FW_TMP/pki/placeholder.crt" "$FW_TMP/pki/placeholder.key" "$CA" "$P2/"
chown -R nobody "$P2"
proxy_conf | sed -e "s|^user root;||" -e "s|^worker_processes 1;|worker_processes 2;|" \
	-e "s|pin:$BPFFS;|PIN|" -e "s|fastwall_l7_maps PIN|fastwall_l7_maps fd:3,4,5,6;|" \
	-e "s|fastwall_l7_vaults PIN|fastwall_l7_vaults fd:8,9;|" \
	-e "s|file:$FW_TMP/pki/l7ca.pem|fd:10|" -e "s|unix:$FW_TMP/reports.sock|fd:7|" \
	-e "s|$PX:15443|$PX:15446|" -e "s|$VAR/term.sock|$P2/var/term.sock|g" \
	-e "s|$FW_TMP/proxy/|$P2/|g" -e "s|$FW_TMP/pki/|$P2/|g" \
	>"$P2/nginx.conf"
fw_bg "$NS_POD" "$FW_PY" "$TERM_HELPER" launch "$BPFFS" "$FW_TMP/reports.sock" \
	"$FW_TMP/pki/l7ca.pem" -- \
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+bpf,+ipc_lock \
	--ambient-caps=+bpf,+ipc_lock "$FW_NGINX" -e stderr -p "$P2" -c "$P2/nginx.conf"
fw_eventually 10 listening "$NS_POD" 15446 || fw_die "the unprivileged proxy did not start: $(tail -5 "$FW_TMP/bg.log")"
check_eq "unprivileged proxy: its processes run as nobody" \
	"$(ps -o user= -p "$(cat "$P2/nginx.pid")" --ppid "$(cat "$P2/nginx.pid")" | sort -u | tr -d ' ')" nobody
nat 44070 $D4 443
py put-nat "$BPFFS" "$C" 44070 15446 $D4 443 $SUBJ tls
check_eq "unprivileged proxy, fd: maps and CA: terminated, the credential set" \
	"$(fw_ns "$SB" curl -sS --max-time 5 --local-port 44070 --cacert "$L7CA" \
		--resolve "api.example.com:15446:$PX" https://api.example.com:15446/ || true)" \
	"api key=k-api-6 host=api.example.com"
check_report "unprivileged proxy: l7-injected on the inherited socket" 44070 verdict l7-injected subject=7
# a process sandbox run as nobody reaches VAR (nobody's) and passes the
# uid check: its PROXY line names a live connection of subject 7
py put-nat "$BPFFS" "$C" 44071 15446 $D4 443 $SUBJ tls
cp "$L7CA" "$P2/l7ca.crt"
check_eq "unprivileged proxy: a nobody process forging a sandbox's PROXY line gets no credential" \
	"$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$FW_PY" "$TERM_HELPER" unix \
		"$P2/var/term.sock" "PROXY TCP4 $C $PX 44071 15446" api.example.com "$P2/l7ca.crt" body)" \
	"refused SSLError"
check "unprivileged proxy with CAP_IPC_LOCK: the worker's memory is locked" locked "$P2/nginx.pid"
check_fails "unprivileged proxy: no warning about locking" grep -q "memory not locked" "$P2/error.log"

# ---- configuration errors ----
bad_conf() { # WANT-IN-MESSAGE SED-EXPRESSION
	proxy_conf | sed "$2" >"$FW_TMP/proxy/bad.conf"
	! "$FW_NGINX" -t -e stderr -p "$FW_TMP/proxy" -c "$FW_TMP/proxy/bad.conf" >"$FW_TMP/proxy/bad.out" 2>&1 &&
		grep -q "$1" "$FW_TMP/proxy/bad.out"
}
check "fastwall_l7_terminate without fastwall_l7_ca is refused" \
	bad_conf "fastwall_l7_terminate needs fastwall_l7_ca" "/fastwall_l7_ca /d"
check "fastwall_l7_ca of a certificate without its key is refused" \
	bad_conf "does not hold a PEM certificate then its private key" \
	"s|file:$FW_TMP/pki/l7ca.pem|file:$L7CA|"
check "fastwall_l7_ca of a key that is not the certificate's is refused" \
	bad_conf "is not a CA's or not the key's" \
	"s|file:$FW_TMP/pki/l7ca.pem|file:$FW_TMP/pki/mixed.pem|"
check "fastwall_l7_ca of neither fd: nor file: is refused" \
	bad_conf "is neither fd:N nor file:PATH" "s|file:$FW_TMP/pki/l7ca.pem|$FW_TMP/pki/l7ca.pem|"
check "fastwall_l7_terminate_to of a TCP address is refused" \
	bad_conf "is not unix:PATH" "s|unix:$VAR/term.sock;|127.0.0.1:1;|"
check "fastwall_l7_keepalive without fastwall_l7_origin is refused" \
	bad_conf "fastwall_l7_keepalive needs fastwall_l7_origin" "s|^\t\tfastwall_l7_origin;|\t\tserver $D4:443;|"
# fastwalld's way: the PEM written whole into a pipe the proxy inherits
fd_conf() {
	proxy_conf | sed -e "s|file:$FW_TMP/pki/l7ca.pem|fd:9|" -e "s|$PX:15443|$PX:15449|" \
		-e "s|$VAR/term.sock|$VAR/fd.sock|g" >"$FW_TMP/proxy/fd.conf"
	fw_ns "$NS_POD" "$FW_NGINX" -t -e stderr -p "$FW_TMP/proxy" -c "$FW_TMP/proxy/fd.conf"
}
check "fastwall_l7_ca fd:N reads the CA from an inherited pipe" fd_conf 9< <(cat "$FW_TMP/pki/l7ca.pem")
fd_closed() {
	! fd_conf >"$FW_TMP/proxy/fd.out" 2>&1 && grep -q 'can.t read "fd:9"' "$FW_TMP/proxy/fd.out"
}
check "fastwall_l7_ca fd:N of a closed descriptor is refused" fd_closed
fw_summary
