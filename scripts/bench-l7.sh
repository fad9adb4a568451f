#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Layer-7 pinning benchmark (`make bench PARTS=L`, or alone after `make
# all`): what sending a sandbox's TLS through fastwalld's proxy costs,
# side by side in one run with the same traffic not pinned and through
# nginx's plain ssl_preread stream proxy, which checks nothing (the limit
# a pinning proxy built on it can reach). Prints figures and ratios and
# never judges them: the exit status is non-zero only when the benchmark
# itself breaks.
#
# The end-to-end tests' topology (tests/e2e/lib.sh, lib/l7.sh): fastwalld
# on the pod bridge, a real nginx TLS server in the simulated internet
# (api.example.com on 203.0.113.80, a test CA), dnsmasq naming it. Three
# sandboxes, each allowed api.example.com and having resolved it through
# fastwalld's DNS proxy, one per path:
#
#   direct    sandbox-o, "l7: off": fastwalld on, the connection not pinned
#   pinned    sandbox-p: the TC redirect to fastwalld's proxy, the SNI
#             checked against the names that taught the address
#   preread   sandbox-q to 10.42.0.1:18443 (opened by datapath.local_ports),
#             a plain nginx in the pod: ssl_preread and a map from the
#             server name to 203.0.113.80:443, no check of fastwall's
#
# Both proxies run one worker. Measured per path, L7_ROUNDS rounds, the
# order rotating each round, medians:
#   conn     new TLS connections/s: wrk, one thread, L7_CONNS connections,
#            "Connection: close" (a full handshake per request), and wrk's
#            p50 and p99 latency, and the CPU time per request of the proxy
#            (master and workers) and of fastwalld (/proc/PID/stat)
#   ka       requests/s on kept-alive connections
#   lat      connect + handshake, one connection after another
#            (l7tool.py connlat, L7_LAT_N of them): p50, p99; the table
#            shows what each proxy adds to direct
#   bulk     curl of L7_BULK_MB MiB: one stream, and L7_STREAMS at once
#            (MB/s over the wall time of all of them)
# Then, once per proxy: the proxy's RSS (master and workers) before and
# with L7_IDLE idle TLS connections held through it (handshake done,
# nothing sent; L7_IDLE_PROCS holders), and per connection.
#
# Without a build that pins (fastwalld refuses the l7 section, or the
# module does not build) the pinned path is reported as not measured and
# the other two still run. Environment: BUILD (build), L7_ROUNDS (3; FULL
# 5), L7_SECONDS (5), L7_CONNS (32), L7_LAT_N (500), L7_BULK_MB (256),
# L7_STREAMS (4), L7_IDLE (10000), L7_IDLE_PROCS (4), L7_NOFILE (65536);
# L7_PERF=1 records the proxies' and fastwalld's new-connection runs with
# perf into $BUILD/bench/l7-PATH.perf (perf report -i ... --no-children).
# Output also goes to $BUILD/bench/l7.txt.
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"

FULL=${FULL:-0}
ROUNDS=${L7_ROUNDS:-$((FULL == 1 ? 5 : 3))}
SECS=${L7_SECONDS:-5}
CONNS=${L7_CONNS:-32}
LAT_N=${L7_LAT_N:-500}
export L7_BULK_MB=${L7_BULK_MB:-256}
STREAMS=${L7_STREAMS:-4}
IDLE=${L7_IDLE:-10000}
IDLE_PROCS=${L7_IDLE_PROCS:-4}
NOFILE=${L7_NOFILE:-65536}
export L7_SERVER_CONNS=$((IDLE * 2 + 4096))
STREAM_SO=/usr/lib/nginx/modules/ngx_stream_module.so
PLAIN_PORT=18443
case $BUILD in /*) OUT=$BUILD/bench ;; *) OUT=$FW_ROOT/$BUILD/bench ;; esac

SB_O=$(fw_sb_ns o)
SB_P=$(fw_sb_ns p)
SB_Q=$(fw_sb_ns q)
bench_cleanup() {
	local ns
	fw_cleanup
	for ns in "$SB_O" "$SB_P" "$SB_Q"; do rm -rf "/etc/netns/$ns"; done
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ]; then
	echo "bench-l7.sh: skipped: nginx or nginx-dev is not installed"
	exit 77
fi
fw_require
chmod 0711 "$FW_TMP" # the proxy runs as nobody
for t in wrk openssl dig dnsmasq; do
	command -v "$t" >/dev/null || fw_die "$t not found: run scripts/install-deps.sh"
done
[ -f "$STREAM_SO" ] || fw_die "$STREAM_SO missing (libnginx-mod-stream)"
# descriptors: two per proxied connection, for the holders and the servers
ulimit -Hn "$NOFILE" 2>/dev/null || true
ulimit -n "$NOFILE" 2>/dev/null || true

mkdir -p "$OUT"
exec > >(tee "$OUT/l7.txt") 2>&1

PINNED=1
why=""
if ! make -s -C "$FW_ROOT" BUILD="$BUILD" "${FW_L7_MAKE:-l7proxy}" >/dev/null 2>&1 || [ ! -f "$FW_L7_SO" ]; then
	PINNED=0
	why="the module does not build here (make ${FW_L7_MAKE:-l7proxy})"
fi

fw_topology
fw_sandbox o 2
fw_sandbox p 3
fw_sandbox q 4
fw_l7_internet
fw_l7_resolver

# the names of each sandbox's client (ip netns exec mounts these over
# /etc/hosts): the server's address, or the plain proxy's for sandbox-q
for ns in "$SB_O" "$SB_P"; do
	mkdir -p "/etc/netns/$ns"
	printf '%s api.example.com\n' "$FW_L7_CDN4" >"/etc/netns/$ns/hosts"
done
mkdir -p "/etc/netns/$SB_Q"
printf '10.42.0.1 api.example.com\n' >"/etc/netns/$SB_Q/hosts"

write_config() { # WITH-L7 (1 or 0)
	local l7="" off="" share=""
	if [ "$1" = 1 ]; then
		l7=$(fw_l7_yaml "max_connections: $((IDLE + 4096))" "subject_connections: $((IDLE + 4096))")
		off="    l7: off"
		# one sandbox holds all the idle connections: its share of the
		# data plane's table (default 1,024 open) must take them
		share="  max_connections_per_subject: $((IDLE + 4096))"
	fi
	cat <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  local_ports: ["tcp/$PLAIN_PORT"]
dns:
  upstreams: [$FW_L7_UP4]
  timeout: 1
$share
metrics:
  listen: $FW_L7_METRICS
$l7
subjects:
EOF
	for s in "o 2" "p 3" "q 4"; do
		read -r l n <<<"$s"
		fw_subject_yaml "$l" "$n" v4
		[ "$l" != p ] && [ -n "$off" ] && echo "$off"
		printf '    policy:\n      defaultAction: deny\n      egress:\n        - { action: allow, target: api.example.com }\n'
	done
}
if [ "$PINNED" = 1 ]; then
	write_config 1 >"$FW_CFG"
	if ! "$FASTWALLD" -c "$FW_CFG" check >"$FW_TMP/check.out" 2>&1; then
		PINNED=0
		why="fastwalld refuses the l7 section: $(head -n1 "$FW_TMP/check.out")"
	fi
fi
[ "$PINNED" = 1 ] || write_config 0 >"$FW_CFG"
fw_start_daemon || fw_die "fastwalld did not start"
if [ "$PINNED" = 1 ] && ! fw_eventually 15 fw_l7_up; then
	PINNED=0
	why="fastwalld's proxy did not come up (fastwall_l7_up 0)"
fi

# the plain ssl_preread proxy on the gateway, one worker
cat >"$FW_TMP/plain.conf" <<EOF
load_module $STREAM_SO;
user root;
worker_processes 1;
worker_rlimit_nofile $((IDLE * 2 + 4096));
pid $FW_TMP/plain.pid;
error_log $FW_TMP/plain.err warn;
events { worker_connections $((IDLE * 2 + 2048)); }
stream {
	map \$ssl_preread_server_name \$l7_upstream {
		api.example.com $FW_L7_CDN4:443;
		default 127.0.0.1:9;
	}
	server {
		listen 10.42.0.1:$PLAIN_PORT;
		ssl_preread on;
		proxy_pass \$l7_upstream;
	}
}
EOF
nsenter --net="/run/netns/$NS_POD" "$FW_NGINX" -e "$FW_TMP/plain.err" -c "$FW_TMP/plain.conf" -g 'daemon off;' &
PLAIN_MASTER=$!
FW_PIDS+=("$PLAIN_MASTER")

for ns in "$SB_O" "$SB_P" "$SB_Q"; do
	[ "$(fw_l7_resolve "$ns" api.example.com)" = "$FW_L7_CDN4" ] || fw_die "$ns can't resolve api.example.com"
done

PATHS=(direct preread)
[ "$PINNED" = 1 ] && PATHS=(direct pinned preread)
path_ns() { case $1 in direct) echo "$SB_O" ;; pinned) echo "$SB_P" ;; preread) echo "$SB_Q" ;; esac }
path_url() { case $1 in preread) echo "https://api.example.com:$PLAIN_PORT" ;; *) echo "https://api.example.com" ;; esac }
path_addr() { case $1 in preread) echo 10.42.0.1 ;; *) echo "$FW_L7_CDN4" ;; esac }
path_port() { case $1 in preread) echo "$PLAIN_PORT" ;; *) echo 443 ;; esac }
proxy_pids() { # PATH: the proxy's master and workers
	local m
	case $1 in
	preread) m=$PLAIN_MASTER ;;
	pinned) m=$(fw_l7_proxy_pids | head -n1) ;;
	*) return 0 ;;
	esac
	[ -n "$m" ] && echo "$m" && pgrep -P "$m"
}
rss_kib() { # PID...: the sum of their VmRSS
	local p s=0 r
	for p in "$@"; do
		r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		s=$((s + ${r:-0}))
	done
	echo "$s"
}
in_ns() { # NS CMD...: with the namespace's /etc/hosts (ip netns exec)
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}
for p in "${PATHS[@]}"; do
	in_ns "$(path_ns "$p")" curl -sf --max-time 3 --cacert "$FW_L7_CA" -o /dev/null "$(path_url "$p")/" ||
		fw_die "path $p does not answer"
done

to_us() { # wrk's "1.23ms" -> 1230
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		f = (u == "us") ? 1 : (u == "ms") ? 1000 : (u == "s") ? 1000000 : 1
		printf "%.0f", n * f }'
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

RES=$FW_TMP/results # lines: PATH METRIC VALUE
run_wrk() {         # PATH conn|ka
	local p=$1 kind=$2 out hdr=() pp=() t0 d0 t1 d1 n
	[ "$kind" = conn ] && hdr=(-H 'Connection: close')
	mapfile -t pp < <(proxy_pids "$p")
	t0=$(cpu_ticks "${pp[@]}")
	d0=$(cpu_ticks "$FW_DAEMON_PID")
	local perf=""
	if [ "${L7_PERF:-0}" = 1 ] && [ "$kind" = conn ] && [ "${#pp[@]}" -gt 0 ]; then
		perf record -q -g -o "$OUT/l7-$p.perf" -p "$(
			IFS=,
			echo "${pp[*]},$FW_DAEMON_PID"
		)" -- sleep "$SECS" >/dev/null 2>&1 &
		perf=$!
	fi
	out=$(in_ns "$(path_ns "$p")" wrk -t1 -c"$CONNS" -d"${SECS}s" --latency "${hdr[@]}" "$(path_url "$p")/")
	[ -n "$perf" ] && wait "$perf"
	t1=$(cpu_ticks "${pp[@]}")
	d1=$(cpu_ticks "$FW_DAEMON_PID")
	n=$(awk '/requests in/ { print $1 }' <<<"$out")
	{
		echo "$p ${kind}_rps $(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
		echo "$p ${kind}_p50_us $(to_us "$(awk '$1 == "50%" { print $2 }' <<<"$out")")"
		echo "$p ${kind}_p99_us $(to_us "$(awk '$1 == "99%" { print $2 }' <<<"$out")")"
		# CPU per request of the proxy (none direct) and of fastwalld
		# (its share of the reports, the releases)
		if [ "${n:-0}" -gt 0 ]; then
			echo "$p ${kind}_proxy_cpu_us $(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.1f", (b - a) * 1e6 / hz / n }')"
			echo "$p ${kind}_daemon_cpu_us $(awk -v a="$d0" -v b="$d1" -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.1f", (b - a) * 1e6 / hz / n }')"
		fi
	} >>"$RES"
	grep -E 'Socket errors|Non-2xx' <<<"$out" | sed "s/^/  $p $kind: /" || true
	printf '  %-8s %-4s %10s req/s\n' "$p" "$kind" "$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
}
run_lat() { # PATH
	local p=$1 out
	out=$(fw_ns "$(path_ns "$p")" "$FW_PY" "$FW_L7_TOOL" connlat "$(path_addr "$p")" "$(path_port "$p")" \
		--sni api.example.com --ca "$FW_L7_CA" -n "$LAT_N")
	for k in total_p50_us total_p99_us; do
		echo "$p lat_$k $(tr ' ' '\n' <<<"$out" | awk -F= -v k="$k" '$1 == k { print $2 }')" >>"$RES"
	done
	printf '  %-8s lat  %s\n' "$p" "$out"
}
run_bulk() { # PATH
	local p=$1 ns t0 t1 i pids=() bps
	ns=$(path_ns "$p")
	bps=$(in_ns "$ns" curl -sf --cacert "$FW_L7_CA" -o /dev/null -w '%{speed_download}' "$(path_url "$p")/large")
	echo "$p bulk1_MBps $(awk -v b="$bps" 'BEGIN { printf "%.1f", b / 1e6 }')" >>"$RES"
	t0=$(date +%s.%N)
	for i in $(seq "$STREAMS"); do
		in_ns "$ns" curl -sf --cacert "$FW_L7_CA" -o /dev/null "$(path_url "$p")/large" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || echo "  $p: a bulk stream failed"; done
	t1=$(date +%s.%N)
	echo "$p bulkN_MBps $(awk -v a="$t0" -v b="$t1" -v n="$STREAMS" -v m="$L7_BULK_MB" \
		'BEGIN { printf "%.1f", n * m * 1048576 / (b - a) / 1e6 }')" >>"$RES"
	printf '  %-8s bulk %s MB/s one stream, %s MB/s %d streams\n' "$p" \
		"$(awk -v b="$bps" 'BEGIN { printf "%.1f", b / 1e6 }')" \
		"$(awk -v p="$p" '$1 == p && $2 == "bulkN_MBps" { v = $3 } END { print v }' "$RES")" "$STREAMS"
}

bench_env "l7 pinning"
echo "nginx $("$FW_NGINX" -v 2>&1 | sed 's/.*nginx\///'), wrk -t1 -c$CONNS ${SECS}s, $ROUNDS rounds, latency over $LAT_N connections, bulk $L7_BULK_MB MiB x1 and x$STREAMS, $IDLE idle connections"
[ "$PINNED" = 1 ] || echo "pinned: not measured: $why"

for r in $(seq "$ROUNDS"); do
	echo
	echo "round $r:"
	for i in "${!PATHS[@]}"; do
		p=${PATHS[$(((i + r - 1) % ${#PATHS[@]}))]}
		run_wrk "$p" conn
		run_wrk "$p" ka
		run_lat "$p"
		run_bulk "$p"
	done
done

echo
echo "proxy RSS with $IDLE idle TLS connections held through it:"
for p in "${PATHS[@]}"; do
	[ "$p" = direct ] && continue
	mapfile -t pp < <(proxy_pids "$p")
	before=$(rss_kib "${pp[@]}")
	holders=()
	for i in $(seq "$IDLE_PROCS"); do
		fw_ns "$(path_ns "$p")" "$FW_PY" "$FW_L7_TOOL" hold "$(path_addr "$p")" "$(path_port "$p")" \
			--sni api.example.com --ca "$FW_L7_CA" -n $((IDLE / IDLE_PROCS)) --out "$FW_TMP/hold.$p.$i" &
		holders+=($!)
		FW_PIDS+=($!)
	done
	ok=0
	for _ in $(seq 600); do
		n=$(cat "$FW_TMP"/hold."$p".* 2>/dev/null | wc -l)
		[ "$n" -ge "$IDLE_PROCS" ] && break
		sleep 0.5
	done
	ok=$(cat "$FW_TMP"/hold."$p".* 2>/dev/null | awk '{ s += $2 } END { print s + 0 }')
	sleep 1
	mapfile -t pp < <(proxy_pids "$p")
	after=$(rss_kib "${pp[@]}")
	per=$(awk -v a="$after" -v b="$before" -v n="$ok" 'BEGIN { printf "%.1f", n ? (a - b) / n : 0 }')
	printf '  %-8s %d held: %d KiB -> %d KiB (%.1f MiB), %s KiB per connection\n' "$p" "$ok" "$before" "$after" \
		"$(awk -v a="$after" 'BEGIN { print a / 1024 }')" "$per"
	{
		echo "$p idle_held $ok"
		echo "$p idle_rss_MiB $(awk -v a="$after" 'BEGIN { printf "%.1f", a / 1024 }')"
		echo "$p idle_KiB_per_conn $per"
	} >>"$RES"
	kill "${holders[@]}" 2>/dev/null
	wait "${holders[@]}" 2>/dev/null
	rm -f "$FW_TMP"/hold."$p".*
	sleep 2
done

echo
echo "medians of $ROUNDS rounds; ratio = path / direct; added = path - direct"
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
    ("conn_rps", "new TLS connections/s", "ratio"),
    ("conn_p50_us", "p50 latency, new connection (us)", "added"),
    ("conn_p99_us", "p99 latency, new connection (us)", "added"),
    ("conn_proxy_cpu_us", "proxy CPU per new connection (us)", None),
    ("conn_daemon_cpu_us", "fastwalld CPU per new connection (us)", None),
    ("ka_rps", "keep-alive requests/s", "ratio"),
    ("ka_proxy_cpu_us", "proxy CPU per kept-alive request (us)", None),
    ("lat_total_p50_us", "connect + handshake p50 (us)", "added"),
    ("lat_total_p99_us", "connect + handshake p99 (us)", "added"),
    ("bulk1_MBps", "bulk, one stream (MB/s)", "ratio"),
    ("bulkN_MBps", "bulk, several streams (MB/s)", "ratio"),
    ("idle_held", "idle connections held", None),
    ("idle_rss_MiB", "proxy RSS with them (MiB)", None),
    ("idle_KiB_per_conn", "proxy RSS per idle connection (KiB)", None),
]
paths = ["direct", "pinned", "preread"]
def fmt(x):
    return "-" if x is None else (f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}")
print(f"{'':40}{'direct':>10}{'pinned':>10}{'preread':>10}{'pinned':>10}{'preread':>10}")
for key, label, how in labels:
    if key not in rows:
        continue
    m = {p: statistics.median(v) for p, v in rows[key].items()}
    cells = [fmt(m.get(p)) for p in paths]
    extra = []
    for p in ("pinned", "preread"):
        d, v = m.get("direct"), m.get(p)
        if how is None or d is None or v is None:
            extra.append("")
        elif how == "ratio":
            extra.append(f"x{v / d:.2f}" if d else "-")
        else:
            extra.append(f"{v - d:+.0f}")
    print(f"{label:40}{cells[0]:>10}{cells[1]:>10}{cells[2]:>10}{extra[0]:>10}{extra[1]:>10}")
if "pinned" in rows.get("conn_rps", {}) and "preread" in rows.get("conn_rps", {}):
    a = statistics.median(rows["conn_rps"]["pinned"]) / statistics.median(rows["conn_rps"]["preread"])
    print(f"pinned / plain ssl_preread, new connections/s: x{a:.2f}")
EOF
