#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the layer-7 proxy's nginx module (egress/, make l7proxy) on
# its own, in the real /usr/sbin/nginx with Debian's stream module, without
# fastwalld or the data path: the test creates the four maps the module
# reads with bpftool (the layouts of include/fastwall/abi.h) and writes
# the nat entries, leases and names itself, and listens for the module's
# reports on a datagram socket.
#
#   sandbox fwsb-ID-a 10.42.0.2 --- pod 10.42.0.1: the proxy (nginx, :15443
#   TLS, :15080 HTTP) --- internet 203.0.113.10 / 2001:db8::10: nginx
#   serving TLS for api.example.com, other.example.com, www.example.org
#   (one address, a test CA) and HTTP echoing the Host it got
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
if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ] || [ ! -f "$STREAM_SO" ]; then
	echo "l7-proxy: skipped: nginx, nginx-dev or libnginx-mod-stream is not installed (scripts/install-deps.sh)"
	exit 77
fi
[ "$(id -u)" = 0 ] || fw_die "must run as root"
for t in ip bpftool curl openssl nsenter; do
	command -v "$t" >/dev/null || fw_die "$t not found"
done
make -s -C "$FW_ROOT" BUILD="$BUILD" l7proxy >/dev/null || fw_die "make l7proxy failed"
# the unprivileged proxy's own directory: nobody must write its pid there
P2=$(mktemp -d /tmp/fastwall-l7-nobody.XXXXXX)
chmod 0755 "$P2"
chown nobody "$P2"
l7_cleanup() {
	fw_cleanup
	rm -rf "$P2"
}
trap l7_cleanup EXIT

fw_topology
fw_sandbox a 2
SB=$(fw_sb_ns a)
ip -n "$NS_INET" route add 10.42.0.0/24 via 192.0.2.1 2>/dev/null || true
C=10.42.0.2
PX=10.42.0.1
SUBJ=7

# ---- the maps, as fastwalld pins them (abi.h's layouts) ----
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/fastwall_l7_nat" type hash key 20 value 40 entries 1024 \
	name fastwall_l7_nat flags 1
bpftool map create "$BPFFS/fastwall_learned" type hash key 24 value 24 entries 1024 \
	name fastwall_learned flags 1
bpftool map create "$BPFFS/fastwall_learned_names" type hash key 24 value 32 entries 1024 \
	name fastwall_learned_nam flags 1
bpftool map create "$BPFFS/fastwall_names" type hash key 4 value 256 entries 1024 \
	name fastwall_names flags 1

py() { "$FW_PY" "$HELPER" "$@"; }
nat() { py put-nat "$BPFFS" "$C" "$1" "$2" "$3" "$4" "$5" "$6"; } # CPORT PPORT DST DPORT SUBJECT KIND

py put-name "$BPFFS" 1 api.example.com
py put-name "$BPFFS" 2 WWW.Example.ORG.
py put-name "$BPFFS" 3 other.example.com
# subject 7 learned 203.0.113.10 (and 2001:db8::10) from api.example.com
# and www.example.org; other.example.com, on the same address, taught it
# only to subject 12; subject 8's lease ran out; subject 9 is limited
py put-lease "$BPFFS" 7 203.0.113.10 3600 1 2
py put-lease "$BPFFS" 7 2001:db8::10 3600 1
py put-lease "$BPFFS" 12 203.0.113.10 3600 3
py put-lease "$BPFFS" 8 203.0.113.10 -1 1
py put-lease "$BPFFS" 9 203.0.113.10 3600 1

# ---- the internet's TLS and HTTP server ----
mkdir -p "$FW_TMP/pki" "$FW_TMP/inet" "$FW_TMP/proxy"
(
	cd "$FW_TMP/pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=fastwall-l7-test-ca -keyout ca.key -out ca.pem 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=api.example.com -keyout leaf.key -out leaf.csr 2>/dev/null
	printf 'subjectAltName=DNS:api.example.com,DNS:other.example.com,DNS:www.example.org\n' >ext.cnf
	openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile ext.cnf -out leaf.pem 2>/dev/null
)
CA=$FW_TMP/pki/ca.pem
cat >"$FW_TMP/inet/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
error_log $FW_TMP/inet/error.log info;
pid $FW_TMP/inet/nginx.pid;
events { worker_connections 256; }
http {
	access_log $FW_TMP/inet/access.log;
	client_body_temp_path $FW_TMP/inet/body;
	proxy_temp_path $FW_TMP/inet/proxy;
	fastcgi_temp_path $FW_TMP/inet/fastcgi;
	uwsgi_temp_path $FW_TMP/inet/uwsgi;
	scgi_temp_path $FW_TMP/inet/scgi;
	default_type text/plain;
	ssl_certificate $FW_TMP/pki/leaf.pem;
	ssl_certificate_key $FW_TMP/pki/leaf.key;
	server { listen 203.0.113.10:443 ssl; listen [2001:db8::10]:443 ssl;
		server_name api.example.com; return 200 "api \$server_addr\n"; }
	server { listen 203.0.113.10:443 ssl; server_name other.example.com;
		return 200 "other\n"; }
	server { listen 203.0.113.10:80; listen [2001:db8::10]:80;
		return 200 "host=\$http_host uri=\$request_uri\n"; }
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
fastwall_l7_report unix:$FW_TMP/reports.sock;
fastwall_l7_subject_connections 2;
events { worker_connections 256; }
stream {
	server {
		listen $PX:15443;
		ssl_preread on;
		fastwall_l7_pin tls;
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
fw_eventually 10 listening "$NS_INET" 443 || fw_die "the server did not start: $(tail -5 "$FW_TMP/bg.log")"
fw_eventually 10 listening "$NS_POD" 15443 || fw_die "the proxy did not start: $(tail -5 "$FW_TMP/bg.log")"

# report PORT TYPE: the report line of that type for the client port
report() { { grep " client=$C:$1 " "$REPORTS" || true; } | { grep "^type=$2 " || true; } | tail -1; }
has_report() { report "$1" "$2" | grep -q .; }
# check_report DESC PORT TYPE FIELD=VALUE...
check_report() {
	local d=$1 port=$2 type=$3 line f
	shift 3
	fw_eventually 5 has_report "$port" "$type" || true
	line=$(report "$port" "$type")
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
tls() { fw_ns "$SB" "$FW_PY" "$HELPER" tls --dst "$PX:15443" "$@" 2>/dev/null; }
curl_tls() { # PORT NAME
	fw_ns "$SB" curl -sS --max-time 5 --local-port "$1" --cacert "$CA" \
		--resolve "$2:15443:$PX" "https://$2:15443/"
}
D4=203.0.113.10

# ---- TLS ----
nat 41001 15443 $D4 443 $SUBJ tls
check_eq "allowed server name: the server's page through the proxy" \
	"$(curl_tls 41001 api.example.com || true)" "api 203.0.113.10"
check_report "allowed server name: report l7-pinned" 41001 verdict reason=l7-pinned \
	subject=7 kind=tls name=api.example.com dst=203.0.113.10:443
check_report "allowed server name: close report with bytes both ways" 41001 close \
	reason=l7-pinned subject=7
line=$(report 41001 close)
up=$(sed -n 's/.* up=\([0-9]*\) .*/\1/p' <<<"$line")
down=$(sed -n 's/.* down=\([0-9]*\) .*/\1/p' <<<"$line")
check "close report counts the hello and the request up (got ${up:-none})" test "${up:-0}" -gt 300
check "close report counts the certificate and the page down (got ${down:-none})" test "${down:-0}" -gt 500

nat 41002 15443 $D4 443 $SUBJ tls
check_fails "another tenant's name on the same address: closed" curl_tls 41002 other.example.com
check_report "another tenant's name: l7-name" 41002 verdict reason=l7-name name=other.example.com

nat 41003 15443 $D4 443 $SUBJ tls
check_eq "no server name: closed before any byte" "$(tls --src $C:41003 --built)" "closed 0"
check_report "no server name: l7-no-name" 41003 verdict reason=l7-no-name

nat 41013 15443 $D4 443 $SUBJ tls
check_eq "an address as the server name: closed" "$(tls --src $C:41013 --built --sni 203.0.113.10)" "closed 0"
check_report "an address as the server name: l7-no-name" 41013 verdict reason=l7-no-name

nat 41004 15443 $D4 443 $SUBJ tls
check_eq "ECH extension: closed" "$(tls --src $C:41004 --built --sni api.example.com --ech)" "closed 0"
check_report "ECH extension: l7-ech" 41004 verdict reason=l7-ech

nat 41005 15443 $D4 443 $SUBJ tls
check_eq "two server_name extensions: closed" \
	"$(tls --src $C:41005 --built --sni api.example.com --sni other.example.com --dup)" "closed 0"
check_report "two server_name extensions: l7-bad-hello" 41005 verdict reason=l7-bad-hello

nat 41015 15443 $D4 443 $SUBJ tls
check_eq "two host names in one extension: closed" \
	"$(tls --src $C:41015 --built --sni api.example.com --sni other.example.com)" "closed 0"
check_report "two host names in one extension: l7-bad-hello" 41015 verdict reason=l7-bad-hello

nat 41006 15443 $D4 443 $SUBJ tls
check_eq "a real hello written in 5 pieces: the page" \
	"$(tls --src $C:41006 --sni api.example.com --ca "$CA" --pieces 5)" "page api 203.0.113.10"
check_report "hello in 5 pieces: l7-pinned" 41006 verdict reason=l7-pinned name=api.example.com
check_report "hello in 5 pieces: its close report" 41006 close reason=l7-pinned
dur=$(report 41006 close | sed -n 's/.* dur_ms=\([0-9]*\) .*/\1/p')
check "the close report's duration covers the 0.8 s the hello took (got ${dur:-none} ms)" \
	test "${dur:-0}" -ge 700

nat 41007 15443 $D4 443 $SUBJ tls
check_eq "a 1.8 KB hello in 3 pieces: the server's ServerHello" \
	"$(tls --src $C:41007 --built --sni www.example.org --pad 1650 --pieces 3)" "serverhello"
check_report "1.8 KB hello: l7-pinned, name matched in any case and with its dot" 41007 verdict \
	reason=l7-pinned name=www.example.org

nat 41017 15443 $D4 443 $SUBJ tls
check_eq "a 1.8 KB hello in 3 pieces with another tenant's name: closed" \
	"$(tls --src $C:41017 --built --sni other.example.com --pad 1650 --pieces 3)" "closed 0"
check_report "1.8 KB hello, another name: l7-name" 41017 verdict reason=l7-name

nat 41008 15443 $D4 443 8 tls
check_eq "lease expired: closed" "$(tls --src $C:41008 --built --sni api.example.com)" "closed 0"
check_report "lease expired: l7-lease" 41008 verdict reason=l7-lease subject=8

check_eq "no nat entry: closed" "$(tls --src $C:41009 --built --sni api.example.com)" "closed 0"
check_report "no nat entry: l7-untracked-peer, no subject" 41009 verdict reason=l7-untracked-peer subject=0

nat 41014 15443 $D4 443 $SUBJ http
check_eq "a nat entry of the HTTP kind: closed" "$(tls --src $C:41014 --built --sni api.example.com)" "closed 0"
check_report "a nat entry of another kind: l7-untracked-peer" 41014 verdict reason=l7-untracked-peer

nat 41011 15443 2001:db8::10 443 $SUBJ tls
check_eq "IPv6 original destination: its page" \
	"$(tls --src $C:41011 --sni api.example.com --ca "$CA")" "page api 2001:db8::10"
check_report "IPv6 original destination: reported" 41011 verdict reason=l7-pinned dst=2001:db8::10:443

nat 41012 15443 $D4 444 $SUBJ tls
check_eq "pinned, but the destination refuses: closed" \
	"$(tls --src $C:41012 --built --sni api.example.com)" "closed 0"
check_report "destination refuses: close report l7-upstream-failed" 41012 close reason=l7-upstream-failed

for p in 41021 41022 41023 41024; do nat $p 15443 $D4 443 9 tls; done
check_eq "per-subject limit of 2: a third connection refused while two are held, one after" \
	"$(fw_ns "$SB" "$FW_PY" "$HELPER" limit --src $C --ports 41021,41022,41023,41024 \
		--dst $PX:15443 --sni api.example.com)" \
	"held=serverhello,serverhello third=closed 0 after=serverhello"
check_report "per-subject limit: l7-limit" 41023 verdict reason=l7-limit subject=9

# ---- HTTP ----
http() { fw_ns "$SB" "$FW_PY" "$HELPER" http "$C:$1" "$PX:15080" "${@:2}"; }
# a request with \r\n escapes, which the helper turns into CR LF
req() { printf 'GET / HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' "$1"; }
nat 42001 15080 $D4 80 $SUBJ http
check_eq "HTTP Host allowed: the page, with the request's Host, kept alive" \
	"$(http 42001 "$(req api.example.com)" "$(req API.example.com:80)")" \
	"200:host=api.example.com_uri=/ 200:host=API.example.com:80_uri=/ open"
check_report "HTTP Host allowed: l7-pinned" 42001 verdict reason=l7-pinned kind=http name=api.example.com

nat 42002 15080 $D4 80 $SUBJ http
check_eq "HTTP Host of another tenant: 403 and closed" \
	"$(http 42002 "$(req other.example.com)" | sed 's/:[^ ]*//')" "403 closed"
check_report "HTTP Host mismatch: l7-name" 42002 verdict reason=l7-name name=other.example.com

nat 42003 15080 $D4 80 $SUBJ http
check_eq "keep-alive: the second request with another Host gets 403 and the connection closes" \
	"$(http 42003 "$(req api.example.com)" "$(req other.example.com)" "$(req api.example.com)" |
		sed 's/:[^ ]*//g')" "200 403 closed"
check_report "keep-alive second request: l7-name" 42003 verdict reason=l7-name
check_report "keep-alive: the close report of the connection" 42003 close reason=l7-pinned kind=http

nat 42004 15080 $D4 80 $SUBJ http
check_eq "absolute-form URI with another host: 403" \
	"$(http 42004 'GET http://other.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n' |
		sed 's/:[^ ]*//')" "403 closed"
check_report "absolute-form URI: l7-name on the URI's host" 42004 verdict reason=l7-name name=other.example.com

nat 42005 15080 $D4 80 $SUBJ http
check_eq "absolute-form URI of the allowed name: the page" \
	"$(http 42005 'GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n')" \
	"200:host=api.example.com_uri=/x open"

nat 42006 15080 $D4 80 $SUBJ http
check_eq "Content-Length with Transfer-Encoding: nginx's 400" \
	"$(http 42006 'POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' |
		sed 's/:[^ ]*//')" "400 closed"
check "the smuggling attempt never reached the server" \
	sh -c "! grep -q POST '$FW_TMP/inet/access.log'"

nat 42007 15080 $D4 80 $SUBJ http
check_eq "HTTP/1.0 without Host: 403" \
	"$(http 42007 'GET / HTTP/1.0\r\n\r\n' | sed 's/:[^ ]*//')" "403 closed"
check_report "HTTP without Host: l7-no-name" 42007 verdict reason=l7-no-name

check_eq "HTTP without a nat entry: 403" "$(http 42009 "$(req api.example.com)" | sed 's/:[^ ]*//')" \
	"403 closed"
check_report "HTTP without a nat entry: l7-untracked-peer" 42009 verdict reason=l7-untracked-peer

check "every report is a whole struct fw_l7_report of version 1" \
	sh -c "! grep -v ' version=1\$' '$REPORTS'"
check "the proxy logged no error" sh -c "! grep -E '\\[(alert|emerg|crit)\\]' '$FW_TMP/proxy/error.log'"

# ---- as fastwalld runs it: unprivileged, with inherited descriptors ----
# nginx as nobody with CAP_BPF as its only (ambient) capability, the maps
# opened read-only as fds 3-6 and the report socket as fd 7
cat >"$P2/nginx.conf" <<CONF
load_module $STREAM_SO;
load_module $L7_SO;
daemon off;
master_process on;
worker_processes 1;
error_log stderr info;
pid $P2/nginx.pid;
fastwall_l7_maps fd:3,4,5,6;
fastwall_l7_report fd:7;
events { worker_connections 64; }
stream {
	server {
		listen $PX:15444;
		ssl_preread on;
		fastwall_l7_pin tls;
		proxy_pass \$fastwall_l7_upstream;
	}
}
CONF
fw_bg "$NS_POD" "$FW_PY" "$HELPER" launch "$BPFFS" "$FW_TMP/reports.sock" -- \
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+bpf --ambient-caps=+bpf \
	"$FW_NGINX" -e stderr -p "$P2" -c "$P2/nginx.conf"
fw_eventually 10 listening "$NS_POD" 15444 || fw_die "the unprivileged proxy did not start: $(tail -5 "$FW_TMP/bg.log")"
check_eq "unprivileged proxy: its processes run as nobody" \
	"$(ps -o user= -p "$(cat "$P2/nginx.pid")" --ppid "$(cat "$P2/nginx.pid")" | sort -u | tr -d ' ')" nobody
nat 41101 15444 $D4 443 $SUBJ tls
check_eq "unprivileged proxy, fd: maps: allowed name gets the page" \
	"$(tls --src $C:41101 --dst $PX:15444 --sni api.example.com --ca "$CA")" "page api 203.0.113.10"
check_report "unprivileged proxy: reports on the inherited socket" 41101 close reason=l7-pinned subject=7
nat 41102 15444 $D4 443 $SUBJ tls
check_eq "unprivileged proxy: another tenant's name closed" \
	"$(tls --src $C:41102 --dst $PX:15444 --built --sni other.example.com)" "closed 0"
check_report "unprivileged proxy: l7-name" 41102 verdict reason=l7-name

# ---- a full report socket never holds a connection up ----
# a listener that never reads, with a queue of 4 datagrams (the
# namespace's net.unix.max_dgram_qlen when it is made): reports past that
# are dropped, and the error log of its one worker says so once, not once
# per report
fw_ns "$NS_POD" sysctl -qw net.unix.max_dgram_qlen=4
fw_bg "$NS_POD" "$FW_PY" -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[2], "w").close()
time.sleep(3600)' "$FW_TMP/full.sock" "$FW_TMP/full.ready"
fw_eventually 5 test -e "$FW_TMP/full.ready" || fw_die "the idle listener did not start"
mkdir -p "$FW_TMP/proxy3"
proxy_conf | sed -e "s|unix:$FW_TMP/reports.sock|unix:$FW_TMP/full.sock|" \
	-e "s|$FW_TMP/proxy/|$FW_TMP/proxy3/|g" -e "s|$PX:15443|$PX:15450|" -e "s|$PX:15080|$PX:15081|" \
	-e "s|worker_processes 2|worker_processes 1|" \
	>"$FW_TMP/proxy3/nginx.conf"
fw_bg "$NS_POD" "$FW_NGINX" -e stderr -p "$FW_TMP/proxy3" -c "$FW_TMP/proxy3/nginx.conf"
fw_eventually 10 listening "$NS_POD" 15450 || fw_die "the third proxy did not start: $(tail -5 "$FW_TMP/bg.log")"
start=$SECONDS
closed=0
for p in $(seq 41200 41229); do
	[ "$(tls --src "$C:$p" --dst $PX:15450 --built --sni api.example.com)" = "closed 0" ] &&
		closed=$((closed + 1))
done
check_eq "socket full: 30 refused connections all closed" "$closed" 30
check "socket full: without waiting on it (30 connections in $((SECONDS - start)) s)" \
	test $((SECONDS - start)) -lt 20
check_eq "socket full: the error log says reports were dropped, once" \
	"$(grep -c 'report(s) dropped (socket full or closed)' "$FW_TMP/proxy3/error.log")" 1

# ---- configuration errors: nginx -t refuses them and says why ----
bad_conf() { # WANT-IN-MESSAGE SED-EXPRESSION
	proxy_conf | sed "$2" >"$FW_TMP/proxy/bad.conf"
	! "$FW_NGINX" -t -e stderr -p "$FW_TMP/proxy" -c "$FW_TMP/proxy/bad.conf" >"$FW_TMP/proxy/bad.out" 2>&1 &&
		grep -q "$1" "$FW_TMP/proxy/bad.out"
}
check "a missing pin directory is refused" bad_conf "can't open" "s|pin:$BPFFS|pin:$BPFFS/nonexistent|"
check "fd: with three fds is refused" bad_conf "is not four file descriptors" "s|pin:$BPFFS|fd:3,4,5|"
check "fastwall_l7_pin tls without maps is refused" bad_conf "needs fastwall_l7_maps" "/fastwall_l7_maps/d"
check "fastwall_l7_pin http in a stream server is refused" bad_conf "is not a kind a stream server pins" \
	"s|fastwall_l7_pin tls|fastwall_l7_pin http|"
check "fd: of something that is no map is refused" bad_conf "is not a BPF map" "s|pin:$BPFFS|fd:0,0,0,0|"
mkdir -p "$BPFFS/old"
bpftool map create "$BPFFS/old/fastwall_l7_nat" type hash key 20 value 32 entries 8 name fastwall_l7_nat flags 1
for m in fastwall_learned fastwall_learned_names fastwall_names; do
	ln "$BPFFS/$m" "$BPFFS/old/$m" 2>/dev/null || bpftool map pin pinned "$BPFFS/$m" "$BPFFS/old/$m"
done
check "a map of another layout is refused" bad_conf "has key 20 and value 32 bytes, not 20 and 40" \
	"s|pin:$BPFFS|pin:$BPFFS/old|"
fw_summary
