#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# fastwall-ingress benchmark: the nginx module against plain nginx, side by
# side in one run; run by scripts/bench.sh (SKIP_INGRESS=1 skips it) or
# alone. Prints figures and never judges them: the exit status is non-zero
# only when the benchmark itself breaks.
#
# Everything runs in one network namespace this script creates (addresses
# on its loopback, documentation ranges): the gateway nginx (the module
# loaded), a FastPath stand-in (tests/e2e/ingress_servers.py, grpcio) and
# an upstream "Fastlet", a second nginx answering `return 200` and serving
# a sparse file; wrk and curl are the clients. All of it goes with the run.
#
#   hit      requests/s and latency through the gateway on a cache hit
#            (scope check, cached resolution, the module's keep-alive
#            upstream) against plain nginx proxy_pass to the same upstream
#            with keep-alive, ING_ROUNDS rounds of ING_SECONDS each,
#            alternating, wrk with ING_CONNS connections on one thread; the
#            ratio is paired per round
#   miss     one request per new sandbox (a resolver round trip through
#            the gRPC subrequest) against the next request to it (a hit):
#            curl's time_total, ING_MISSES sandboxes
#   bulk     a download and an upload of ING_BULK_MB MiB through the
#            gateway against plain proxy_pass (curl, MB/s)
#
# Environment: BUILD (build), ING_ROUNDS (5), ING_SECONDS (3), ING_CONNS
# (32), ING_MISSES (50), ING_BULK_MB (1024). Output also goes to
# $BUILD/bench/ingress.txt.
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM

ROUNDS=${ING_ROUNDS:-5}
SECS=${ING_SECONDS:-3}
CONNS=${ING_CONNS:-32}
MISSES=${ING_MISSES:-50}
BULK_MB=${ING_BULK_MB:-1024}
NGINX=/usr/sbin/nginx
MODULE=$FW_BUILD/ingress/ngx_http_fastwall_ingress_module.so
OUT=$FW_BUILD/bench
mkdir -p "$OUT"
exec > >(tee "$OUT/ingress.txt") 2>&1

[ "$(id -u)" = 0 ] || fw_die "bench-ingress.sh needs root (namespaces)"
for t in wrk curl "$NGINX"; do
	command -v "$t" >/dev/null || fw_die "$t not found: run scripts/install-deps.sh"
done
[ -f /usr/share/nginx/src/conf_flags ] || fw_die "nginx-dev is not installed: run scripts/install-deps.sh"
"$FW_PY" -c 'import grpc, grpc_tools' 2>/dev/null || fw_die "python3-grpcio / python3-grpc-tools missing"
[ -x "$FASTWALL" ] || fw_die "$FASTWALL missing: run make all"
make -s -C "$FW_ROOT" BUILD="$BUILD" ingress >/dev/null || fw_die "make ingress failed"

NS=fwbing-$FW_ID
GW=192.0.2.1       # :80 the module, :90 plain proxy_pass
FASTPATH=192.0.2.2:50051
FASTLET=198.51.100.7:8080
NGX=$FW_TMP/nginx
UP=$FW_TMP/upstream
KEYS=$FW_TMP/keys
fw_netns_add "$NS"
for a in $GW/32 192.0.2.2/32 198.51.100.7/32; do
	ip -n "$NS" addr add "$a" dev lo
done

echo "fastwall-ingress benchmark: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%RZ)"
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -1); one worker process each for the gateway and the upstream"

mkdir -p "$FW_TMP/gen" "$NGX/logs" "$NGX/tmp" "$UP/logs" "$UP/tmp" "$UP/www"
"$FW_PY" -m grpc_tools.protoc -I"$FW_ROOT/ingress/proto" --python_out="$FW_TMP/gen" \
	--grpc_python_out="$FW_TMP/gen" "$FW_ROOT/ingress/proto/fastpath_v2.proto" ||
	fw_die "can't generate the stand-in from the proto"
truncate -s "${BULK_MB}M" "$UP/www/bulk"
printf 'k=%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$KEYS"

temp_paths() {
	local d=$1
	printf '\tclient_body_temp_path %s/tmp/body;\n\tproxy_temp_path %s/tmp/proxy;\n' "$d" "$d"
	printf '\tfastcgi_temp_path %s/tmp/fcgi;\n\tuwsgi_temp_path %s/tmp/uwsgi;\n\tscgi_temp_path %s/tmp/scgi;\n' "$d" "$d" "$d"
}

# the upstream: a fixed answer, a large file, and a sink for uploads
cat >"$UP/nginx.conf" <<EOF
daemon off;
user root;
worker_processes 1;
pid $UP/nginx.pid;
error_log $UP/logs/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	log_format probe '\$request_length \$http_host [\$http_connection] \$http_x_fast_sandbox_route_credential';
$(temp_paths "$UP")
	keepalive_requests 1000000;
	server {
		listen $FASTLET;
		client_max_body_size 0;
		location / { return 200 "ok\n"; }
		location = /probe { access_log $UP/logs/probe.log probe; return 200 "ok\n"; }
		location = /fw-status { stub_status; }
		location = /bulk { root $UP/www; }
		location = /sink { client_body_buffer_size 1m; return 200 "ok\n"; }
	}
}
EOF

cat >"$NGX/nginx.conf" <<EOF
load_module $MODULE;
daemon off;
user root;
worker_processes 1;
pid $NGX/nginx.pid;
error_log $NGX/logs/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
$(temp_paths "$NGX")
	keepalive_requests 1000000;
	client_max_body_size 0;
	proxy_http_version 1.1;
	proxy_set_header Connection "";
	proxy_buffering off;
	proxy_request_buffering off;
	fastwall_ingress_keys $KEYS;
	fastwall_ingress_resolver $FASTPATH;
	fastwall_ingress_cache_size 4m;

	upstream plain {
		server $FASTLET;
		keepalive 64;
	}
	upstream fastwall_fastlet {
		fastwall_ingress_upstream;
		keepalive 64;
	}
	# the module: scope, resolution (cached), keep-alive to the Fastlet
	server {
		listen $GW:80;
		location / {
			fastwall_ingress on;
			proxy_pass http://fastwall_fastlet\$fastwall_ingress_uri;
			proxy_set_header Host \$fastwall_ingress_upstream_host;
			proxy_set_header Connection "";
		}
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_connect_timeout 2s;
			grpc_send_timeout 2s;
			grpc_read_timeout 2s;
		}
	}
	# the yardstick: plain proxy_pass to the same upstream, doing the same
	# HTTP work as the module's location: the same Host length, no
	# Connection header, the client's credential header replaced by the one
	# the resolution issues (the stand-in's for sb-hit)
	server {
		listen $GW:90;
		location / {
			proxy_pass http://plain;
			proxy_set_header Host $FASTLET;
			proxy_set_header Connection "";
			proxy_set_header X-Fast-Sandbox-Route-Credential cred-sb-hit;
		}
	}
	# connection counts (stub_status), apart from both
	server {
		listen $GW:99;
		location / { stub_status; }
	}
}
EOF

fw_bg "$NS" "$FW_PY" "$FW_E2E_DIR/ingress_servers.py" fastpath --gen "$FW_TMP/gen" --listen $FASTPATH \
	--calls "$FW_TMP/calls" --upstream "http://$FASTLET" --refused "http://198.51.100.8:1" \
	--tls-upstream "https://198.51.100.9:1" --ready "$FW_TMP/fp.ready"
fw_bg "$NS" "$NGINX" -p "$UP" -c "$UP/nginx.conf"
fw_bg "$NS" "$NGINX" -p "$NGX" -c "$NGX/nginx.conf"
for _ in $(seq 100); do
	[ -e "$FW_TMP/fp.ready" ] && fw_ns "$NS" curl -s -o /dev/null "http://$GW:90/" && break
	sleep 0.1
done
fw_ns "$NS" curl -sf -o /dev/null "http://$GW:90/" || fw_die "plain nginx does not answer: $(tail -3 "$NGX/logs/error.log")"

scope() { "$FASTWALL" scope sign --keys "$KEYS" --key-id k tenant-bench "$1" 8080; }
HIT=$(scope sb-hit)
code=$(fw_ns "$NS" curl -s -o /dev/null -w '%{http_code}' -H "OpenSandbox-Ingress-To: $HIT" "http://$GW:80/")
[ "$code" = 200 ] || fw_die "the gateway answers $code for a valid scope: $(tail -3 "$NGX/logs/error.log")"

# wrk_run URL [HEADER]: "rps p50_us p99_us"
wrk_run() {
	local args=(-t1 -c"$CONNS" -d"${SECS}s" --latency)
	[ -n "${2:-}" ] && args+=(-H "$2")
	fw_ns "$NS" wrk "${args[@]}" "$1" 2>&1 | awk '
		function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1000000; return v }
		/Requests\/sec:/ { rps = $2 }
		$1 == "50%" { p50 = us($2) }
		$1 == "99%" { p99 = us($2) }
		/Non-2xx/ { bad = $NF }
		END { printf "%.0f %.0f %.0f %d\n", rps, p50, p99, bad }'
}

echo
echo "== hit: requests/s on a cache hit, module vs plain proxy_pass (wrk -t1 -c$CONNS, ${SECS} s, $ROUNDS rounds, alternating) =="
printf "  %-6s %12s %10s %10s   %12s %10s %10s   %8s\n" round "plain rps" "p50 us" "p99 us" "module rps" "p50 us" "p99 us" ratio
ratios=() plains=() mods=() dp50=() dp99=()
for r in $(seq "$ROUNDS"); do
	read -r prps pp50 pp99 pbad < <(wrk_run "http://$GW:90/")
	read -r mrps mp50 mp99 mbad < <(wrk_run "http://$GW:80/" "OpenSandbox-Ingress-To: $HIT")
	if [ "${pbad:-0}" != 0 ] || [ "${mbad:-0}" != 0 ] || [ "${prps:-0}" = 0 ]; then
		echo "  round $r: non-2xx answers (plain $pbad, module $mbad) or no requests: left out"
		continue
	fi
	ratio=$(awk -v m="$mrps" -v p="$prps" 'BEGIN { printf "%.1f", 100 * m / p }')
	printf "  %-6s %12s %10s %10s   %12s %10s %10s   %7s%%\n" "$r" "$prps" "$pp50" "$pp99" "$mrps" "$mp50" "$mp99" "$ratio"
	ratios+=("$ratio") plains+=("$prps") mods+=("$mrps")
	dp50+=("$((mp50 - pp50))") dp99+=("$((mp99 - pp99))")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "?" }'; }
calls_hit=$(grep -c " sb-hit " "$FW_TMP/calls" || true)
echo "  resolver calls for the hit sandbox over all rounds: $calls_hit (the first request's miss; every other request was a hit)"
if [ ${#ratios[@]} -gt 0 ]; then
	mr=$(median "${ratios[@]}")
	m50=$(median "${dp50[@]}") m99=$(median "${dp99[@]}")
	echo "  median: plain $(median "${plains[@]}") rps, module $(median "${mods[@]}") rps; module / plain (paired) $mr % (target >= 90 %: $(awk -v r="$mr" 'BEGIN { print (r >= 90 ? "met" : "not met") }'))"
	echo "  added latency (module - plain, median of rounds): p50 $m50 us, p99 $m99 us (target p99 < 200 us: $(awk -v d="$m99" 'BEGIN { print (d < 200 ? "met" : "not met") }'))"
	echo "ing hit ratio_pct=$mr added_p50_us=$m50 added_p99_us=$m99"
fi

echo
echo "== miss: one request per new sandbox (resolver round trip) against the next one (cached), curl time_total, $MISSES sandboxes =="
: >"$FW_TMP/miss" && : >"$FW_TMP/hit"
for i in $(seq "$MISSES"); do
	s=$(scope "sb-miss-$i")
	fw_ns "$NS" curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "OpenSandbox-Ingress-To: $s" "http://$GW:80/" >>"$FW_TMP/miss"
	fw_ns "$NS" curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "OpenSandbox-Ingress-To: $s" "http://$GW:80/" >>"$FW_TMP/hit"
done
pct() { awk '$1 == 200 { print $2 * 1000000 }' "$1" | sort -n | awk -v p="$2" '{ v[NR] = $1 } END { if (NR) { i = int(p / 100 * (NR - 1) + 0.5) + 1; printf "%.0f", v[i] } else print "?" }'; }
okm=$(awk '$1 == 200' "$FW_TMP/miss" | wc -l)
echo "  miss (new sandbox): p50 $(pct "$FW_TMP/miss" 50) us, p99 $(pct "$FW_TMP/miss" 99) us ($okm of $MISSES answered 200)"
echo "  hit (same sandbox next): p50 $(pct "$FW_TMP/hit" 50) us, p99 $(pct "$FW_TMP/hit" 99) us"
echo "  (each curl is a new process and connection: compare the two rows, not the absolute figures)"
echo "  resolver calls for these sandboxes: $(grep -c " sb-miss-" "$FW_TMP/calls" || true) (one per sandbox expected)"
echo "ing miss p50_us=$(pct "$FW_TMP/miss" 50) hit_p50_us=$(pct "$FW_TMP/hit" 50)"

echo
echo "== bulk: $BULK_MB MiB download and upload through the gateway against plain proxy_pass (curl) =="
bulk() { # PORT what [HEADER]
	local port=$1 what=$2 h=${3:-X-Bench: 1}
	if [ "$what" = down ]; then
		fw_ns "$NS" curl -s -o /dev/null -w '%{http_code} %{speed_download}\n' -H "$h" "http://$GW:$port/bulk"
	else
		# -T streams the file (a PUT); --data-binary would read it into memory
		fw_ns "$NS" curl -s -o /dev/null -w '%{http_code} %{speed_upload}\n' -H "$h" -H 'Expect:' \
			-T "$UP/www/bulk" "http://$GW:$port/sink"
	fi | awk '{ printf "%s %.0f\n", $1, $2 / 1048576 }'
}
bulk 90 down >/dev/null # the file into the page cache first
for what in down up; do
	read -r pc pm < <(bulk 90 "$what")
	read -r mc mm < <(bulk 80 "$what" "OpenSandbox-Ingress-To: $HIT")
	printf "  %-8s plain %6s MB/s (%s)   module %6s MB/s (%s)   module / plain %s %%\n" "$what" "$pm" "$pc" "$mm" "$mc" \
		"$(awk -v m="$mm" -v p="$pm" 'BEGIN { if (p > 0) printf "%.0f", 100 * m / p; else print "?" }')"
	echo "ing bulk_$what plain_mbs=$pm module_mbs=$mm"
done
echo
echo "bench-ingress.sh: done"
