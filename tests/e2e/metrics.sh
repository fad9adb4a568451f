#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: fastwalld's metrics listener scraped by a real Prometheus
# (Debian's, run as a plain process in the pod namespace with its own
# config and storage in the run's temp dir). The test sends traffic it
# counts itself: UDP datagrams to an allowed and a denied CIDR, DNS
# queries through the proxy for an allowed and a denied name (dnsmasq
# upstream, and a second upstream nothing answers on), requests to the
# actions listener, a flood past the event rate limit; then asks
# Prometheus's query API whether the series say the same (per-subject
# packets, upstream health, request latencies, suppressed events, loop
# rounds, map fill against bpftool's count). /healthz and /readyz are
# read directly, /readyz also while the pinned maps are gone. The scrape
# text passes promtool's linter; metrics.listen "" turns the listener off.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_act_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
for t in prometheus promtool dig dnsmasq bpftool; do
	command -v "$t" >/dev/null || fw_die "$t not found (scripts/install-deps.sh)"
done

SB_A=$(fw_sb_ns a)
UP4=198.51.100.53
DEAD_UP=$UP4:5353 # nothing listens there: its probes fail
METRICS=127.0.0.1:9464 # the default listener
PROM=127.0.0.1:19090
N_ALLOW=5  # datagrams to the allowed CIDR
N_DENY=7   # datagrams to the denied CIDR
N_DNS_OK=3 # queries for an allowed name
N_DNS_NO=2 # queries for a denied name
N_STATUS=4 # GETs of the actions status endpoint
N_FLOOD=10 # denies past the event rate limit (burst 3, one a second)

fw_topology
fw_sandbox a 2
fw_serve_internet
fw_resolver $UP4 api.example.com,198.51.100.10,30 bad.example.com,198.51.100.66,30

write_config() {
	cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events:
    rate: 1
    burst: 3
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_ACT_SOCK
dns:
  upstreams: [$UP4, '$DEAD_UP']
  timeout: 1
  probe_interval: 1
$1
subjects:
$(fw_subject_yaml a 2 v4)
    policy:
      defaultAction: deny
      note: a key the policy format does not know
      egress:
        - { action: allow, target: 203.0.113.10/32 }
        - { action: deny, target: 198.51.100.66/32 }
        - { action: allow, target: api.example.com }
EOF
}

# get PATH [CURL ARGS...]: "CODE BODY" of the metrics listener (000: no
# answer)
get() {
	local p=$1 f=$FW_TMP/get.body.$BASHPID body code
	shift
	: >"$f"
	code=$(fw_ns "$NS_POD" curl -s -o "$f" -w '%{http_code}' --max-time 3 "$@" \
		"http://$METRICS$p" 2>/dev/null) || code=${code:-000}
	body=$(<"$f")
	echo "$code $body"
}

# A poller that records /readyz from before the daemon starts, to catch
# the starting phase.
poll_readyz() {
	while :; do
		get /readyz --max-time 1 >>"$FW_TMP/readyz.seen"
		sleep 0.01
	done
}
write_config 'metrics:
  per_subject: true'
: >"$FW_TMP/readyz.seen"
poll_readyz &
POLLER=$!
FW_PIDS+=("$POLLER")
fw_start_daemon || fw_die "fastwalld did not start"
check_eq "fastwalld logs how many pod addresses are pod-local once per start" \
	"$(grep -c 'pod addresses are pod-local' "$FW_LOG")" 1
STARTED_S=$(date +%s)

echo "# health"
check_eq "/healthz: 200 ok" "$(get /healthz)" "200 ok"
fw_eventually 5 grep -qx '200 ready' "$FW_TMP/readyz.seen"
kill "$POLLER" 2>/dev/null
wait "$POLLER" 2>/dev/null
check_eq "/readyz once started: 200 ready" "$(get /readyz)" "200 ready"
# the listener is up before the data plane loads; what it said meanwhile
STARTING='503 not ready: starting (loading, attaching, programming subjects)'
if grep -q '^503 ' "$FW_TMP/readyz.seen"; then
	check "/readyz while starting: 503 with the reason" grep -qxF "$STARTING" "$FW_TMP/readyz.seen"
else
	echo "# (the start was too quick for the poller to see /readyz answer 503)"
fi
check_fails "/readyz said nothing else (no answer, starting, ready)" \
	grep -vxE '000 |503 not ready: starting \(loading, attaching, programming subjects\)|200 ready' \
	"$FW_TMP/readyz.seen"
check_eq "POST /metrics: 405" "$(get /metrics -X POST | cut -d' ' -f1)" "405"
check_eq "an unknown path: 404" "$(get /nope | cut -d' ' -f1)" "404"

check "the policy's unknown key: a warning in the log, with its line" \
	grep -qE "warn .*fastwalld.yaml:[0-9]+: unknown key 'note' in the policy of subject sandbox-a, ignored" \
	"$FW_LOG"

echo "# readiness follows the pins"
PIN=$BPFFS/fastwall_dispatch
MAP_ID=$(bpftool map show pinned "$PIN" | sed -n 's/^\([0-9]*\):.*/\1/p')
rm -f "$PIN"
check_eq "fastwall_dispatch unpinned: /readyz 503 with the reason" "$(get /readyz)" \
	"503 not ready: the maps are not pinned under $BPFFS"
check_eq "/healthz still 200" "$(get /healthz)" "200 ok"
bpftool map pin id "$MAP_ID" "$PIN"
check_eq "pinned again: /readyz 200" "$(get /readyz)" "200 ready"

echo "# the scrape text"
fw_ns "$NS_POD" curl -s --max-time 3 "http://$METRICS/metrics" >"$FW_TMP/scrape.txt"
check "promtool check metrics: no complaint" bash -c "promtool check metrics <'$FW_TMP/scrape.txt'"
scraped() { awk -v n="$1" '$1 == n { print $2 }' "$FW_TMP/scrape.txt"; }
# every family served is in the metrics table of operations.md by its
# whole name (a grep for it finds it), as `NAME` or `NAME{labels}`
undocumented=$(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$FW_TMP/scrape.txt" | sort -u |
	while read -r m; do
		grep -qE "^\|.*\`$m(\{[a-z_,]*\})?\`" "$FW_ROOT/docs/operations.md" || echo "$m"
	done)
check_eq "every metric served is named in full in operations.md's table" "$undocumented" ""
check_ge "(families checked)" "$(grep -c '^# TYPE ' "$FW_TMP/scrape.txt")" 30
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
	process_open_fds process_max_fds process_start_time_seconds; do
	check "$m is served" test -n "$(scraped "$m")"
done
check_ge "process_open_fds counts fastwalld's descriptors (at least its maps)" \
	"$(scraped process_open_fds)" 10
check_eq "process_max_fds is its soft limit" "$(scraped process_max_fds)" \
	"$(awk '/^Max open files/ { print $4 }' "/proc/$FW_DAEMON_PID/limits")"
check "process_start_time_seconds is fastwalld's start (within 5 s of it)" \
	awk -v t="$(scraped process_start_time_seconds)" -v s="$STARTED_S" 'BEGIN { exit !(t > s - 5 && t <= s + 1) }'
START_TS=$(scraped fastwall_config_last_reload_success_timestamp_seconds)
check_eq "fastwall_config_last_reload_successful 1 after the start" \
	"$(scraped fastwall_config_last_reload_successful)" 1
check "fastwall_config_last_reload_success_timestamp_seconds is the start's" \
	awk -v t="$(scraped fastwall_config_last_reload_success_timestamp_seconds)" -v s="$STARTED_S" \
	'BEGIN { exit !(t >= s - 5 && t <= s + 5) }'
check "Content-Type is the 0.0.4 text format" bash -c \
	"nsenter --net=/run/netns/$NS_POD curl -s -o /dev/null -D - http://$METRICS/metrics |
	grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8'"
check "build info names the version --version prints" bash -c \
	"grep -qx \"fastwall_build_info{version=\\\"\$('$FASTWALLD' --version | cut -d' ' -f2)\\\",abi=\\\"[0-9]*\\\"} 1\" '$FW_TMP/scrape.txt'"

echo "# Prometheus"
cat >"$FW_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: fastwall
    static_configs:
      - targets: ['$METRICS']
EOF
mkdir -p "$FW_TMP/tsdb"
fw_bg "$NS_POD" prometheus --config.file="$FW_TMP/prometheus.yml" \
	--storage.tsdb.path="$FW_TMP/tsdb" --web.listen-address="$PROM" --log.level=warn
fw_eventually 30 fw_ns "$NS_POD" curl -sf --max-time 1 "http://$PROM/-/ready" -o /dev/null ||
	fw_die "prometheus did not start: $(tail -5 "$FW_TMP/bg.log")"

# q EXPR: the value of an instant query's first sample, "none" when empty
q() {
	fw_ns "$NS_POD" curl -s --max-time 3 "http://$PROM/api/v1/query" \
		--data-urlencode "query=$1" | "$FW_PY" -S -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "none")
except Exception:
    print("error")'
}
# check_q DESC EXPR WANT: the query reaches WANT within 10 s (scrapes
# come every second)
check_q() {
	local got
	for _ in $(seq 50); do
		got=$(q "$2")
		[ "$got" = "$3" ] && break
		sleep 0.2
	done
	check_eq "$1" "$got" "$3"
}
check_q "the target is up" 'up{job="fastwall"}' 1

echo "# map fill"
# what bpftool counts in the pins now (nothing has changed them since the
# start, when the first walk ran)
DISPATCH_N=$(bpftool -j map dump pinned "$BPFFS/fastwall_dispatch" | "$FW_PY" -c \
	'import json, sys; print(len(json.load(sys.stdin)))')
DISPATCH_MAX=$(bpftool -j map show pinned "$BPFFS/fastwall_dispatch" | "$FW_PY" -c \
	'import json, sys; print(json.load(sys.stdin)["max_entries"])')
check_ge "bpftool: the sandbox's entries are in fastwall_dispatch" "$DISPATCH_N" 1
check_q "Prometheus: fastwall_dispatch fill = bpftool's $DISPATCH_N" \
	'fastwall_map_entries{map="fastwall_dispatch"}' "$DISPATCH_N"
check_q "Prometheus: fastwall_dispatch capacity = bpftool's $DISPATCH_MAX" \
	'fastwall_map_max_entries{map="fastwall_dispatch"}' "$DISPATCH_MAX"
# every pinned hash map and trie is covered, plus the three counted ones
# fastwalld keeps (two of them hash maps already)
HASHES=$(for f in "$BPFFS"/fastwall_*; do
	echo "${f##*/} $(bpftool -j map show pinned "$f" 2>/dev/null)"
done | "$FW_PY" -c '
import json, sys
names = {"fastwall_learned", "fastwall_conns", "fastwall_subject_meta"}
for line in sys.stdin:
    pin, _, info = line.partition(" ")
    if info.strip() and json.loads(info)["type"] in (
            "hash", "lru_hash", "percpu_hash", "lru_percpu_hash", "lpm_trie"):
        names.add(pin)
print(len(names))')
check_q "Prometheus: a fill for each of the $HASHES hash maps and tries pinned" \
	'count(fastwall_map_entries)' "$HASHES"

echo "# packets"
DENY0=$(fw_counter "drop deny-cidr")
check_eq "no deny-cidr drop before the traffic" "$DENY0" 0
for _ in $(seq $N_ALLOW); do fw_udp "$SB_A" 203.0.113.10 9000 >/dev/null; done
for _ in $(seq $N_DENY); do fw_udp "$SB_A" 198.51.100.66 9000 0.2 >/dev/null; done
check_eq "fastwall status: $N_DENY deny-cidr drops" "$(fw_counter "drop deny-cidr")" "$N_DENY"
check_q "Prometheus: packets{reason=deny-cidr,verdict=drop} = $N_DENY" \
	'fastwall_packets_total{reason="deny-cidr",verdict="drop"}' "$N_DENY"
check_q "Prometheus: sandbox-a's own deny-cidr drops = $N_DENY (metrics.per_subject)" \
	'fastwall_subject_packets_total{subject="sandbox-a",reason="deny-cidr",verdict="drop"}' \
	"$N_DENY"
check_q "Prometheus: per-subject series name the one live subject only" \
	'count(fastwall_subject_packets_total{subject!="sandbox-a"}) or vector(0)' 0
ALLOW_CLI=$(fw_counter "pass allow-cidr")
check_ge "fastwall status: at least $N_ALLOW allow-cidr passes" "$ALLOW_CLI" "$N_ALLOW"
check_q "Prometheus: packets{reason=allow-cidr,verdict=pass} = fastwall status" \
	'fastwall_packets_total{reason="allow-cidr",verdict="pass"}' "$ALLOW_CLI"
check_q "Prometheus: no default-deny drop (none was sent)" \
	'fastwall_packets_total{reason="default-deny"}' 0
check_q "Prometheus: the sandbox's drops are hook=sandbox" \
	'fastwall_packets_total{reason="deny-cidr",verdict="drop",hook="sandbox"}' "$N_DENY"
check_q "Prometheus: the port guard's reasons are hook=guard, and only they" \
	'count(fastwall_packets_total{hook="guard"})' 4
check_q "... so a sum of the sandboxes' drops leaves the guard's out" \
	'count(fastwall_packets_total{hook="sandbox",reason=~"guard-.*"}) or vector(0)' 0
check_q "every reason of the table is a series" 'count(fastwall_packets_total)' \
	"$("$FASTWALL" reasons | grep -cE '^[a-z0-9-]+ +(pass|drop) ')"

echo "# DNS"
for _ in $(seq $N_DNS_OK); do
	fw_ns "$SB_A" dig +short +time=2 +tries=1 @10.42.0.1 api.example.com >/dev/null
done
for _ in $(seq $N_DNS_NO); do
	fw_ns "$SB_A" dig +short +time=2 +tries=1 @10.42.0.1 bad.example.com >/dev/null
done
check_q "Prometheus: $N_DNS_OK queries allowed" 'fastwall_dns_decisions_total{verdict="allowed"}' \
	"$N_DNS_OK"
check_q "Prometheus: $N_DNS_NO queries denied" 'fastwall_dns_decisions_total{verdict="denied"}' \
	"$N_DNS_NO"
check_q "Prometheus: $N_DNS_OK NOERROR responses" 'fastwall_dns_responses_total{rcode="NOERROR"}' \
	"$N_DNS_OK"
check_q "Prometheus: $N_DNS_NO NXDOMAIN responses" \
	'fastwall_dns_responses_total{rcode="NXDOMAIN"}' "$N_DNS_NO"
check_q "Prometheus: $((N_DNS_OK + N_DNS_NO)) UDP queries" \
	'fastwall_dns_queries_total{transport="udp"}' $((N_DNS_OK + N_DNS_NO))
check_q "Prometheus: $N_DNS_OK upstream exchanges in the latency histogram" \
	'fastwall_dns_upstream_duration_seconds_count' "$N_DNS_OK"
check_q "Prometheus: all of them under 5 s (the +Inf bucket holds no more)" \
	'fastwall_dns_upstream_duration_seconds_bucket{le="5"}' "$N_DNS_OK"
check_q "Prometheus: the histogram's quantile is a number of seconds below 1" \
	'histogram_quantile(0.5, fastwall_dns_upstream_duration_seconds_bucket) < bool 1' 1
check_q "Prometheus: the answering upstream is up" \
	"fastwall_dns_upstream_up{upstream=\"$UP4:53\"}" 1
check_q "Prometheus: the upstream nothing listens on is down" \
	"fastwall_dns_upstream_up{upstream=\"$DEAD_UP\"}" 0
check_q "Prometheus: two upstreams, as configured" 'count(fastwall_dns_upstream_up)' 2
check_q "Prometheus: probes the answering upstream passed" \
	'fastwall_dns_probes_total{result="ok"} > bool 0' 1
check_q "Prometheus: probes the silent one failed" \
	'fastwall_dns_probes_total{result="failed"} > bool 0' 1
check_q "Prometheus: one learned address held" 'fastwall_learned_addresses' 1
check_q "Prometheus: fastwall_learned fill 1" 'fastwall_map_entries{map="fastwall_learned"}' 1
check_q "Prometheus: the learned address passes (learned)" \
	'fastwall_packets_total{reason="learned"}' 0
fw_udp "$SB_A" 198.51.100.10 9000 >/dev/null
check_q "a datagram to it: packets{reason=learned} = 1" \
	'fastwall_packets_total{reason="learned"}' 1
check_q "Prometheus: DNS to the gateway redirected (dns-proxy passes)" \
	'fastwall_packets_total{reason="dns-proxy"} >= bool '$((N_DNS_OK + N_DNS_NO)) 1

echo "# actions requests"
for _ in $(seq $N_STATUS); do fw_act_req GET /_fastlet/v1/actions/status; done
fw_act_req GET /no-such-path
check_q "Prometheus: $N_STATUS status GETs answered 200" \
	'fastwall_actions_requests_total{path="/_fastlet/v1/actions/status",code="200"}' "$N_STATUS"
check_q "Prometheus: one 404 on another path" \
	'fastwall_actions_requests_total{path="other",code="404"}' 1
fw_act_post '{"not":"an envelope"}'
check_code "a body that is no envelope: 400" 400
fw_act LIFECYCLE_HOOK sb-none --ip 10.42.0.77 --veth sb-none --gw 10.42.0.1 --cidr 10.42.0.0/24 \
	--hook data-plane-ready
ACT_CODE=$FW_ACT_CODE
check_q "Prometheus: one invalid envelope answered 400" \
	'fastwall_actions_operations_total{operation="invalid",code="400"}' 1
check_q "Prometheus: the LIFECYCLE_HOOK counted under its status ($ACT_CODE)" \
	"fastwall_actions_operations_total{operation=\"LIFECYCLE_HOOK\",code=\"$ACT_CODE\"}" 1
check_q "Prometheus: the invalid envelope timed once" \
	'fastwall_actions_request_duration_seconds_count{operation="invalid"}' 1
check_q "Prometheus: the LIFECYCLE_HOOK timed once, under 5 s" \
	'fastwall_actions_request_duration_seconds_bucket{operation="LIFECYCLE_HOOK",le="5"}' 1
check_q "Prometheus: no SET_BINDING timed (none was sent)" \
	'fastwall_actions_request_duration_seconds_count{operation="SET_BINDING"}' 0
check_q "Prometheus: the latency sum is seconds, not nanoseconds" \
	'sum(fastwall_actions_request_duration_seconds_sum) < bool 10' 1
check_q "Prometheus: two POSTs on the actions path" \
	'sum(fastwall_actions_requests_total{path="/_fastlet/v1/actions"})' 2
check_q "Prometheus: one subject" 'fastwall_subjects' 1
check_q "Prometheus: build info" 'fastwall_build_info' 1

echo "# events"
# pinned to one CPU: the budget is per CPU, and its count of what it left
# out goes with the next event of that CPU
for _ in $(seq $N_FLOOD); do
	taskset -c 0 "$FW_PY" -c 'pass' # warm, so the flood is quick
	fw_ns "$SB_A" taskset -c 0 "$FW_PY" "$FW_PROBE" udp 198.51.100.66 9001 --timeout 0.05 \
		>/dev/null
done
sleep 1.2
fw_ns "$SB_A" taskset -c 0 "$FW_PY" "$FW_PROBE" udp 198.51.100.66 9001 --timeout 0.05 >/dev/null
fw_wait_log "events of subject=sandbox-a suppressed by rate limit" 1 5
SUPP_LOG=$(sed -n 's/.*events of subject=sandbox-a suppressed by rate limit: \([0-9]*\).*/\1/p' \
	"$FW_LOG" | awk '{s += $1} END {print s + 0}')
check_ge "the flood of $N_FLOOD denies was rate limited (the log says $SUPP_LOG left out)" \
	"$SUPP_LOG" 1
check_q "Prometheus: events suppressed = the log's $SUPP_LOG" 'fastwall_events_suppressed_total' \
	"$SUPP_LOG"
check_q "Prometheus: no deny event lost (fastwalld reads the ring)" \
	'fastwall_events_lost_total{type="deny"}' 0
check_q "Prometheus: the lost counter has a series per type" 'count(fastwall_events_lost_total)' 2

echo "# rounds"
UP_S=$(($(date +%s) - STARTED_S))
# the reaper runs every second, the lease refresh every 10 s (and at the
# start); the bounds leave room for a loaded machine and the query's wait
check_q "Prometheus: reaper rounds, about one a second for the ${UP_S} s up" \
	"(fastwall_reaper_round_seconds_count >= bool $((UP_S / 3))) * \
(fastwall_reaper_round_seconds_count <= bool $((UP_S + 12)))" 1
check_q "Prometheus: refresh rounds, one at the start and one per 10 s" \
	"(fastwall_refresh_round_seconds_count >= bool 1) * \
(fastwall_refresh_round_seconds_count <= bool $((UP_S / 10 + 3)))" 1
check_q "Prometheus: the last reaper round took seconds, not nanoseconds" \
	'fastwall_reaper_last_round_seconds < bool 1' 1
check_q "Prometheus: the refresh's sum holds its last round" \
	'fastwall_refresh_round_seconds_sum >= bool fastwall_refresh_last_round_seconds' 1

echo "# readiness follows the attachment"
check_q "Prometheus: one interface attached (sb-a)" 'fastwall_interfaces_attached' 1
check_eq "/readyz 200 before" "$(get /readyz)" "200 ready"
fw_ns "$NS_POD" tc filter del dev sb-a ingress pref 4005
check_eq "fastwall's filter removed from sb-a behind its back: /readyz 503 naming the port" \
	"$(get /readyz)" \
	"503 not ready: the programs are not attached to sb-a (ifindex $(ip -n "$NS_POD" -o link show sb-a | cut -d: -f1))"
get /readyz >/dev/null
check_fails "... which logs no libbpf warning of the filter it did not find" \
	grep -q "Cannot find specified filter chain" "$FW_LOG"
check_fails "fastwalld's log never says libbpf twice on a line" grep -q "libbpf: libbpf:" "$FW_LOG"

echo "# liveness: a heartbeat of the main loop and of every DNS proxy worker"
check_eq "/healthz: 200 ok while every loop turns" "$(get /healthz)" "200 ok"
dns_tid=$(grep -l '^fw-dns-0$' /proc/"$FW_DAEMON_PID"/task/*/comm 2>/dev/null | head -n1 | cut -d/ -f5)
check "the DNS proxy's worker 0 is a named thread (fw-dns-0)" test -n "$dns_tid"
stall() { # TID: stopped for 13 s, the other threads running; /healthz meanwhile
	local tid=$1 out
	"$FW_PY" "$FW_ROOT/tests/e2e/stall.py" "$tid" 13 >"$FW_TMP/stall.out" 2>&1 &
	local pid=$!
	sleep 11.5
	out=$(get /healthz)
	wait "$pid"
	echo "$out"
}
out=$(stall "$FW_DAEMON_PID")
echo "# /healthz: $out; $(cat "$FW_TMP/stall.out")"
check "the main loop stopped for 11 s: /healthz 503 naming it" \
	grep -qE '^503 not live: the main loop has not turned for 1[0-3]\.[0-9] s$' <<<"$out"
check "... 200 again once it turns" fw_eventually 3 sh -c "[ \"\$(nsenter --net=/run/netns/$NS_POD curl -s http://$METRICS/healthz)\" = ok ]"
if [ -n "$dns_tid" ]; then
	out=$(stall "$dns_tid")
	check "DNS proxy worker 0 stopped for 11 s: /healthz 503 naming it" \
		grep -qE '^503 not live: DNS proxy worker 0 has not turned for 1[0-3]\.[0-9] s$' <<<"$out"
	check "... 200 again once it turns" fw_eventually 3 sh -c "[ \"\$(nsenter --net=/run/netns/$NS_POD curl -s http://$METRICS/healthz)\" = ok ]"
fi

echo "# reload"
write_config 'metrics:
  listen: 127.0.0.1:9465'
fw_reload
check "a reload that moves metrics.listen: warned, kept until a restart" \
	fw_wait_log "metrics.listen changes only on restart; keeping '$METRICS'" 1 2
check_eq "still served on $METRICS" "$(get /healthz)" "200 ok"
check "a reload that drops metrics.per_subject: warned, kept until a restart" \
	fw_wait_log "metrics.per_subject changes only on restart" 1 2
check "the per-subject series are still served" \
	bash -c "nsenter --net=/run/netns/$NS_POD curl -s http://$METRICS/metrics |
	grep -q '^fastwall_subject_packets_total{subject=\"sandbox-a\"'"

live() { fw_ns "$NS_POD" curl -s --max-time 3 "http://$METRICS/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
ok_ts=$(live fastwall_config_last_reload_success_timestamp_seconds)
check "a successful reload moves fastwall_config_last_reload_success_timestamp_seconds" \
	awk -v a="$ok_ts" -v s="$START_TS" 'BEGIN { exit !(a > s) }'
cp "$FW_CFG" "$FW_TMP/good.yaml"
echo 'datapath: { nosuchkey: 1 }' >>"$FW_CFG"
fw_reload
check "a rejected reload is logged" fw_wait_log "reload rejected" 1 2
check_eq "... fastwall_config_last_reload_successful 0" "$(live fastwall_config_last_reload_successful)" 0
check_eq "... the last success's time stays" \
	"$(live fastwall_config_last_reload_success_timestamp_seconds)" "$ok_ts"
cp "$FW_TMP/good.yaml" "$FW_CFG"
fw_reload
check "a good reload after it: fastwall_config_last_reload_successful 1 again" \
	fw_eventually 3 sh -c "[ \"\$(nsenter --net=/run/netns/$NS_POD curl -s http://$METRICS/metrics | awk '\$1 == \"fastwall_config_last_reload_successful\" { print \$2 }')\" = 1 ]"

echo "# per_subject off by default"
fw_stop_daemon
write_config ""
fw_start_daemon || fw_die "fastwalld did not start again"
fw_ns "$NS_POD" curl -s --max-time 3 "http://$METRICS/metrics" >"$FW_TMP/scrape2.txt"
check "the scrape still has the totals" grep -q '^fastwall_packets_total{' "$FW_TMP/scrape2.txt"
check_fails "but no per-subject series" grep -q '^fastwall_subject_packets_total' \
	"$FW_TMP/scrape2.txt"

echo "# off"
fw_stop_daemon
write_config 'metrics:
  listen: ""'
fw_start_daemon || fw_die "fastwalld did not start again"
check_eq "metrics.listen \"\": nothing listens" "$(get /healthz | cut -d' ' -f1)" "000"
check_eq "the start with it off logged no metrics listener" "$(fw_log_count 'metrics on http')" 2

echo "# the port taken"
fw_stop_daemon
write_config ""
# SO_REUSEADDR: the scrapes left connections in TIME_WAIT on the port
fw_bg "$NS_POD" "$FW_PY" -c 'import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9464))
s.listen()
time.sleep(120)'
fw_eventually 5 fw_ns "$NS_POD" bash -c "ss -Hltn 'sport = :9464' | grep -q 9464" ||
	fw_die "the stand-in listener on $METRICS did not start: $(tail -3 "$FW_TMP/bg.log")"
fw_start_daemon
check "another process on $METRICS: fastwalld still starts and enforces" \
	fw_udp "$SB_A" 203.0.113.10 9000
check "and says why nothing of it answers there" fw_wait_log \
	"can't listen on $METRICS for metrics: Address already in use" 1 1
check "running without the listener" fw_wait_log "running without the metrics listener" 1 1

fw_summary
