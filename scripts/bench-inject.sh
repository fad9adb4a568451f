#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Layer-7 credential injection benchmark (`make bench PARTS=I`, or alone
# after `make all`): what a sandbox's HTTPS costs when a proxy terminates
# it and sets a credential on each request, side by side in one run,
# rounds rotating, four ways:
#
#   direct    sandbox-d, "l7: off": the sandbox sends its own X-Api-Key
#             straight to the upstream (no proxy; the reference point)
#   mitm      sandbox-m to 10.42.0.1:18444: Debian's mitmproxy (mitmdump,
#             reverse mode to https://api.example.com, one process) with
#             scripts/inject_addon.py setting the header on matching
#             requests, the reference's engine; the upstream verified
#             against the test CA
#   limit     sandbox-n to 10.42.0.1:18445: a plain nginx (one worker)
#             terminating TLS (1.2 and 1.3, as fastwalld's proxy) with a
#             static certificate for the name,
#             adding a fixed header (proxy_set_header X-Api-Key) and
#             proxying over verified TLS with an upstream keepalive pool:
#             the most an injecting nginx can do
#   ours      sandbox-f, a subject of the actions protocol with a vault
#             pushed (a binding for api.example.com, X-Api-Key): pinned to
#             fastwalld's proxy, terminated with a leaf of fastwalld's CA
#             (the client trusts GET /l7/ca.crt), injected, proxied
#
# The end-to-end tests' topology (tests/e2e/lib.sh, lib/l7.sh,
# lib/credentials.sh): fastwalld on the pod bridge, a real nginx TLS
# upstream (api.example.com on 203.0.113.80, HTTP/2 and HTTP/1.1, a test
# CA), dnsmasq naming it. Measured per path, INJ_ROUNDS rounds:
#   conn     new TLS connections/s: wrk, one thread, INJ_CONNS
#            connections, "Connection: close" (a full handshake per
#            request); wrk's p50 and p99
#   ka       requests/s on kept-alive connections, p50 and p99
#   lat      one kept-alive connection, one request at a time: the
#            latency at a light load (p50, p99), mitm aside
#   h2       HTTP/2: h2load, INJ_H2_CONNS connections x INJ_H2_STREAMS
#            streams, INJ_H2_N requests (1,000 a connection: nginx's
#            default keepalive_requests, which fastwalld's proxy and the
#            limit keep), requests/s and mean time per request
# Then, ours only: the time from a vault push (POST /credential-vault
# with a new value) to the first request carrying the new value at the
# upstream, a kept-alive client requesting all along (INJ_PUSHES pushes).
#
# Ours is "not measured" (and the others still run) when fastwalld refuses
# `l7.credentials` or the module has no termination (no
# fastwall_l7_terminate in build/l7/ngx_fastwall_l7_module.so); mitm when
# mitmdump is not installed; h2 when h2load is not. Prints figures and
# ratios and never judges them: the exit status is non-zero only when the
# benchmark itself breaks. Environment: BUILD (build), FULL (1: 5 rounds),
# INJ_ROUNDS (3), INJ_SECONDS (5), INJ_CONNS (32), INJ_H2_CONNS (8),
# INJ_H2_STREAMS (16), INJ_H2_N (8,000), INJ_PUSHES (5); INJ_PERF=1 records
# the limit's and ours' proxies (and fastwalld) during each wrk and h2load
# run with perf into $BUILD/bench/inject-PATH-KIND.perf (perf report -i
# ... --no-children). The proxies' CPU per request (user + system) is
# printed beside the rates. Output also goes to $BUILD/bench/inject.txt.
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"

FULL=${FULL:-0}
ROUNDS=${INJ_ROUNDS:-$((FULL == 1 ? 5 : 3))}
SECS=${INJ_SECONDS:-5}
CONNS=${INJ_CONNS:-32}
H2_CONNS=${INJ_H2_CONNS:-8}
H2_STREAMS=${INJ_H2_STREAMS:-16}
# requests per h2load run: at most 1,000 a connection, nginx's default
# keepalive_requests (h2load does not reconnect after a GOAWAY)
H2_N=${INJ_H2_N:-$((H2_CONNS * 1000))}
PUSHES=${INJ_PUSHES:-5}
MITM_PORT=18444
LIMIT_PORT=18445
ADDON=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/inject_addon.py
case $BUILD in /*) OUT=$BUILD/bench ;; *) OUT=$FW_ROOT/$BUILD/bench ;; esac
# a value for the benchmark's binding (not a secret: the upstream logs it)
KEY=fw-bench-key-$FW_ID
FW_ACT_SOCK=$FW_TMP/vault.sock

SB_D=$(fw_sb_ns d)
SB_M=$(fw_sb_ns m)
SB_N=$(fw_sb_ns n)
SB_F=$(fw_sb_ns f)
bench_cleanup() {
	local ns
	fw_cleanup
	for ns in "$SB_D" "$SB_M" "$SB_N" "$SB_F" "$NS_POD"; do rm -rf "/etc/netns/$ns"; done
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ]; then
	echo "bench-inject.sh: skipped: nginx or nginx-dev is not installed"
	exit 77
fi
fw_require
chmod 0711 "$FW_TMP" # the proxy runs as nobody
for t in wrk openssl dig dnsmasq; do
	command -v "$t" >/dev/null || fw_die "$t not found: run scripts/install-deps.sh"
done
mkdir -p "$OUT"
exec > >(tee "$OUT/inject.txt") 2>&1

OURS=1
why=""
if ! make -s -C "$FW_ROOT" BUILD="$BUILD" "${FW_L7_MAKE:-l7proxy}" >/dev/null 2>&1 || [ ! -f "$FW_L7_SO" ]; then
	OURS=0
	why="the module does not build here (make ${FW_L7_MAKE:-l7proxy})"
elif ! fw_cred_has_terminate; then
	OURS=0
	why="the module has no termination (no fastwall_l7_terminate in $FW_L7_SO)"
fi
MITM=1
mitm_why=""
command -v mitmdump >/dev/null || { MITM=0; mitm_why="mitmdump is not installed (scripts/install-deps.sh)"; }
H2=1
command -v h2load >/dev/null || H2=0

fw_topology
fw_sandbox d 2
fw_sandbox m 3
fw_sandbox n 4
fw_sandbox f 5
FW_CRED_LOG_ALL=0 fw_cred_internet
fw_cred_resolver

# each sandbox's client names (ip netns exec mounts these over /etc/hosts):
# the upstream's address, or the gateway where mitm and limit listen; the
# pod's own for mitmdump's upstream name
for ns in "$SB_D" "$SB_F" "$NS_POD"; do
	mkdir -p "/etc/netns/$ns"
	printf '%s api.example.com\n' "$FW_L7_CDN4" >"/etc/netns/$ns/hosts"
done
for ns in "$SB_M" "$SB_N"; do
	mkdir -p "/etc/netns/$ns"
	printf '10.42.0.1 api.example.com\n' >"/etc/netns/$ns/hosts"
done

write_config() { # WITH-L7 (1 or 0)
	local l7="" off="" share=""
	if [ "$1" = 1 ]; then
		l7=$(fw_l7_yaml "credentials: on" "upstream_ca: $FW_L7_CA" \
			"max_connections: 16384" "subject_connections: 16384")
		off="    l7: off"
		share="  max_connections_per_subject: 16384"
	fi
	cat <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  local_ports: ["tcp/$MITM_PORT", "tcp/$LIMIT_PORT"]
dns:
  upstreams: [$FW_L7_UP4]
  timeout: 1
$share
metrics:
  listen: $FW_L7_METRICS
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_ACT_SOCK
  bind_host_veth: true
$l7
subjects:
EOF
	for s in "d 2" "m 3" "n 4"; do
		read -r l n <<<"$s"
		fw_subject_yaml "$l" "$n" v4
		[ -n "$off" ] && echo "$off"
		printf '    policy:\n      defaultAction: deny\n      egress:\n        - { action: allow, target: api.example.com }\n'
	done
}
if [ "$OURS" = 1 ]; then
	write_config 1 >"$FW_CFG"
	if ! "$FASTWALLD" -c "$FW_CFG" check >"$FW_TMP/check.out" 2>&1; then
		OURS=0
		why="fastwalld refuses the configuration: $(head -n1 "$FW_TMP/check.out")"
	fi
fi
[ "$OURS" = 1 ] || write_config 0 >"$FW_CFG"
fw_start_daemon || fw_die "fastwalld did not start"
if [ "$OURS" = 1 ] && ! fw_eventually 15 fw_l7_up; then
	OURS=0
	why="fastwalld's proxy did not come up (fastwall_l7_up 0)"
fi

VAULT=$FW_TMP/vault.json
fw_cred_vault "$KEY" api.example.com >"$VAULT"
POL='{"defaultAction":"deny","egress":[{"action":"allow","target":"api.example.com"}]}'
if [ "$OURS" = 1 ]; then
	NET_F=(--ip 10.42.0.5 --veth sb-f --gw 10.42.0.1 --cidr 10.42.0.0/24)
	fw_act SET_BINDING u-f "${NET_F[@]}" --input "$POL" --gen 1
	fw_act LIFECYCLE_HOOK u-f "${NET_F[@]}" --hook data-plane-ready --gen 1
	fw_act_req GET /l7/ca.crt
	if [ "$FW_ACT_CODE" != 200 ]; then
		OURS=0
		why="GET /l7/ca.crt answered $FW_ACT_CODE"
	else
		cp "$FW_TMP/act.body" "$FW_TMP/fw-ca.crt"
		fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-f' --data-binary "@$VAULT"
		[ "$FW_ACT_CODE" = 201 ] || { OURS=0; why="the vault push answered $FW_ACT_CODE $FW_ACT_BODY"; }
	fi
fi

# mitmproxy, one process, quiet (no flow output), its CA in its confdir
MITM_CA=$FW_TMP/mitm/mitmproxy-ca-cert.pem
if [ "$MITM" = 1 ]; then
	mkdir -p "$FW_TMP/mitm"
	ip netns exec "$NS_POD" mitmdump -q --mode "reverse:https://api.example.com:443" \
		--listen-host 10.42.0.1 --listen-port "$MITM_PORT" --set confdir="$FW_TMP/mitm" \
		--set keep_host_header=true --set ssl_verify_upstream_trusted_ca="$FW_L7_CA" \
		-s "$ADDON" --set inject_vault="$VAULT" >"$FW_TMP/mitm.log" 2>&1 &
	FW_PIDS+=($!)
fi

# the limit: plain nginx, one worker, a fixed header
cat >"$FW_TMP/limit.conf" <<EOF
user root;
worker_processes 1;
worker_rlimit_nofile 32768;
pid $FW_TMP/limit.pid;
error_log $FW_TMP/limit.err warn;
events { worker_connections 16384; }
http {
	access_log off;
	client_body_temp_path $FW_TMP/lcbt;
	proxy_temp_path $FW_TMP/lpt;
	fastcgi_temp_path $FW_TMP/lft;
	uwsgi_temp_path $FW_TMP/lut;
	scgi_temp_path $FW_TMP/lst;
	upstream origin {
		server $FW_L7_CDN4:443;
		keepalive 64;
	}
	server {
		listen 10.42.0.1:$LIMIT_PORT ssl http2;
		ssl_certificate $FW_L7_DIR/api.example.com.crt;
		ssl_certificate_key $FW_L7_DIR/api.example.com.key;
		# as fastwalld's proxy (nginx 1.22's default stops at TLS 1.2)
		ssl_protocols TLSv1.2 TLSv1.3;
		location / {
			proxy_pass https://origin;
			proxy_http_version 1.1;
			proxy_set_header Host \$host;
			proxy_set_header Connection "";
			proxy_set_header X-Api-Key "$KEY";
			proxy_ssl_server_name on;
			proxy_ssl_name api.example.com;
			proxy_ssl_verify on;
			proxy_ssl_verify_depth 8;
			proxy_ssl_trusted_certificate $FW_L7_CA;
			proxy_request_buffering off;
			proxy_buffering off;
		}
	}
}
EOF
fw_bg "$NS_POD" "$FW_NGINX" -e "$FW_TMP/limit.err" -c "$FW_TMP/limit.conf" -g 'daemon off;'

PATHS=(direct)
[ "$MITM" = 1 ] && PATHS+=(mitm)
PATHS+=(limit)
[ "$OURS" = 1 ] && PATHS+=(ours)
path_ns() { case $1 in direct) echo "$SB_D" ;; mitm) echo "$SB_M" ;; limit) echo "$SB_N" ;; ours) echo "$SB_F" ;; esac }
path_url() {
	case $1 in
	mitm) echo "https://api.example.com:$MITM_PORT" ;;
	limit) echo "https://api.example.com:$LIMIT_PORT" ;;
	*) echo "https://api.example.com" ;;
	esac
}
path_ca() { case $1 in mitm) echo "$MITM_CA" ;; ours) echo "$FW_TMP/fw-ca.crt" ;; *) echo "$FW_L7_CA" ;; esac }
# the direct sandbox holds its key and sends it; the others send none
path_hdr() { [ "$1" = direct ] && printf '%s\n' -H "X-Api-Key: $KEY"; }
in_ns() { # NS CMD...: with the namespace's /etc/hosts (ip netns exec)
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# a leased path's sandbox asks for the name again before each run, as a
# client would: the lease of a 30 s answer would end during the rounds
fresh() { # PATH
	case $1 in direct | ours) fw_l7_resolve "$(path_ns "$1")" api.example.com >/dev/null ;; esac
}

# every path answers, and the upstream sees the key on each
for ns in "$SB_D" "$SB_F"; do
	[ "$OURS" = 1 ] || [ "$ns" != "$SB_F" ] || continue
	[ "$(fw_l7_resolve "$ns" api.example.com)" = "$FW_L7_CDN4" ] || fw_die "$ns can't resolve api.example.com"
done
sees_key() { # PATH: the upstream's backend saw exactly the key
	local p=$1 hdr
	mapfile -t hdr < <(path_hdr "$p")
	in_ns "$(path_ns "$p")" curl -sf --max-time 3 --cacert "$(path_ca "$p")" "${hdr[@]}" \
		"$(path_url "$p")/echo" 2>/dev/null | grep -qF "\"x-api-key\": [\"$KEY\"]"
}
if [ "$MITM" = 1 ] && ! fw_eventually 30 sees_key mitm; then
	MITM=0
	mitm_why="mitmdump did not answer with the key: $(tail -n 3 "$FW_TMP/mitm.log" | tr '\n' ' ')"
	PATHS=("${PATHS[@]/mitm/}")
fi
if [ "$OURS" = 1 ] && ! fw_eventually 5 sees_key ours; then
	OURS=0
	why="fastwalld's proxy did not inject the key (GET /echo through it)"
	PATHS=("${PATHS[@]/ours/}")
fi
fw_eventually 5 sees_key limit || fw_die "the limit nginx does not inject: $(tail -n 3 "$FW_TMP/limit.err")"
sees_key direct || fw_die "the direct path does not reach the upstream"
mapfile -t PATHS < <(printf '%s\n' "${PATHS[@]}" | grep .)

to_us() { # wrk's "1.23ms" -> 1230
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		f = (u == "us") ? 1 : (u == "ms") ? 1000 : (u == "s") ? 1000000 : 1
		printf "%.0f", n * f }'
}

RES=$FW_TMP/results # lines: PATH METRIC VALUE
proxy_pids() {      # PATH: the proxy's processes (ours: and fastwalld)
	local m
	case $1 in
	limit) m=$(cat "$FW_TMP/limit.pid" 2>/dev/null) ;;
	ours) m=$(fw_l7_proxy_pids | head -n1) ;;
	mitm) pgrep -f "mitmdump.*$MITM_PORT" ;;
	esac
	[ -n "${m:-}" ] && echo "$m" && pgrep -P "$m"
	[ "$1" != ours ] || echo "$FW_DAEMON_PID"
}
cpu_ticks() { # PID...: their user + system clock ticks
	local p s=0 t
	for p in "$@"; do
		t=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null)
		s=$((s + ${t:-0}))
	done
	echo "$s"
}
HZ=$(getconf CLK_TCK)
# measure PATH KIND N T0 PIDS...: the CPU per request since T0 into RES
cpu_per_req() {
	local p=$1 kind=$2 n=$3 t0=$4 t1
	shift 4
	t1=$(cpu_ticks "$@")
	[ "${n:-0}" -gt 0 ] && [ "$#" -gt 0 ] &&
		echo "$p ${kind}_cpu_us $(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.1f", (b - a) * 1e6 / hz / n }')" >>"$RES"
	return 0
}
perf_start() { # PATH KIND PIDS...: a perf recording for SECS when INJ_PERF=1 (its pid)
	local p=$1 kind=$2
	shift 2
	[ "${INJ_PERF:-0}" = 1 ] && [ "$#" -gt 0 ] && [ "$p" != direct ] || return 0
	perf record -q -g -o "$OUT/inject-$p-$kind.perf" -p "$(
		IFS=,
		echo "$*"
	)" -- sleep "$SECS" >/dev/null 2>&1 &
	echo $!
}
run_wrk() { # PATH conn|ka|lat (lat: kept alive, one connection: the latency at a light load)
	local p=$1 kind=$2 out hdr=() pp=() t0 perf conns=$CONNS
	fresh "$p"
	mapfile -t hdr < <(path_hdr "$p")
	[ "$kind" = conn ] && hdr+=(-H 'Connection: close')
	[ "$kind" = lat ] && conns=1
	mapfile -t pp < <(proxy_pids "$p")
	t0=$(cpu_ticks "${pp[@]}")
	perf=$(perf_start "$p" "$kind" "${pp[@]}")
	out=$(in_ns "$(path_ns "$p")" wrk -t1 -c"$conns" -d"${SECS}s" --latency "${hdr[@]}" "$(path_url "$p")/")
	[ -n "$perf" ] && wait "$perf"
	cpu_per_req "$p" "$kind" "$(awk '/requests in/ { print $1 }' <<<"$out")" "$t0" "${pp[@]}"
	{
		echo "$p ${kind}_rps $(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
		echo "$p ${kind}_p50_us $(to_us "$(awk '$1 == "50%" { print $2 }' <<<"$out")")"
		echo "$p ${kind}_p99_us $(to_us "$(awk '$1 == "99%" { print $2 }' <<<"$out")")"
	} >>"$RES"
	grep -E 'Socket errors|Non-2xx' <<<"$out" | sed "s/^/  $p $kind: /" || true
	printf '  %-7s %-4s %10s req/s\n' "$p" "$kind" "$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
}
run_h2() { # PATH
	local p=$1 out hdr=() rps mean ok pp=() t0 perf
	fresh "$p"
	mapfile -t hdr < <(path_hdr "$p")
	mapfile -t pp < <(proxy_pids "$p")
	t0=$(cpu_ticks "${pp[@]}")
	perf=$(perf_start "$p" h2 "${pp[@]}")
	out=$(in_ns "$(path_ns "$p")" h2load -c "$H2_CONNS" -m "$H2_STREAMS" -n "$H2_N" "${hdr[@]}" \
		"$(path_url "$p")/" 2>&1)
	[ -n "$perf" ] && wait "$perf"
	rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
	ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<<"$out")
	cpu_per_req "$p" h2 "$ok" "$t0" "${pp[@]}"
	mean=$(awk '$1 == "time" && $3 == "request:" { print $6 }' <<<"$out")
	echo "$p h2_rps ${rps:-0}" >>"$RES"
	[ -n "$mean" ] && echo "$p h2_mean_us $(to_us "$mean")" >>"$RES"
	printf '  %-7s h2   %10s req/s (%s succeeded)\n' "$p" "${rps:-0}" "${ok:-0}"
	[ -n "$rps" ] || tail -n 5 <<<"$out" | sed 's/^/    h2load: /'
}

# ours: push -> the first request with the new value at the upstream
run_push() { # I
	local i=$1 v t0 t1 first wpid ms ans
	v=$KEY-push-$i
	fresh ours
	in_ns "$SB_F" wrk -t1 -c1 -d3s --latency "https://api.example.com/seen" >/dev/null 2>&1 &
	wpid=$!
	sleep 1
	fw_cred_vault "$v" api.example.com >"$FW_TMP/vault.push"
	t0=$(date +%s.%N)
	fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-f' --data-binary "@$FW_TMP/vault.push"
	t1=$(date +%s.%N)
	wait "$wpid"
	first=$(grep -F "key=\"$v\"" "$FW_L7_ACCESS" | sed -n 's/.* t=\([0-9.]*\) .*/\1/p' | sort -n | head -n1)
	if [[ $FW_ACT_CODE != 20[01] ]] || [ -z "$first" ]; then
		printf '  push %d: answered %s, the new value %s\n' "$i" "$FW_ACT_CODE" \
			"$([ -n "$first" ] && echo arrived || echo never arrived)"
		return 0
	fi
	ms=$(awk -v a="$t0" -v f="$first" 'BEGIN { printf "%.3f", (f - a) * 1000 }')
	ans=$(awk -v b="$t1" -v f="$first" 'BEGIN { printf "%+.3f", (f - b) * 1000 }')
	printf 'ours push_ms %s\nours push_answered_ms %s\n' "$ms" "$ans" >>"$RES"
	printf '  push %d: the first request with the new value %s ms after the push was sent, %s ms after its answer\n' \
		"$i" "$ms" "$ans"
}

bench_env "l7 credential injection"
echo "nginx $("$FW_NGINX" -v 2>&1 | sed 's/.*nginx\///'), mitmproxy $(mitmdump --version 2>/dev/null | sed -n 's/^Mitmproxy: //p'), wrk -t1 -c$CONNS ${SECS}s, h2load -c$H2_CONNS -m$H2_STREAMS -n$H2_N, $ROUNDS rounds"
[ "$OURS" = 1 ] || echo "ours: not measured: $why"
[ "$MITM" = 1 ] || echo "mitm: not measured: $mitm_why"
[ "$H2" = 1 ] || echo "h2: not measured: h2load is not installed (nghttp2-client)"

for r in $(seq "$ROUNDS"); do
	echo
	echo "round $r:"
	for i in "${!PATHS[@]}"; do
		p=${PATHS[$(((i + r - 1) % ${#PATHS[@]}))]}
		run_wrk "$p" conn
		run_wrk "$p" ka
		[ "$p" = mitm ] || run_wrk "$p" lat
		[ "$H2" = 1 ] && run_h2 "$p"
	done
done
if [ "$OURS" = 1 ]; then
	echo
	echo "vault push -> first request carrying the new value (a kept-alive client requesting all along):"
	for i in $(seq "$PUSHES"); do run_push "$i"; done
fi

echo
echo "medians of $ROUNDS rounds; of the rates, ours / mitm (target >= 10x) and ours / limit (target >= 0.8x)"
"$FW_PY" - "$RES" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) == 3:
        try:
            rows.setdefault(w[1], {}).setdefault(w[0], []).append(float(w[2]))
        except ValueError:
            pass
labels = [
    ("conn_rps", "new TLS connections/s", True),
    ("conn_p50_us", "p50, new connection (us)", False),
    ("conn_p99_us", "p99, new connection (us)", False),
    ("conn_cpu_us", "proxy CPU per new connection (us)", False),
    ("ka_rps", "keep-alive requests/s", True),
    ("ka_p50_us", "p50, keep-alive (us)", False),
    ("ka_p99_us", "p99, keep-alive (us)", False),
    ("ka_cpu_us", "proxy CPU per kept-alive request (us)", False),
    ("lat_rps", "one kept-alive connection: requests/s", True),
    ("lat_p50_us", "one connection: p50 (us)", False),
    ("lat_p99_us", "one connection: p99 (us)", False),
    ("h2_rps", "HTTP/2 requests/s", True),
    ("h2_mean_us", "HTTP/2 mean per request (us)", False),
    ("h2_cpu_us", "proxy CPU per HTTP/2 request (us)", False),
    ("push_ms", "push -> first injected request (ms)", None),
    ("push_answered_ms", "push answered -> first request (ms)", None),
]
paths = ["direct", "mitm", "limit", "ours"]
def fmt(x):
    return "-" if x is None else (f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}")
print(f"{'':38}" + "".join(f"{p:>10}" for p in paths) + f"{'ours/mitm':>11}{'ours/limit':>11}")
for key, label, rate in labels:
    if key not in rows:
        continue
    m = {p: statistics.median(v) for p, v in rows[key].items()}
    cells = "".join(f"{fmt(m.get(p)):>10}" for p in paths)
    extra = ""
    for q in ("mitm", "limit"):
        o, v = m.get("ours"), m.get(q)
        if not rate or o is None or not v:
            extra += f"{'':>11}"
        else:
            extra += f"{'x%.2f' % (o / v):>11}"
    print(f"{label:38}{cells}{extra}")
for key in ("push_ms",):
    v = rows.get(key, {}).get("ours")
    if v:
        print(f"push -> first injected request: median {statistics.median(v):.2f} ms, "
              f"min {min(v):.2f}, max {max(v):.2f} over {len(v)} pushes")
EOF
