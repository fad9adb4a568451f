#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Layer-7 egress engine benchmark: the same passthrough-TLS proxy (peek at
# the ClientHello's SNI, check it, splice the bytes to a fixed upstream)
# written for nginx's stream module (ssl_preread) and for HAProxy (TCP
# mode, req.ssl_sni), measured side by side with a direct path in one run.
# Prints figures and never judges them: the exit status is non-zero only
# when the benchmark itself breaks. docs/l7-engine.md reads its output.
#
# Three namespaces this script creates, addresses from documentation
# ranges, all of it removed on exit:
#
#   client 192.0.2.2 --- 192.0.2.1 proxy 198.51.100.1 --- 198.51.100.2 server
#
# The server is nginx serving TLS 1.3 (a test CA and leaf made here with
# openssl, EC P-256) with a small response (/small) and a large file
# (/large, L7_BULK_MB MiB). The proxy namespace routes, so "direct" is the
# client to the server through it in the kernel; "nginx" (192.0.2.1:8443)
# and "haproxy" (192.0.2.1:9443) terminate TCP there and connect to the
# server. Both allow the one name allowed.example (a map on
# $ssl_preread_server_name, use_backend on req.ssl_sni) and refuse any
# other (a closed port; a backend without servers). One worker or thread
# each.
#
#   conn     new TLS connections/s: wrk, one thread, L7_CONNS connections,
#            "Connection: close" on /small (a handshake per request), and
#            its p99 latency; the proxy's CPU time (utime+stime from
#            /proc) per connection
#   ka       requests/s and p99 latency on kept-alive connections (/small)
#   bulk     curl downloading /large: MB/s, and the proxy's CPU per MiB
#   rss      the proxy's RSS before and after L7_IDLE idle TLS connections
#            (handshake done, nothing sent) are held through it, per
#            connection
#   split    a real ClientHello (Python's ssl, SNI set) written in three
#            TCP segments with sleeps between them, cut inside the record
#            header and inside the server name: with the allowed name the
#            handshake must complete, with another name the proxy must
#            close before any byte of a ServerHello
#
# conn, ka and bulk run L7_ROUNDS rounds, the order of the three paths
# rotating each round; the table shows medians and the ratio to direct.
#
# Environment: BUILD (build), L7_ROUNDS (3), L7_SECONDS (5), L7_CONNS
# (32), L7_BULK_MB (512), L7_IDLE (2000), L7_NGX_BUF (unset: nginx's
# defaults, 16k; a size sets the stream server's preread_buffer_size and
# proxy_buffer_size, which must still hold a whole ClientHello). Output
# also goes to $BUILD/bench/l7engine.txt.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/bench-env.sh
. "$ROOT/scripts/bench-env.sh"

ROUNDS=${L7_ROUNDS:-3}
SECS=${L7_SECONDS:-5}
CONNS=${L7_CONNS:-32}
BULK_MB=${L7_BULK_MB:-512}
IDLE=${L7_IDLE:-2000}
NGX_BUF=${L7_NGX_BUF:-}
BUILD=${BUILD:-build}
case $BUILD in /*) OUT=$BUILD/bench ;; *) OUT=$ROOT/$BUILD/bench ;; esac
NGINX=/usr/sbin/nginx
HAPROXY=/usr/sbin/haproxy
STREAM_SO=/usr/lib/nginx/modules/ngx_stream_module.so
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

die() {
	echo "fatal: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "bench-l7engine.sh needs root (namespaces)"
for t in ip wrk curl openssl "$NGINX" "$HAPROXY" "$PY"; do
	command -v "$t" >/dev/null || die "$t not found: run scripts/install-deps.sh"
done
[ -f "$STREAM_SO" ] || die "$STREAM_SO missing (libnginx-mod-stream): run scripts/install-deps.sh"

ID=$(printf '%x%s' $$ "$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')")
NSC=l7c-$ID
NSP=l7p-$ID
NSS=l7s-$ID
T=$(mktemp -d "/tmp/l7engine-$ID.XXXXXX")
PIDS=()
NSS_MADE=()

cleanup() {
	local pid ns
	set +e
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	for ns in "${NSS_MADE[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
		rm -rf "/etc/netns/$ns"
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$OUT"
exec > >(tee "$OUT/l7engine.txt") 2>&1
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

in_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# --- topology ---------------------------------------------------------
for ns in "$NSC" "$NSP" "$NSS"; do
	ip netns add "$ns"
	NSS_MADE+=("$ns")
	in_ns "$ns" ip link set lo up
done
ip link add "c$ID" netns "$NSC" type veth peer name "pc$ID" netns "$NSP"
ip link add "s$ID" netns "$NSS" type veth peer name "ps$ID" netns "$NSP"
in_ns "$NSC" ip addr add 192.0.2.2/24 dev "c$ID"
in_ns "$NSC" ip link set "c$ID" up
in_ns "$NSC" ip route add default via 192.0.2.1
in_ns "$NSP" ip addr add 192.0.2.1/24 dev "pc$ID"
in_ns "$NSP" ip addr add 198.51.100.1/24 dev "ps$ID"
in_ns "$NSP" ip link set "pc$ID" up
in_ns "$NSP" ip link set "ps$ID" up
in_ns "$NSP" sysctl -qw net.ipv4.ip_forward=1
in_ns "$NSS" ip addr add 198.51.100.2/24 dev "s$ID"
in_ns "$NSS" ip link set "s$ID" up
in_ns "$NSS" ip route add default via 198.51.100.1
# the client's names (ip netns exec mounts this over /etc/hosts)
mkdir -p "/etc/netns/$NSC"
printf '198.51.100.2 direct.example\n192.0.2.1 allowed.example denied.example\n' >"/etc/netns/$NSC/hosts"

# --- certificates and content -----------------------------------------
chmod 0755 "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=l7bench-ca -keyout "$T/ca.key" -out "$T/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj /CN=allowed.example -keyout "$T/leaf.key" -out "$T/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:allowed.example,DNS:direct.example\n' >"$T/san.ext"
openssl x509 -req -in "$T/leaf.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
	-days 2 -extfile "$T/san.ext" -out "$T/leaf.crt" 2>/dev/null
mkdir -p "$T/www"
printf 'ok\n' >"$T/www/small"
truncate -s "${BULK_MB}M" "$T/www/large"
chmod -R a+rX "$T/www"

# --- server: nginx serving TLS ----------------------------------------
cat >"$T/server.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 16384;
pid $T/server.pid;
error_log $T/server.err warn;
events { worker_connections 8192; }
http {
	access_log off;
	client_body_temp_path $T/cbt;
	proxy_temp_path $T/pt;
	fastcgi_temp_path $T/ft;
	uwsgi_temp_path $T/ut;
	scgi_temp_path $T/st;
	keepalive_requests 1000000;
	default_type application/octet-stream;
	server {
		listen 198.51.100.2:443 ssl;
		ssl_certificate $T/leaf.crt;
		ssl_certificate_key $T/leaf.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $T/www;
		location = /small { return 200 "ok\n"; }
	}
}
EOF
ip netns exec "$NSS" "$NGINX" -e "$T/server.err" -c "$T/server.conf" -g 'daemon off;' &
PIDS+=($!)

# --- proxy 1: nginx stream, ssl_preread --------------------------------
cat >"$T/nginx-l7.conf" <<EOF
load_module $STREAM_SO;
worker_processes 1;
worker_rlimit_nofile 16384;
pid $T/nginx-l7.pid;
error_log $T/nginx-l7.err warn;
events { worker_connections 8192; }
stream {
	map \$ssl_preread_server_name \$l7_upstream {
		allowed.example 198.51.100.2:443;
		default 127.0.0.1:9; # closed: the connection is refused and dropped
	}
	server {
		listen 192.0.2.1:8443;
		ssl_preread on;
		preread_timeout 5s;
		proxy_connect_timeout 2s;
		proxy_pass \$l7_upstream;${NGX_BUF:+
		preread_buffer_size $NGX_BUF;
		proxy_buffer_size $NGX_BUF;}
	}
}
EOF
ip netns exec "$NSP" "$NGINX" -e "$T/nginx-l7.err" -c "$T/nginx-l7.conf" -g 'daemon off;' &
NGX_MASTER=$!
PIDS+=("$NGX_MASTER")

# --- proxy 2: HAProxy, TCP mode, req.ssl_sni --------------------------
cat >"$T/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn 8000
	log stderr format short local0 err
defaults
	mode tcp
	timeout connect 2s
	timeout client 300s
	timeout server 300s
frontend l7
	bind 192.0.2.1:9443
	tcp-request inspect-delay 5s
	tcp-request content accept if { req_ssl_hello_type 1 }
	use_backend allowed if { req.ssl_sni -i allowed.example }
	default_backend denied
backend allowed
	server origin 198.51.100.2:443
backend denied
EOF
"$HAPROXY" -c -q -f "$T/haproxy.cfg" || die "haproxy rejects its configuration"
ip netns exec "$NSP" "$HAPROXY" -db -f "$T/haproxy.cfg" 2>"$T/haproxy.err" &
HAP_PID=$!
PIDS+=("$HAP_PID")

# --- readiness ----------------------------------------------------------
ready() { # NAME PORT
	local i
	for i in $(seq 50); do
		in_ns "$NSC" curl -sf --max-time 2 --cacert "$T/ca.crt" -o /dev/null \
			"https://$1:$2/small" && return 0
		sleep 0.1
	done
	return 1
}
ready direct.example 443 || die "the TLS server does not answer ($(cat "$T/server.err" 2>/dev/null))"
ready allowed.example 8443 || die "nginx stream does not answer ($(cat "$T/nginx-l7.err" 2>/dev/null))"
ready allowed.example 9443 || die "haproxy does not answer ($(cat "$T/haproxy.err" 2>/dev/null))"
NGX_WORKER=$(pgrep -P "$NGX_MASTER" | head -n1)
{ [ -n "$NGX_WORKER" ] && grep -q '^nginx' "/proc/$NGX_WORKER/comm"; } || die "no nginx stream worker"
grep -q '^haproxy' "/proc/$HAP_PID/comm" || die "pid $HAP_PID is not haproxy"

# path -> client name, port, proxy pid (none for direct)
path_name() { case $1 in direct) echo direct.example ;; *) echo allowed.example ;; esac }
path_port() { case $1 in direct) echo 443 ;; nginx) echo 8443 ;; haproxy) echo 9443 ;; esac }
path_pid() { case $1 in nginx) echo "$NGX_WORKER" ;; haproxy) echo "$HAP_PID" ;; *) echo "" ;; esac }

# utime+stime of a process, in clock ticks (0 without a process)
cpu_ticks() {
	[ -n "$1" ] || {
		echo 0
		return
	}
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)

# wrk's latency to microseconds ("1.23ms" -> 1230)
to_us() {
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		if (u == "us") f = 1; else if (u == "ms") f = 1000; else if (u == "s") f = 1000000; else f = 1
		printf "%.0f", n * f }'
}

RES=$T/results # lines: PATH METRIC VALUE
run_wrk() {    # PATH KIND(conn|ka)
	local p=$1 kind=$2 name port pid t0 t1 out rps p99 reqs cpu hdr=()
	name=$(path_name "$p")
	port=$(path_port "$p")
	pid=$(path_pid "$p")
	[ "$kind" = conn ] && hdr=(-H 'Connection: close')
	t0=$(cpu_ticks "$pid")
	out=$(in_ns "$NSC" wrk -t1 -c"$CONNS" -d"${SECS}s" --latency "${hdr[@]}" \
		"https://$name:$port/small")
	t1=$(cpu_ticks "$pid")
	rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
	reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
	p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	if grep -q 'Socket errors\|Non-2xx' <<<"$out"; then
		echo "  $p $kind: $(grep 'Socket errors\|Non-2xx' <<<"$out" | tr -s ' ')"
	fi
	echo "$p ${kind}_rps $rps" >>"$RES"
	echo "$p ${kind}_p99_us $(to_us "$p99")" >>"$RES"
	cpu=
	if [ -n "$pid" ] && [ "${reqs:-0}" -gt 0 ]; then
		cpu=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$reqs" 'BEGIN { printf "%.2f", d / hz * 1e6 / n }')
		echo "$p ${kind}_cpu_us $cpu" >>"$RES"
	fi
	printf '  %-8s %-4s %10s req/s  p99 %s%s\n' "$p" "$kind" "$rps" "$p99" \
		"${cpu:+$(printf '%*s' $((8 - ${#p99})) '')  proxy CPU $cpu us/request}"
}

run_bulk() { # PATH
	local p=$1 name port pid t0 t1 bps mbps cpu
	name=$(path_name "$p")
	port=$(path_port "$p")
	pid=$(path_pid "$p")
	t0=$(cpu_ticks "$pid")
	bps=$(in_ns "$NSC" curl -sf --cacert "$T/ca.crt" -o /dev/null -w '%{speed_download}' \
		"https://$name:$port/large")
	t1=$(cpu_ticks "$pid")
	mbps=$(awk -v b="$bps" 'BEGIN { printf "%.1f", b / 1e6 }')
	echo "$p bulk_MBps $mbps" >>"$RES"
	cpu=
	if [ -n "$pid" ]; then
		cpu=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v m="$BULK_MB" 'BEGIN { printf "%.3f", d / hz * 1e3 / m }')
		echo "$p bulk_cpu_ms_per_MiB $cpu" >>"$RES"
	fi
	printf '  %-8s bulk %10s MB/s%s\n' "$p" "$mbps" "${cpu:+                proxy CPU $cpu ms/MiB}"
}

# --- the Python helper: idle holder and split ClientHello -------------
cat >"$T/l7probe.py" <<'EOF'
import socket, ssl, sys, time

def ctx(ca):
    c = ssl.create_default_context(cafile=ca)
    return c

def hold(host, port, name, n, ca):
    c = ctx(ca)
    conns = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=10)
        conns.append(c.wrap_socket(s, server_hostname=name))
    print("ready", len(conns), flush=True)
    time.sleep(600)

def split(host, port, name, ca):
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx(ca).wrap_bio(inc, out, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    at = hello.find(name.encode())
    if at < 0:
        print("no SNI in the ClientHello")
        return 2
    # three writes: inside the record header, inside the server name, the rest
    cuts = [0, 3, at + len(name) // 2, len(hello)]
    s = socket.create_connection((host, port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for a, b in zip(cuts, cuts[1:]):
        s.sendall(hello[a:b])
        time.sleep(0.3)
    got = 0
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            pending = out.read()
            if pending:
                s.sendall(pending)
            try:
                data = s.recv(65536)
            except (ConnectionResetError, socket.timeout) as e:
                print(f"refused ({type(e).__name__}, {got} bytes back)")
                return 1
            if not data:
                print(f"refused (closed, {got} bytes back)")
                return 1
            got += len(data)
            inc.write(data)
    pending = out.read()
    if pending:
        s.sendall(pending)
    print(f"handshake {obj.version()} with {obj.getpeercert()['subject']} ({len(hello)}-byte hello in {len(cuts) - 1} writes)")
    return 0

if sys.argv[1] == "hold":
    hold(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6])
else:
    sys.exit(split(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]))
EOF

bench_env "l7engine"
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), $("$HAPROXY" -v | head -n1 | cut -d' ' -f1-3), wrk -t1 -c$CONNS ${SECS}s, $ROUNDS rounds, bulk $BULK_MB MiB, $IDLE idle connections, nginx buffers ${NGX_BUF:-16k (default)}"

# --- split ClientHello, allowed and denied ------------------------------
echo
echo "split ClientHello (3 TCP writes, 0.3 s apart):"
for p in direct nginx haproxy; do
	for name in allowed.example denied.example; do
		[ "$p" = direct ] && [ "$name" = denied.example ] && continue
		host=$( [ "$p" = direct ] && echo 198.51.100.2 || echo 192.0.2.1)
		sni=$name
		[ "$p" = direct ] && sni=direct.example
		rc=0
		res=$(in_ns "$NSC" "$PY" "$T/l7probe.py" split "$host" "$(path_port "$p")" "$sni" "$T/ca.crt") || rc=$?
		want=0
		[ "$name" = denied.example ] && want=1
		verdict=ok
		[ "$rc" = "$want" ] || {
			verdict=WRONG
		}
		printf '  %-8s %-16s %-5s %s\n' "$p" "$sni" "$verdict" "$res"
		echo "$p split_${name%%.*} $verdict" >>"$RES"
	done
done

# --- conn, ka, bulk: rounds, rotating order -----------------------------
ORDER=(direct nginx haproxy)
for r in $(seq "$ROUNDS"); do
	echo
	echo "round $r:"
	for i in 0 1 2; do
		p=${ORDER[$(((i + r - 1) % 3))]}
		run_wrk "$p" conn
		run_wrk "$p" ka
		run_bulk "$p"
	done
done

# --- RSS per idle proxied connection -------------------------------------
echo
echo "RSS per idle TLS connection ($IDLE held through each proxy):"
for p in nginx haproxy; do
	pid=$(path_pid "$p")
	before=$(rss_kib "$pid")
	: >"$T/hold.out"
	ip netns exec "$NSC" "$PY" "$T/l7probe.py" hold 192.0.2.1 "$(path_port "$p")" allowed.example "$IDLE" "$T/ca.crt" >"$T/hold.out" 2>&1 &
	holder=$!
	PIDS+=("$holder")
	for _ in $(seq 1200); do
		grep -q '^ready' "$T/hold.out" && break
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.1
	done
	if grep -q '^ready' "$T/hold.out"; then
		sleep 1
		after=$(rss_kib "$pid")
		per=$(awk -v a="$after" -v b="$before" -v n="$IDLE" 'BEGIN { printf "%.1f", (a - b) / n }')
		printf '  %-8s %8s KiB -> %8s KiB: %s KiB per connection\n' "$p" "$before" "$after" "$per"
		echo "$p idle_rss_KiB $per" >>"$RES"
	else
		echo "  $p: the holder did not get its $IDLE connections: $(tail -n2 "$T/hold.out")"
	fi
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	sleep 1
done

# --- the table -----------------------------------------------------------
echo
echo "medians of $ROUNDS rounds; ratio = engine / direct"
"$PY" - "$RES" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    p, m, v = line.split()
    rows.setdefault(m, {}).setdefault(p, []).append(v)
labels = [
    ("conn_rps", "new TLS connections/s"),
    ("conn_p99_us", "p99 latency, new connection (us)"),
    ("conn_cpu_us", "proxy CPU per connection (us)"),
    ("ka_rps", "keep-alive requests/s"),
    ("ka_p99_us", "p99 latency, keep-alive (us)"),
    ("ka_cpu_us", "proxy CPU per keep-alive request (us)"),
    ("bulk_MBps", "bulk download (MB/s)"),
    ("bulk_cpu_ms_per_MiB", "proxy CPU per MiB (ms)"),
    ("idle_rss_KiB", "proxy RSS per idle connection (KiB)"),
    ("split_allowed", "split hello, allowed name"),
    ("split_denied", "split hello, denied name"),
]
def med(vals):
    try:
        return statistics.median(float(v) for v in vals)
    except ValueError:
        return vals[0]
def fmt(x):
    if isinstance(x, str):
        return x
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}"
print(f"{'':40}{'direct':>10}{'nginx':>10}{'haproxy':>10}{'ngx/dir':>9}{'hap/dir':>9}")
for key, label in labels:
    if key not in rows:
        continue
    m = {p: med(v) for p, v in rows[key].items()}
    cells = [fmt(m[p]) if p in m else "-" for p in ("direct", "nginx", "haproxy")]
    ratios = []
    for p in ("nginx", "haproxy"):
        d = m.get("direct")
        if isinstance(d, float) and isinstance(m.get(p), float) and d:
            ratios.append(f"{m[p] / d:.2f}")
        else:
            ratios.append("-")
    print(f"{label:40}{cells[0]:>10}{cells[1]:>10}{cells[2]:>10}{ratios[0]:>9}{ratios[1]:>9}")
EOF

