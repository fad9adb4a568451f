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
# Both sides are servers of the one gateway nginx (one worker: the same
# process, CPU and settings) and do the same HTTP work: HTTP/1.1 with
# keep-alive to the upstream from pools of the same size, no buffering, no
# access log, the same request bytes upstream (Host, no Connection, the
# credential header replaced; the probe below shows both).
#
#   hit      requests/s and latency on a cache hit, ING_ROUNDS rounds of
#            ING_SECONDS each, the peers alternating, wrk with ING_CONNS
#            connections on one thread: "plain" is proxy_pass to an
#            upstream block; "module" is the documented configuration
#            (scope check, cached resolution, proxy_pass
#            http://fastwall_fastlet$fastwall_ingress_uri); "module-nv"
#            the same in header mode with proxy_pass http://fastwall_fastlet
#            (no variables). Ratios are paired per round. Beside each run,
#            from perf stat on the gateway's worker: CPU time and syscalls
#            per request (and instructions where the CPU counts them), and
#            the new connections the upstream accepted (stub_status; 0
#            means every request reused a kept-alive one)
#   profile  perf record -g of the gateway's worker, plain and module: the
#            share of nginx, the kernel, libc and the module, and the top
#            symbols
#   insns    user-space instructions per request of each peer (valgrind
#            callgrind, a gateway without a master process, ING_VG_SECONDS
#            of wrk each): unlike time, load does not change them
#   miss     one request per new sandbox (a resolver round trip through
#            the gRPC subrequest) against the next request to it (a hit):
#            curl's time_total, ING_MISSES sandboxes
#   store    service-host hits (the index and the resolution cached) while
#            misses of unknown labels wait on a PostgreSQL store whose
#            every read sleeps 100 ms (a view with pg_sleep), paired with
#            rounds where it does not sleep: the hits' requests/s and p99
#            side by side, with the load average
#   bulk     a download and an upload (curl -T) of ING_BULK_MB MiB: to the
#            upstream directly, through plain proxy_pass and through the
#            module, ING_BULK_ROUNDS times each, alternating (MB/s, and the
#            gateway's CPU time per MiB)
#
# Environment: BUILD (build), ING_ROUNDS (5), ING_SECONDS (3), ING_CONNS
# (32), ING_PROFILE (1; 0 skips the profile), ING_VG_SECONDS (3; 0 skips
# the insns part), ING_MISSES (50), ING_STORE_ROUNDS (3; 0 skips the store
# part), ING_BULK_MB (1024), ING_BULK_ROUNDS (3). Output also goes to $BUILD/bench/ingress.txt.
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
# shellcheck source=scripts/bench-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-env.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM

ROUNDS=${ING_ROUNDS:-5}
SECS=${ING_SECONDS:-3}
CONNS=${ING_CONNS:-32}
VG_SECS=${ING_VG_SECONDS:-3}
PROFILE=${ING_PROFILE:-1}
MISSES=${ING_MISSES:-50}
STORE_ROUNDS=${ING_STORE_ROUNDS:-3}
BULK_MB=${ING_BULK_MB:-1024}
BULK_ROUNDS=${ING_BULK_ROUNDS:-3}
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

bench_env "fastwall-ingress benchmark"
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -1); one worker process each for the gateway (both sides) and the upstream"

mkdir -p "$FW_TMP/gen" "$NGX/logs" "$NGX/tmp" "$UP/logs" "$UP/tmp" "$UP/www"
"$FW_PY" -m grpc_tools.protoc -I"$FW_ROOT/gateway/proto" --python_out="$FW_TMP/gen" \
	--grpc_python_out="$FW_TMP/gen" "$FW_ROOT/gateway/proto/fastpath_v2.proto" ||
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
	log_format probe '\$request_length \$request_uri \$http_host [\$http_connection] \$http_x_fast_sandbox_route_credential';
$(temp_paths "$UP")
	keepalive_requests 1000000;
	server {
		listen $FASTLET;
		client_max_body_size 0;
		location / { return 200 "ok\n"; }
		location /probe { access_log $UP/logs/probe.log probe; return 200 "ok\n"; }
		location = /fw-status { stub_status; }
		location = /bulk { root $UP/www; }
		location = /sink { client_body_buffer_size 1m; return 200 "ok\n"; }
	}
}
EOF

# gateway_conf DIR OFFSET [DIRECTIVE [HTTP-DIRECTIVES]]: the gateway, its
# ports OFFSET above 80 (module), 81 (module-nv), 90 (plain) and 99
# (stub_status)
gateway_conf() {
	local d=$1 o=$2 resolve
	resolve="location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_connect_timeout 2s;
			grpc_send_timeout 2s;
			grpc_read_timeout 2s;
		}"
	cat <<EOF
load_module $MODULE;
daemon off;
${3:-}
user root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
$(temp_paths "$d")
	keepalive_requests 1000000;
	client_max_body_size 0;
	proxy_http_version 1.1;
	proxy_set_header Connection "";
	proxy_buffering off;
	proxy_request_buffering off;
	fastwall_ingress_keys $KEYS;
	fastwall_ingress_resolver $FASTPATH;
	fastwall_ingress_cache_size 4m;
	${4:-}

	# the same pool on both sides; nginx closes an upstream connection
	# after 1000 requests by default, which would add reconnects to both
	upstream plain {
		server $FASTLET;
		keepalive 64;
		keepalive_requests 1000000;
	}
	upstream fastwall_fastlet {
		fastwall_ingress_upstream;
		keepalive 64;
		keepalive_requests 1000000;
	}
	# the module as docs/ingress.md configures it: scope, resolution
	# (cached), keep-alive to the Fastlet
	server {
		listen $GW:$((80 + o));
		location / {
			fastwall_ingress on;
			proxy_pass http://fastwall_fastlet\$fastwall_ingress_uri;
			proxy_set_header Host \$fastwall_ingress_upstream_host;
			proxy_set_header Connection "";
		}
		$resolve
	}
	# the same in header mode without variables in proxy_pass, which then
	# sends the client's URI as it came (what \$fastwall_ingress_uri holds)
	server {
		listen $GW:$((81 + o));
		location / {
			fastwall_ingress on;
			proxy_pass http://fastwall_fastlet;
			proxy_set_header Host \$fastwall_ingress_upstream_host;
			proxy_set_header Connection "";
		}
		$resolve
	}
	# the yardstick: plain proxy_pass to the same upstream, doing the same
	# HTTP work as the module's location: the same Host length, no
	# Connection header, the client's credential header replaced by the one
	# the resolution issues (the stand-in's for sb-hit)
	server {
		listen $GW:$((90 + o));
		location / {
			proxy_pass http://plain;
			proxy_set_header Host $FASTLET;
			proxy_set_header Connection "";
			proxy_set_header X-Fast-Sandbox-Route-Credential cred-sb-hit;
		}
	}
	# connection counts, apart from the measured servers
	server {
		listen $GW:$((99 + o));
		location / { stub_status; }
	}
}
EOF
}
gateway_conf "$NGX" 0 >"$NGX/nginx.conf"

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

# wrk_run URL [SECONDS]: "rps p50_us p99_us non2xx requests", the hit scope sent
wrk_run() {
	local args=(-t1 -c"$CONNS" -d"${2:-$SECS}s" --latency -H "OpenSandbox-Ingress-To: $HIT")
	fw_ns "$NS" wrk "${args[@]}" "$1" 2>&1 | awk '
		function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1000000; return v }
		/Requests\/sec:/ { rps = $2 }
		/requests in/ { n = $1 }
		$1 == "50%" { p50 = us($2) }
		$1 == "99%" { p99 = us($2) }
		/Non-2xx/ { bad = $NF }
		END { printf "%.0f %.0f %.0f %d %d\n", rps, p50, p99, bad, n }'
}
# accepts HOST:PORT: connections that nginx accepted so far (stub_status,
# this look's own included)
accepts() { fw_ns "$NS" curl -s "http://$1/fw-status" | awk 'NR == 3 { print $1 }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "?" }'; }

echo
echo "== what reaches the upstream from each side (its log: request bytes, URI, Host, [Connection], credential) =="
for peer in plain:90 module:80 module-nv:81; do
	fw_ns "$NS" curl -s --path-as-is -o /dev/null -H "OpenSandbox-Ingress-To: $HIT" "http://$GW:${peer#*:}/probe/a%2Fb//c?x=%20y"
	printf "  %-10s %s\n" "${peer%:*}" "$(tail -1 "$UP/logs/probe.log")"
done

# perf stat on the gateway's one worker: CPU time, context switches, and
# where the kernel and the CPU offer them syscalls and instructions
WORKER=$(pgrep -P "$(cat "$NGX/nginx.pid")" | head -1)
PERF_EV=""
if command -v perf >/dev/null && [ -n "$WORKER" ] && perf stat -e task-clock -- true >/dev/null 2>&1; then
	PERF_EV=task-clock,context-switches
	perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 && PERF_EV+=,raw_syscalls:sys_enter
	perf stat -x, -e instructions -- true 2>&1 | grep -q '^[0-9]' && PERF_EV+=,instructions
fi

# run_peer PORT: "rps p50 p99 non2xx requests cpu_us/req syscalls/req
# insns/req upstream_new_conns client_conns"
run_peer() {
	local port=$1 ua ga ub gb ppid="" rps p50 p99 bad n per
	ua=$(accepts $FASTLET) ga=$(accepts $GW:99)
	if [ -n "$PERF_EV" ]; then
		perf stat -x, -e "$PERF_EV" -p "$WORKER" -o "$FW_TMP/perf.out" 2>/dev/null &
		ppid=$!
		sleep 0.3 # attached before the first request
	fi
	read -r rps p50 p99 bad n < <(wrk_run "http://$GW:$port/")
	if [ -n "$ppid" ]; then
		kill -INT "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
		per=$(awk -F, -v n="$n" 'n > 0 && $1 ~ /^[0-9.]+$/ {
				if ($3 == "task-clock") c = sprintf("%.1f", $1 * 1000 / n)
				if ($3 == "raw_syscalls:sys_enter") y = sprintf("%.2f", $1 / n)
				if ($3 ~ /^instructions/) i = sprintf("%.0f", $1 / n) }
			END { print (c == "" ? "-" : c), (y == "" ? "-" : y), (i == "" ? "-" : i) }' "$FW_TMP/perf.out")
	else
		per="- - -"
	fi
	ub=$(accepts $FASTLET) gb=$(accepts $GW:99)
	echo "$rps $p50 $p99 $bad $n $per $((ub - ua - 1)) $((gb - ga - 1))"
}

echo
echo "== hit: a cached route, module vs plain proxy_pass (wrk -t1 -c$CONNS, ${SECS} s, $ROUNDS rounds, alternating) =="
echo "  cpu: the gateway worker's CPU time per request (perf stat task-clock), sys: its syscalls per request,"
echo "  insns: its instructions per request (when the CPU counts them), up: new upstream connections, cl: wrk's"
printf "  %-5s %-9s %8s %7s %7s %7s %6s %8s %4s %4s %8s\n" round peer rps "p50 us" "p99 us" "cpu us" sys insns up cl "vs plain"
for port in 90 80 81; do wrk_run "http://$GW:$port/" 1 >/dev/null; done # pools filled, route cached
declare -A RPS P50 P99 CPU SYS INS
ratios=() nvratios=() dp50=() dp99=() cpur=()
for r in $(seq "$ROUNDS"); do
	ok=1 line=()
	for peer in plain:90 module:80 module-nv:81; do
		name=${peer%:*}
		read -r rps p50 p99 bad n cpu sys ins up cl < <(run_peer "${peer#*:}")
		if [ "${bad:-0}" != 0 ] || [ "${rps:-0}" = 0 ]; then
			ok=0
		fi
		RPS[$name]=$rps P50[$name]=$p50 P99[$name]=$p99 CPU[$name]=$cpu SYS[$name]=$sys INS[$name]=$ins
		line+=("$(printf "  %-5s %-9s %8s %7s %7s %7s %6s %8s %4s %4s" "$r" "$name" "$rps" "$p50" "$p99" "$cpu" "$sys" "$ins" "$up" "$cl")")
	done
	if [ "$ok" = 0 ]; then
		echo "  round $r: non-2xx answers or no requests: left out"
		continue
	fi
	printf '%s\n' "${line[0]}"
	for i in 1 2; do
		name=$([ "$i" = 1 ] && echo module || echo module-nv)
		printf '%s %7s%%\n' "${line[$i]}" "$(awk -v m="${RPS[$name]}" -v p="${RPS[plain]}" 'BEGIN { printf "%.1f", 100 * m / p }')"
	done
	ratios+=("$(awk -v m="${RPS[module]}" -v p="${RPS[plain]}" 'BEGIN { printf "%.1f", 100 * m / p }')")
	nvratios+=("$(awk -v m="${RPS[module-nv]}" -v p="${RPS[plain]}" 'BEGIN { printf "%.1f", 100 * m / p }')")
	dp50+=("$((P50[module] - P50[plain]))") dp99+=("$((P99[module] - P99[plain]))")
	[ "${CPU[plain]}" != - ] && cpur+=("$(awk -v m="${CPU[module]}" -v p="${CPU[plain]}" 'BEGIN { printf "%.1f", 100 * m / p }')")
	for k in plain module module-nv; do
		eval "all_rps_${k//-/_}+=(${RPS[$k]}) all_cpu_${k//-/_}+=(${CPU[$k]}) all_sys_${k//-/_}+=(${SYS[$k]}) all_ins_${k//-/_}+=(${INS[$k]})"
	done
done
calls_hit=$(grep -c " sb-hit " "$FW_TMP/calls" || true)
echo "  resolver calls for the hit sandbox over all rounds: $calls_hit (the first request's miss; every other request was a hit)"
if [ ${#ratios[@]} -gt 0 ]; then
	mr=$(median "${ratios[@]}") mnv=$(median "${nvratios[@]}")
	m50=$(median "${dp50[@]}") m99=$(median "${dp99[@]}")
	# shellcheck disable=SC2154 # the all_* arrays are filled by eval above
	echo "  median requests/s: plain $(median "${all_rps_plain[@]}"), module $(median "${all_rps_module[@]}"), module-nv $(median "${all_rps_module_nv[@]}")"
	echo "  module / plain (paired) $mr % (target >= 90 %: $(awk -v r="$mr" 'BEGIN { print (r >= 90 ? "met" : "not met") }')); module-nv / plain $mnv %"
	echo "  added latency (module - plain, median of rounds): p50 $m50 us, p99 $m99 us (target p99 < 200 us: $(awk -v d="$m99" 'BEGIN { print (d < 200 ? "met" : "not met") }'))"
	if [ ${#cpur[@]} -gt 0 ]; then
		# shellcheck disable=SC2154
		echo "  median CPU per request: plain $(median "${all_cpu_plain[@]}") us, module $(median "${all_cpu_module[@]}") us, module-nv $(median "${all_cpu_module_nv[@]}") us; module / plain (paired) $(median "${cpur[@]}") %"
		# shellcheck disable=SC2154
		[ "${all_sys_plain[0]}" != - ] && echo "  median syscalls per request: plain $(median "${all_sys_plain[@]}"), module $(median "${all_sys_module[@]}"), module-nv $(median "${all_sys_module_nv[@]}")"
		# shellcheck disable=SC2154
		if [ "${all_ins_plain[0]}" != - ]; then
			echo "  median instructions per request (perf): plain $(median "${all_ins_plain[@]}"), module $(median "${all_ins_module[@]}"), module-nv $(median "${all_ins_module_nv[@]}")"
		else
			echo "  (this CPU does not count instructions for perf: see the callgrind figures below)"
		fi
	else
		echo "  (no perf stat here: CPU and syscalls per request not measured)"
	fi
	echo "ing hit ratio_pct=$mr nv_ratio_pct=$mnv added_p50_us=$m50 added_p99_us=$m99 cpu_ratio_pct=$( [ ${#cpur[@]} -gt 0 ] && median "${cpur[@]}" || echo '?')"
fi

if [ "$PROFILE" = 1 ] && [ -n "$PERF_EV" ]; then
	echo
	echo "== profile: where the gateway worker's CPU time goes (perf record -g, cpu-clock, wrk ${SECS} s each) =="
	for peer in plain:90 module:80; do
		perf record -q -F 1999 -g -p "$WORKER" -o "$FW_TMP/perf.data" 2>/dev/null &
		ppid=$!
		sleep 0.3
		wrk_run "http://$GW:${peer#*:}/" >/dev/null
		kill -INT "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
		echo "  ${peer%:*}: by object, then the top symbols (self)"
		perf report -i "$FW_TMP/perf.data" --no-children --sort dso -g none --percent-limit 0.5 2>/dev/null |
			awk '/^ +[0-9.]+%/ { printf "    %s", $0 "\n" }'
		perf report -i "$FW_TMP/perf.data" --no-children --sort dso,sym -g none 2>/dev/null |
			awk '/^ +[0-9.]+%/ && n++ < 12 { printf "    %s\n", $0 }'
	done
fi

echo
echo "== insns: user-space instructions per request (valgrind callgrind, a gateway without a master process, wrk -c8 ${VG_SECS} s each) =="
if [ "$VG_SECS" = 0 ]; then
	echo "  skipped (ING_VG_SECONDS=0)"
elif ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
	echo "  skipped: valgrind is not installed (scripts/install-deps.sh installs it)"
else
	VG=$FW_TMP/vg
	mkdir -p "$VG/logs" "$VG/tmp"
	gateway_conf "$VG" 100 "master_process off;" >"$VG/nginx.conf"
	fw_bg "$NS" valgrind --tool=callgrind --callgrind-out-file="$VG/cg.out" "$NGINX" -p "$VG" -c "$VG/nginx.conf"
	VGPID=""
	for _ in $(seq 300); do
		if fw_ns "$NS" curl -s -o /dev/null "http://$GW:190/"; then
			VGPID=$(pgrep -f "callgrind.*$VG/nginx.conf" | head -1)
			break
		fi
		sleep 0.1
	done
	# vg_count PORT: instructions per request over one wrk run
	vg_count() {
		local n f
		callgrind_control -z "$VGPID" >/dev/null 2>&1
		n=$(fw_ns "$NS" wrk -t1 -c8 -d"${2:-$VG_SECS}s" -H "OpenSandbox-Ingress-To: $HIT" "http://$GW:$1/" 2>&1 | awk '/requests in/ { print $1 }')
		callgrind_control -d "$VGPID" >/dev/null 2>&1
		f=$(find "$VG" -name 'cg.out.*' -newer "$VG/nginx.conf" -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2)
		if [ -z "$f" ]; then
			echo "? ${n:-0}" # callgrind_control could not reach it
			return
		fi
		awk -v n="${n:-0}" '/^summary:/ { if (n > 0) printf "%.0f %d\n", $2 / n, n; exit }' "$f"
	}
	if [ -z "$VGPID" ]; then
		echo "  skipped: the gateway under valgrind did not start: $(tail -3 "$VG/logs/error.log" 2>/dev/null)"
	else
		for p in 190 180 181; do vg_count "$p" 1 >/dev/null; done # warm: the route cached, pools filled
		read -r ip np < <(vg_count 190)
		read -r im nm < <(vg_count 180)
		read -r inv nnv < <(vg_count 181)
		printf "  plain %s, module %s (%s %%), module-nv %s (%s %%) instructions per request (over %s, %s, %s requests)\n" \
			"$ip" "$im" "$(awk -v m="$im" -v p="$ip" 'BEGIN { printf "%.0f", 100 * m / p }')" \
			"$inv" "$(awk -v m="$inv" -v p="$ip" 'BEGIN { printf "%.0f", 100 * m / p }')" "$np" "$nm" "$nnv"
		echo "ing insns plain=$ip module=$im module_nv=$inv"
	fi
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
echo "== bulk: $BULK_MB MiB download and upload (curl -T): the upstream directly, plain proxy_pass, the module =="
bulk() { # HOST:PORT what [HEADER]
	local to=$1 what=$2 h=${3:-X-Bench: 1}
	if [ "$what" = down ]; then
		fw_ns "$NS" curl -s -o /dev/null -w '%{http_code} %{speed_download}\n' -H "$h" "http://$to/bulk"
	else
		# -T streams the file (a PUT); --data-binary would read it into memory
		fw_ns "$NS" curl -s -o /dev/null -w '%{http_code} %{speed_upload}\n' -H "$h" -H 'Expect:' \
			-T "$UP/www/bulk" "http://$to/sink"
	fi | awk '{ printf "%s %.0f\n", $1, $2 / 1048576 }'
}
# bulk_cpu HOST:PORT what [HEADER]: "code MB/s gateway-CPU-ms-per-MiB"
bulk_cpu() {
	local ppid="" code mbs cpu=-
	if [ -n "$PERF_EV" ]; then
		perf stat -x, -e task-clock -p "$WORKER" -o "$FW_TMP/perf.bulk" 2>/dev/null &
		ppid=$!
		sleep 0.3
	fi
	read -r code mbs < <(bulk "$@")
	if [ -n "$ppid" ]; then
		kill -INT "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
		cpu=$(awk -F, -v n="$BULK_MB" '$3 == "task-clock" && $1 ~ /^[0-9.]+$/ { printf "%.2f", $1 / n }' "$FW_TMP/perf.bulk")
	fi
	echo "$code $mbs ${cpu:--}"
}
echo "  (median of $BULK_ROUNDS alternating transfers each; cpu: the gateway worker's CPU ms per MiB, perf stat)"
bulk $FASTLET down >/dev/null # the file into the page cache first
for what in down up; do
	dms=() pms=() mms=() pcs=() mcs=() codes=""
	for _ in $(seq "$BULK_ROUNDS"); do
		read -r dc dm < <(bulk $FASTLET "$what")
		read -r pc pm pcpu < <(bulk_cpu $GW:90 "$what")
		read -r mc mm mcpu < <(bulk_cpu $GW:80 "$what" "OpenSandbox-Ingress-To: $HIT")
		codes+=" $dc/$pc/$mc"
		dms+=("$dm") pms+=("$pm") mms+=("$mm") pcs+=("$pcpu") mcs+=("$mcpu")
	done
	dm=$(median "${dms[@]}") pm=$(median "${pms[@]}") mm=$(median "${mms[@]}")
	pcpu=$(median "${pcs[@]}") mcpu=$(median "${mcs[@]}")
	printf "  %-5s direct %5s MB/s   plain %5s MB/s (cpu %s)   module %5s MB/s (cpu %s)   module / plain %s %%, cpu %s %%   (HTTP codes%s)\n" \
		"$what" "$dm" "$pm" "$pcpu" "$mm" "$mcpu" \
		"$(awk -v m="$mm" -v p="$pm" 'BEGIN { if (p > 0) printf "%.0f", 100 * m / p; else print "?" }')" \
		"$(awk -v m="$mcpu" -v p="$pcpu" 'BEGIN { if (p > 0) printf "%.0f", 100 * m / p; else print "?" }')" "$codes"
	echo "ing bulk_$what direct_mbs=$dm plain_mbs=$pm module_mbs=$mm plain_cpu_ms_per_mib=$pcpu module_cpu_ms_per_mib=$mcpu"
done
echo
echo "== store: service-host hits while misses wait on a slow PostgreSQL store (wrk -t1 -c$CONNS, ${SECS} s, $STORE_ROUNDS rounds, alternating) =="
PGBIN=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
if [ "$STORE_ROUNDS" = 0 ]; then
	echo "  skipped (ING_STORE_ROUNDS=0)"
elif [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ] || ! id postgres >/dev/null 2>&1; then
	echo "  skipped: the PostgreSQL server is not installed (scripts/install-deps.sh installs it)"
else
	PGD=$(mktemp -d "/tmp/fastwall-pgb-$FW_ID.XXXXXX")
	chown postgres: "$PGD"
	pg_stop() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate stop >/dev/null 2>&1; rm -rf "$PGD"; }
	trap 'pg_stop; fw_cleanup' EXIT
	if ! runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >/dev/null 2>&1 ||
		! runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w \
			-o "-k $PGD -c listen_addresses=''" start >/dev/null; then
		fw_die "postgres did not start: $(tail -3 "$PGD/log" 2>/dev/null)"
	fi
	psql_b() { runuser -u postgres -- psql -h "$PGD" -At -q -v ON_ERROR_STOP=1 -c "$1" postgres; }
	SLABEL=$("$FASTWALL" hostname hash -g bench tenant-bench sb-hit)
	psql_b "CREATE TABLE fastwall_services (workspace TEXT NOT NULL, sandbox TEXT NOT NULL,
			service TEXT NOT NULL, port INTEGER NOT NULL, routing_name TEXT NOT NULL,
			label TEXT NOT NULL, public INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (workspace, sandbox, service));
		INSERT INTO fastwall_services VALUES ('tenant-bench', 'sb-hit', '', 8080, 'bench', '$SLABEL', 1)" ||
		fw_die "can't set up the store"
	SG=$FW_TMP/store-gw
	mkdir -p "$SG/logs" "$SG/tmp"
	gateway_conf "$SG" 200 "" "fastwall_ingress_service_hosts *.bench.example;
	fastwall_ingress_routing_name bench;
	fastwall_ingress_service_store \"postgresql:host=$PGD dbname=postgres user=postgres\";" >"$SG/nginx.conf"
	fw_bg "$NS" "$NGINX" -p "$SG" -c "$SG/nginx.conf"
	fw_eventually 5 fw_ns "$NS" curl -sf -o /dev/null -H "Host: $SLABEL.bench.example" "http://$GW:280/" ||
		fw_die "the store gateway does not route $SLABEL: $(tail -3 "$SG/logs/error.log")"
	# a miss: the worker opens its connection (making the schema, which a
	# view would refuse) and keeps it
	fw_ns "$NS" curl -s -o /dev/null -H "Host: aaaaaaaaaaaaaaaa.bench.example" "http://$GW:280/"
	# hydrated: now the table goes behind a view whose every read first
	# sleeps bench_delay seconds, the latency injected into store reads
	psql_b "ALTER TABLE fastwall_services RENAME TO fastwall_services_t;
		CREATE TABLE bench_delay (s float8); INSERT INTO bench_delay VALUES (0);
		CREATE VIEW fastwall_services AS WITH d AS MATERIALIZED (SELECT pg_sleep(s) FROM bench_delay)
			SELECT t.* FROM fastwall_services_t t, d;" || fw_die "can't set up the store's view"
	# misses: 8 connections, each a new unknown label every 400 ms at most
	cat >"$FW_TMP/miss.lua" <<'LUA'
local a = "abcdefghijklmnopqrstuvwxyz234567"
math.randomseed(os.time())
request = function()
	local t = {}
	for i = 1, 16 do local k = math.random(1, 32); t[i] = a:sub(k, k) end
	return wrk.format("GET", "/", { Host = table.concat(t) .. ".bench.example" })
end
delay = function() return 400 end
LUA
	# store_run DELAY-S: "rps p50 p99 non2xx one_miss_us misses"; one
	# miss: curl's time_total for an unknown label after the run
	store_run() {
		local rps p50 p99 bad n mp50 mn
		psql_b "UPDATE bench_delay SET s = $1"
		fw_ns "$NS" wrk -t1 -c8 -d"$((SECS + 1))s" --latency -s "$FW_TMP/miss.lua" "http://$GW:280/" >"$FW_TMP/miss.wrk" 2>&1 &
		local mpid=$!
		sleep 0.5
		read -r rps p50 p99 bad n < <(fw_ns "$NS" wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "Host: $SLABEL.bench.example" "http://$GW:280/" 2>&1 | awk '
			function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1000000; return v }
			/Requests\/sec:/ { rps = $2 } /requests in/ { n = $1 } $1 == "50%" { p50 = us($2) } $1 == "99%" { p99 = us($2) } /Non-2xx/ { bad = $NF }
			END { printf "%.0f %.0f %.0f %d %d\n", rps, p50, p99, bad, n }')
		wait "$mpid"
		mn=$(awk '/requests in/ { print $1 }' "$FW_TMP/miss.wrk")
		mp50=$(fw_ns "$NS" curl -s -o /dev/null -w '%{time_total}' -H "Host: $(head -c 10 /dev/urandom | base32 | tr -d = | tr '[:upper:]' '[:lower:]').bench.example" "http://$GW:280/" |
			awk '{ printf "%.0f", $1 * 1000000 }')
		echo "$rps $p50 $p99 $bad $mp50 $mn"
	}
	store_run 0 >/dev/null # warm: pools filled, the route's resolution cached
	echo "  hits: Host $SLABEL.bench.example (in the index, resolution cached); misses: 8 wrk connections of unknown labels,"
	echo "  one each 400 ms; injected: every store read sleeps 100 ms first (a view with pg_sleep), else 0 ms; one worker"
	echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	printf "  %-5s %-9s %8s %8s %8s %12s %7s   %s\n" round store rps "p50 us" "p99 us" "1 miss us" misses "injected / none"
	srps=() sp99=()
	for r in $(seq "$STORE_ROUNDS"); do
		read -r r0 a0 p0 b0 m0 n0 < <(store_run 0)
		read -r r1 a1 p1 b1 m1 n1 < <(store_run 0.1)
		if [ "${b0:-1}" != 0 ] || [ "${b1:-1}" != 0 ] || [ "${r0:-0}" = 0 ] || [ "${p0:-0}" = 0 ]; then
			echo "  round $r: non-2xx hits or no requests: left out"
			continue
		fi
		rr=$(awk -v a="$r1" -v b="$r0" 'BEGIN { printf "%.1f", 100 * a / b }')
		pr=$(awk -v a="$p1" -v b="$p0" 'BEGIN { printf "%.2f", a / b }')
		printf "  %-5s %-9s %8s %8s %8s %12s %7s\n" "$r" "0 ms" "$r0" "$a0" "$p0" "$m0" "$n0"
		printf "  %-5s %-9s %8s %8s %8s %12s %7s   rps %s %%, p99 x%s\n" "$r" "100 ms" "$r1" "$a1" "$p1" "$m1" "$n1" "$rr" "$pr"
		srps+=("$rr") sp99+=("$pr")
	done
	echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ ${#srps[@]} -gt 0 ]; then
		mr=$(median "${srps[@]}") mp=$(median "${sp99[@]}")
		echo "  hits with 100 ms store reads / without (paired, median of rounds): requests/s $mr % (target >= 90 %: $(awk -v r="$mr" 'BEGIN { print (r >= 90 ? "met" : "not met") }')), p99 x$mp"
		echo "ing store rps_ratio_pct=$mr p99_ratio=$mp"
	fi
fi

echo
bench_env "at the end"
echo
echo "bench-ingress.sh: done"
