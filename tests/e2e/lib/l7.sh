# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# shellcheck disable=SC2034 # names for the scripts that source this
# Part of lib.sh.
# --- layer-7 pinning (l7.sh, l7-process.sh, scripts/bench-l7.sh) ----------
# The internet's side: a test CA and a leaf per name (openssl), a real
# nginx serving TLS and HTTP for several names on ONE shared address (a
# CDN) and one name on a second address, the resolver that names them,
# and a capture of what arrives from the pod (l7tool.py capture), so a
# check can say what reached the far side, not only what the client saw.
#
#   api.example.com    A 203.0.113.80  AAAA 2001:db8::80   the shared address
#   other.example.com  A 203.0.113.80                      another tenant of it
#   evil.example.net   A 203.0.113.81                      the second address
#
# Each name's server answers "NAME" (its own body) with its own
# certificate; a name the server does not know gets 421 and a default
# certificate. The server's access log ($FW_L7_ACCESS) has one line per
# request: "REMOTE LOCAL:PORT sni=SNI host=HOST "REQUEST" STATUS".

FW_L7_SO=$FW_BUILD/l7/ngx_fastwall_l7_module.so
FW_L7_TOOL=$FW_E2E_DIR/l7tool.py
FW_L7_CDN4=203.0.113.80
FW_L7_CDN6=2001:db8::80
FW_L7_EVIL4=203.0.113.81
FW_L7_UP4=198.51.100.53
FW_L7_DIR=$FW_TMP/l7
FW_L7_CA=$FW_L7_DIR/ca.crt
FW_L7_ACCESS=$FW_L7_DIR/access.log
FW_L7_CAP=$FW_L7_DIR/capture.txt
FW_L7_NAMES="api.example.com other.example.com evil.example.net"

# fw_l7_require NAME: the test NAME is skipped (exit 77) when this machine
# cannot build the proxy module (no nginx or nginx-dev); otherwise what
# fw_require checks, the tools the tests use, and the module built by
# make (FW_L7_MAKE, default l7proxy), which must then exist. The proxy
# runs as nobody: this run's directory becomes traversable (0711).
fw_l7_require() {
	local t
	if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ]; then
		echo "$1: skipped: nginx or nginx-dev is not installed (scripts/install-deps.sh installs both)"
		exit 77
	fi
	fw_require
	chmod 0711 "$FW_TMP"
	for t in openssl dig dnsmasq; do
		command -v "$t" >/dev/null || fw_die "$t not found: run scripts/install-deps.sh"
	done
	# FW_L7_OLD=1: the cases against a fastwalld without pinning (no l7
	# section), to see them fail on a build that has none
	[ "${FW_L7_OLD:-0}" = 1 ] && return 0
	make -s -C "$FW_ROOT" BUILD="$BUILD" "${FW_L7_MAKE:-l7proxy}" >/dev/null ||
		fw_die "make ${FW_L7_MAKE:-l7proxy} failed: the layer-7 module does not build"
	[ -f "$FW_L7_SO" ] || fw_die "$FW_L7_SO missing after make ${FW_L7_MAKE:-l7proxy}"
}

# fw_l7_certs: the CA and one leaf per name (and a default one) in
# $FW_L7_DIR, EC P-256, valid two days.
fw_l7_certs() {
	local n
	mkdir -p "$FW_L7_DIR"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=fastwall-l7-test-ca -keyout "$FW_L7_DIR/ca.key" -out "$FW_L7_CA" 2>/dev/null ||
		fw_die "openssl: can't make the test CA"
	for n in $FW_L7_NAMES default.invalid; do
		printf 'subjectAltName=DNS:%s\n' "$n" >"$FW_L7_DIR/$n.ext"
		if ! openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" \
			-keyout "$FW_L7_DIR/$n.key" -out "$FW_L7_DIR/$n.csr" 2>/dev/null ||
			! openssl x509 -req -in "$FW_L7_DIR/$n.csr" -CA "$FW_L7_CA" -CAkey "$FW_L7_DIR/ca.key" \
				-CAcreateserial -days 2 -extfile "$FW_L7_DIR/$n.ext" -out "$FW_L7_DIR/$n.crt" 2>/dev/null; then
			fw_die "openssl: can't make the certificate of $n"
		fi
	done
}

# fw_l7_server_conf: the internet's nginx (TLS on 443 and HTTP on 80 of
# the shared and the second address), on stdout. L7_SERVER_CONNS sets
# worker_connections (the benchmark holds thousands).
fw_l7_server_conf() {
	local d=$FW_L7_DIR n listens
	listens="listen $FW_L7_CDN4:443 ssl; listen [$FW_L7_CDN6]:443 ssl; listen $FW_L7_EVIL4:443 ssl;
		listen $FW_L7_CDN4:80; listen [$FW_L7_CDN6]:80; listen $FW_L7_EVIL4:80;"
	cat <<EOF
user root;
worker_processes 1;
worker_rlimit_nofile $((${L7_SERVER_CONNS:-4096} * 2 + 64));
pid $d/server.pid;
error_log $d/server.err info;
events { worker_connections ${L7_SERVER_CONNS:-4096}; }
http {
	log_format l7 '\$remote_addr \$server_addr:\$server_port sni=\$ssl_server_name host=\$host "\$request" \$status';
	access_log $FW_L7_ACCESS l7;
	client_body_temp_path $d/cbt;
	proxy_temp_path $d/pt;
	fastcgi_temp_path $d/ft;
	uwsgi_temp_path $d/ut;
	scgi_temp_path $d/st;
	keepalive_requests 1000000;
	ssl_protocols TLSv1.2 TLSv1.3;
	default_type text/plain;
	server {
		listen $FW_L7_CDN4:443 ssl default_server; listen [$FW_L7_CDN6]:443 ssl default_server;
		listen $FW_L7_EVIL4:443 ssl default_server;
		listen $FW_L7_CDN4:80 default_server; listen [$FW_L7_CDN6]:80 default_server;
		listen $FW_L7_EVIL4:80 default_server;
		server_name _;
		ssl_certificate $d/default.invalid.crt;
		ssl_certificate_key $d/default.invalid.key;
		return 421 "misdirected\n";
	}
EOF
	for n in $FW_L7_NAMES; do
		cat <<EOF
	server {
		$listens
		server_name $n;
		ssl_certificate $d/$n.crt;
		ssl_certificate_key $d/$n.key;
		location / { return 200 "${n%%.*}\n"; }
		location = /large { root $d/www; }
	}
EOF
	done
	echo "}"
}

# fw_l7_internet: the addresses, certificates and nginx of the internet
# side; returns once every name answers over TLS and HTTP from inside the
# internet namespace itself.
fw_l7_internet() {
	local n a
	ip -n "$NS_INET" addr add "$FW_L7_CDN4/32" dev lo
	ip -n "$NS_INET" addr add "$FW_L7_EVIL4/32" dev lo
	ip -n "$NS_INET" addr add "$FW_L7_CDN6/128" dev lo nodad
	fw_l7_certs
	mkdir -p "$FW_L7_DIR/www"
	[ -n "${L7_BULK_MB:-}" ] && truncate -s "${L7_BULK_MB}M" "$FW_L7_DIR/www/large"
	fw_l7_server_conf >"$FW_L7_DIR/server.conf"
	fw_bg "$NS_INET" "$FW_NGINX" -e "$FW_L7_DIR/server.err" -c "$FW_L7_DIR/server.conf" -g 'daemon off;'
	for n in $FW_L7_NAMES; do
		a=$FW_L7_CDN4
		[ "$n" = evil.example.net ] && a=$FW_L7_EVIL4
		fw_eventually 5 fw_ns "$NS_INET" curl -sf --max-time 2 --cacert "$FW_L7_CA" -o /dev/null \
			--resolve "$n:443:$a" "https://$n/" ||
			fw_die "the TLS server does not answer $n: $(tail -3 "$FW_L7_DIR/server.err")"
	done
}

# fw_l7_resolver: dnsmasq on $FW_L7_UP4 answering the three names.
fw_l7_resolver() {
	fw_resolver "$FW_L7_UP4" "api.example.com,$FW_L7_CDN4,$FW_L7_CDN6,30" \
		"other.example.com,$FW_L7_CDN4,30" "evil.example.net,$FW_L7_EVIL4,30"
}

# fw_l7_capture: what arrives on the internet's eth0 from the pod, one
# line per packet in $FW_L7_CAP (see l7tool.py capture).
fw_l7_capture() {
	: >"$FW_L7_CAP"
	fw_bg_ready "$NS_INET" "$FW_L7_DIR/capture.ready" "$FW_PY" "$FW_L7_TOOL" capture \
		--iface eth0 --out "$FW_L7_CAP"
}

# fw_l7_mark: where the capture and the access log are now (for
# fw_l7_since); a check marks before its traffic.
fw_l7_mark() {
	L7_MARK_CAP=$(wc -l <"$FW_L7_CAP")
	L7_MARK_LOG=$(wc -l <"$FW_L7_ACCESS" 2>/dev/null || echo 0)
}
# captured packets and access-log lines since the mark
fw_l7_cap_since() { tail -n +"$((L7_MARK_CAP + 1))" "$FW_L7_CAP"; }
fw_l7_log_since() { tail -n +"$((L7_MARK_LOG + 1))" "$FW_L7_ACCESS" 2>/dev/null; }

# fw_l7_nothing_arrived [DST] [PORT]: no TCP SYN or UDP datagram to DST
# (any address) PORT (443 and 80) since the mark, and no request in the
# server's log; prints what did arrive.
fw_l7_nothing_arrived() {
	local dst=${1:-} port=${2:-} hits
	sleep "${L7_SETTLE:-0.3}" # a packet on its way is still counted
	hits=$(fw_l7_cap_since | awk -v d="$dst" -v p="$port" '
		(d == "" || $4 == d) && (p == "" ? ($5 == 443 || $5 == 80) : $5 == p) &&
		(($1 == "tcp" && $6 ~ /S/) || $1 == "udp")')
	if [ -n "$hits" ] || [ -n "$(fw_l7_log_since)" ]; then
		echo "arrived on the far side: ${hits:-no packet}"
		fw_l7_log_since | sed 's/^/server log: /'
		return 1
	fi
}

# fw_l7_server_saw PATTERN: a line of the server's log since the mark
# matches the extended regex PATTERN (the access log is written when the
# request ends: waits up to 2 s).
fw_l7_log_has() { fw_l7_log_since | grep -qE -- "$1"; }
fw_l7_server_saw() {
	fw_eventually 2 fw_l7_log_has "$1" && return 0
	echo "the server's log since the mark:"
	fw_l7_log_since
	return 1
}

# fw_l7_wire_sni NAME: a ClientHello with server name NAME arrived since
# the mark (from the proxy or from the sandbox).
fw_l7_wire_sni() {
	fw_l7_cap_since | grep -q " sni=$1\$" && return 0
	echo "no ClientHello for $1 on the wire since the mark:"
	fw_l7_cap_since | grep ' sni=' | head -5
	return 1
}

# fw_l7_yaml [KEY: VALUE...]: the daemon configuration's l7 section
# enabling the proxy with this build's module, a runtime directory and a
# CA directory of this run's, and the extra keys given.
fw_l7_yaml() {
	local kv
	[ "${FW_L7_OLD:-0}" = 1 ] && return 0
	printf 'l7:\n  enabled: true\n  module: %s\n  runtime_dir: %s\n  ca:\n    dir: %s\n' \
		"$FW_L7_SO" "$FW_TMP/l7run" "$FW_TMP/l7-ca"
	for kv in "$@"; do printf '  %s\n' "$kv"; done
}

# fw_l7_resolve NS NAME [TYPE]: the sandbox resolves NAME through
# fastwalld's DNS proxy (the gateway; the data plane redirects it) and
# prints the first address of the answer.
fw_l7_resolve() {
	fw_ns "$1" dig +short +time=2 +tries=1 @10.42.0.1 "${3:-A}" "$2" 2>/dev/null | head -n1
}

# fw_l7_curl NS NAME ADDR [CURL ARGS...]: curl https://NAME/ with NAME
# pinned to ADDR (--resolve; the sandbox resolved through the proxy
# before), the test CA trusted; prints "STATUS BODY" (000 on failure).
fw_l7_curl() {
	local ns=$1 name=$2 addr=$3 body code r=$3
	shift 3
	case $addr in *:*) r="[$addr]" ;; esac
	body=$(fw_ns "$ns" curl -s --cacert "$FW_L7_CA" --connect-timeout 2 --max-time 4 \
		--resolve "$name:${L7_PORT:-443}:$r" -w '\n%{http_code}' "$@" \
		"${L7_SCHEME:-https}://$name:${L7_PORT:-443}/" 2>/dev/null) || true
	code=${body##*$'\n'}
	body=${body%$'\n'*}
	echo "${code:-000} ${body%%$'\n'*}"
}
fw_l7_http() { L7_SCHEME=http L7_PORT=80 fw_l7_curl "$@"; }

# fw_l7_metric NAME{LABELS}: a sample of fastwalld's metrics (listening
# on $FW_L7_METRICS in the pod), 0 when absent.
FW_L7_METRICS=127.0.0.1:19464
fw_l7_metric() {
	fw_ns "$NS_POD" curl -s --max-time 3 "http://$FW_L7_METRICS/metrics" |
		awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}

# fw_l7_up: fastwalld's proxy accepts (fastwall_l7_up 1)
fw_l7_up() { [ "$(fw_l7_metric fastwall_l7_up)" = 1 ]; }

# fw_l7_proxy_pids: fastwalld's proxy, the nginx master (a child of
# fastwalld) first, then its workers.
fw_l7_proxy_pids() {
	local m
	for m in $(pgrep -P "$FW_DAEMON_PID" 2>/dev/null); do
		grep -q '^nginx' "/proc/$m/comm" 2>/dev/null || continue
		echo "$m"
		pgrep -P "$m"
	done
}

# fw_l7_subject_off: a subject's "l7: off" line (none under FW_L7_OLD=1)
fw_l7_subject_off() { [ "${FW_L7_OLD:-0}" = 1 ] || echo "    l7: off"; }

# fw_l7_sum NAME [REASON]: the sum of the samples of metric NAME (with
# any labels) whose labels hold reason="REASON"
fw_l7_sum() {
	fw_ns "$NS_POD" curl -s --max-time 3 "http://$FW_L7_METRICS/metrics" |
		awk -v m="$1" -v r="${2:+reason=\"$2\"}" '
			($1 == m || index($1, m "{") == 1) && (r == "" || index($1, r)) { v += $NF }
			END { print v + 0 }'
}

# fw_l7_has_line FILE WORD...: a line of FILE holds every WORD
fw_l7_has_line() {
	local f=$1 w lines
	shift
	lines=$(cat "$f" 2>/dev/null) || return 1
	for w in "$@"; do
		lines=$(grep -F -- "$w" <<<"$lines") || return 1
	done
}
