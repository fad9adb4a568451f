# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# shellcheck disable=SC2034 # names for the scripts that source this
# Part of lib.sh.
# --- credential injection (l7-inject.sh, scripts/bench-inject.sh) --------
# The internet of lib/l7.sh (the test CA, api.example.com and
# other.example.com on the shared address, evil.example.net on the second)
# with an upstream that shows what it received, and a fourth name,
# bad.example.com on 203.0.113.82, served with a certificate no CA the
# proxy trusts signed (self-signed). TLS offers HTTP/2 and HTTP/1.1.
# Every name's nginx server:
#
#   /           200 "NAME" (its first label), the request's X-Api-Key back
#               in X-Echo-Api-Key; logged (FW_CRED_LOG_ALL=0: not logged)
#   /seen       the same, always logged
#   /echo*, /upload*, /ws*
#               inject_tool.py serve behind nginx (on 127.0.0.1:9080 in the
#               internet's namespace): JSON of every X-Api-Key and
#               Authorization value, the body's length and hash; a
#               websocket echo on /ws. Its log ($FW_CRED_ECHO) has a JSON
#               line per request.
#
# The access log ($FW_L7_ACCESS) has a line per request: "REMOTE
# LOCAL:PORT sni=SNI host=HOST "REQUEST" STATUS t=EPOCH.MS
# key="X-API-KEY" auth="AUTHORIZATION"" (nginx logs only the first value
# of a header; the backend's log has every value).

FW_CRED_TOOL=$FW_E2E_DIR/inject_tool.py
FW_CRED_BAD4=203.0.113.82
FW_CRED_ECHO=$FW_L7_DIR/echo.log
FW_CRED_BACKEND=127.0.0.1:9080
FW_CRED_NAMES="$FW_L7_NAMES bad.example.com"

# fw_cred_server_conf: the internet's nginx, on stdout
fw_cred_server_conf() {
	local d=$FW_L7_DIR n a cert root_log back
	root_log="access_log $FW_L7_ACCESS cred;"
	[ "${FW_CRED_LOG_ALL:-1}" = 1 ] || root_log="access_log off;"
	back="proxy_pass http://$FW_CRED_BACKEND; proxy_http_version 1.1; proxy_set_header Host \$host;"
	cat <<EOF
user root;
worker_processes 1;
worker_rlimit_nofile $((${L7_SERVER_CONNS:-4096} * 2 + 64));
pid $d/server.pid;
error_log $d/server.err info;
events { worker_connections ${L7_SERVER_CONNS:-4096}; }
http {
	log_format cred '\$remote_addr \$server_addr:\$server_port sni=\$ssl_server_name host=\$host "\$request" \$status t=\$msec key="\$http_x_api_key" auth="\$http_authorization"';
	access_log $FW_L7_ACCESS cred;
	client_body_temp_path $d/cbt;
	proxy_temp_path $d/pt;
	fastcgi_temp_path $d/ft;
	uwsgi_temp_path $d/ut;
	scgi_temp_path $d/st;
	keepalive_requests 1000000;
	client_max_body_size 0;
	ssl_protocols TLSv1.2 TLSv1.3;
	default_type text/plain;
	server {
		listen $FW_L7_CDN4:443 ssl http2 default_server; listen [$FW_L7_CDN6]:443 ssl http2 default_server;
		listen $FW_L7_EVIL4:443 ssl http2 default_server; listen $FW_CRED_BAD4:443 ssl http2 default_server;
		listen $FW_L7_CDN4:80 default_server; listen [$FW_L7_CDN6]:80 default_server;
		listen $FW_L7_EVIL4:80 default_server; listen $FW_CRED_BAD4:80 default_server;
		server_name _;
		ssl_certificate $d/default.invalid.crt;
		ssl_certificate_key $d/default.invalid.key;
		return 421 "misdirected\n";
	}
EOF
	for n in $FW_CRED_NAMES; do
		case $n in
		evil.example.net) a="listen $FW_L7_EVIL4:443 ssl http2; listen $FW_L7_EVIL4:80;" ;;
		bad.example.com) a="listen $FW_CRED_BAD4:443 ssl http2; listen $FW_CRED_BAD4:80;" ;;
		*) a="listen $FW_L7_CDN4:443 ssl http2; listen [$FW_L7_CDN6]:443 ssl http2; listen $FW_L7_CDN4:80; listen [$FW_L7_CDN6]:80;" ;;
		esac
		cert=$d/$n
		[ "$n" = bad.example.com ] && cert=$d/bad.self
		cat <<EOF
	server {
		$a
		server_name $n;
		ssl_certificate $cert.crt;
		ssl_certificate_key $cert.key;
		location / { $root_log add_header X-Echo-Api-Key \$http_x_api_key always; return 200 "${n%%.*}\n"; }
		location = /seen { add_header X-Echo-Api-Key \$http_x_api_key always; return 200 "seen\n"; }
		location /echo { $back }
		location /upload { $back }
		location /ws {
			$back
			proxy_set_header Upgrade \$http_upgrade;
			proxy_set_header Connection upgrade;
			proxy_read_timeout 30s;
		}
	}
EOF
	done
	echo "}"
}

# fw_cred_internet: addresses, certificates (lib/l7.sh's, and a self-signed
# one for bad.example.com), the backend and nginx; returns once every
# name answers over TLS (bad.example.com with its own certificate).
fw_cred_internet() {
	local n a
	ip -n "$NS_INET" addr add "$FW_L7_CDN4/32" dev lo
	ip -n "$NS_INET" addr add "$FW_L7_EVIL4/32" dev lo
	ip -n "$NS_INET" addr add "$FW_CRED_BAD4/32" dev lo
	ip -n "$NS_INET" addr add "$FW_L7_CDN6/128" dev lo nodad
	fw_l7_certs
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=bad.example.com -addext subjectAltName=DNS:bad.example.com \
		-keyout "$FW_L7_DIR/bad.self.key" -out "$FW_L7_DIR/bad.self.crt" 2>/dev/null ||
		fw_die "openssl: can't make bad.example.com's self-signed certificate"
	cat "$FW_L7_CA" "$FW_L7_DIR/bad.self.crt" >"$FW_L7_DIR/both.crt"
	fw_cred_server_conf >"$FW_L7_DIR/server.conf"
	: >"$FW_L7_ACCESS"
	fw_bg_ready "$NS_INET" "$FW_L7_DIR/backend.ready" "$FW_PY" "$FW_CRED_TOOL" serve \
		--listen "$FW_CRED_BACKEND" --log "$FW_CRED_ECHO"
	fw_bg "$NS_INET" "$FW_NGINX" -e "$FW_L7_DIR/server.err" -c "$FW_L7_DIR/server.conf" -g 'daemon off;'
	for n in $FW_CRED_NAMES; do
		a=$FW_L7_CDN4
		[ "$n" = evil.example.net ] && a=$FW_L7_EVIL4
		[ "$n" = bad.example.com ] && a=$FW_CRED_BAD4
		fw_eventually 5 fw_ns "$NS_INET" curl -sf --max-time 2 --cacert "$FW_L7_DIR/both.crt" -o /dev/null \
			--resolve "$n:443:$a" "https://$n/echo" ||
			fw_die "the TLS server does not answer $n: $(tail -3 "$FW_L7_DIR/server.err")"
	done
}

# fw_cred_resolver: dnsmasq on $FW_L7_UP4 answering the four names
fw_cred_resolver() {
	fw_resolver "$FW_L7_UP4" "api.example.com,$FW_L7_CDN4,$FW_L7_CDN6,30" \
		"other.example.com,$FW_L7_CDN4,30" "evil.example.net,$FW_L7_EVIL4,30" \
		"bad.example.com,$FW_CRED_BAD4,30"
}

# fw_cred_vault SECRET HOST [HEADER]: a vault body with one inline
# credential "k1" and one binding "b1" for https://HOST that sets HEADER
# (X-Api-Key) to it
fw_cred_vault() {
	printf '{"credentials":[{"name":"k1","source":{"type":"inline","value":"%s"}}],"bindings":[{"name":"b1","match":{"hosts":["%s"],"schemes":["https"]},"auth":{"type":"apiKey","name":"%s","credential":"k1"}}]}' \
		"$1" "$2" "${3:-X-Api-Key}"
}

# fw_cred_has_terminate: the module this build made terminates TLS
# (l7term's fastwall_l7_terminate directive is in it)
fw_cred_has_terminate() {
	[ -f "$FW_L7_SO" ] && [ "$(grep -c fastwall_l7_terminate "$FW_L7_SO" 2>/dev/null)" -gt 0 ]
}
