#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: fastwalld's side of layer-7 pinning, with a stand-in for
# nginx (l7_fake_nginx.py) in place of the proxy module: the l7 section's
# mistakes refused by `fastwalld check`; the proxy started as l7.user with
# CAP_BPF alone, its maps read-only and its report socket on the
# descriptors nginx.conf names; FW_CF_L7_UP and /readyz while it accepts
# and not once it is killed; its restart with the count in
# fastwall_l7_restarts_total; its reports as counters (every reason at 0
# first), monitor events and audit records of denials with the server
# name; FW_SF_L7 in a subject's dispatch value from l7.default, the
# subject's l7 and a reload; the reloadable keys (quic) applied, the
# restart-only ones (workers) kept with a warning; the proxy stopped
# (SIGQUIT) when fastwalld stops. With the real module built
# (build/l7/ngx_fastwall_l7_module.so), the real nginx runs the generated
# configuration under fastwalld, accepts, and its report of a connection
# no redirect recorded is counted and audited. Credentials: the CA
# generated in l7.ca.dir with its modes, bundle.crt and GET /l7/ca.crt,
# the placeholder and upstream files, its expiry metric; a module without
# the injection directives gets part 1's nginx.conf and a warning; one with
# them (a stand-in file naming them) gets the part-2 lines, the vaults'
# maps on 8 and 9, the CA's pipe on 10 and CAP_IPC_LOCK; the maps follow
# vault pushes, patches, deletes, a rebind and a removal, and refuse what
# they cannot hold; an exposed ca.key stops fastwalld; credentials off
# serves no CA.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
for t in bpftool pgrep; do
	command -v "$t" >/dev/null || fw_die "$t not found"
done
id nobody >/dev/null 2>&1 || fw_die "no user nobody"

METRICS=127.0.0.1:9464
RUNDIR=$FW_TMP/l7run
CADIR=$FW_TMP/l7-ca
# the stand-in and its records: readable (and its state writable) by
# nobody, who runs it
FAKE=$FW_TMP/fake
chmod 0711 "$FW_TMP"
mkdir -p "$FAKE/state"
chmod 0755 "$FAKE"
chmod 0777 "$FAKE/state"
cp "$FW_E2E_DIR/l7_fake_nginx.py" "$FAKE/"
cat >"$FAKE/nginx" <<EOF
#!/bin/sh
exec $FW_PY $FAKE/l7_fake_nginx.py --state $FAKE/state "\$@"
EOF
chmod 0755 "$FAKE/nginx" "$FAKE/l7_fake_nginx.py"
# a module of pinning alone (none of injection's directives): the first
# part runs with it; the real one and a stand-in that injects come later
printf 'fastwall_l7_maps fastwall_l7_pin\n' >"$FAKE/part1.so"

# --- the l7 section's mistakes: refused, with the key ------------------------

bad() { # DESC WANT YAML
	printf '%s\n' "$3" >"$FW_TMP/bad.yaml"
	if "$FASTWALLD" -c "$FW_TMP/bad.yaml" check >"$FW_TMP/bad.out" 2>&1; then
		fw_not_ok "$1: accepted"
	elif grep -qF -- "$2" "$FW_TMP/bad.out"; then
		fw_ok "$1"
	else
		fw_not_ok "$1 (want '$2')"
		sed 's/^/#   /' "$FW_TMP/bad.out"
	fi
}
bad "check refuses a port in both lists" "port 80 is in both l7.tls_ports and l7.http_ports" \
	'l7: {enabled: true, tls_ports: [443, 80]}'
bad "check refuses equal proxy ports" "l7.proxy_tls_port and l7.proxy_http_port are both 15080" \
	'l7: {proxy_tls_port: 15080}'
bad "check refuses a proxy port that is dns.port" "may not be dns.port (15353)" \
	'l7: {enabled: true, proxy_tls_port: 15353}'
printf 'dns: {proxy: false}\nl7: {enabled: true}\n' >"$FW_TMP/warn.yaml"
check "check warns of l7 without the DNS proxy, and accepts it" bash -c \
	"'$FASTWALLD' -c '$FW_TMP/warn.yaml' check 2>&1 | grep -qF 'l7.enabled without dns.proxy'"
bad "check refuses an unknown l7 key" "unknown key in l7" 'l7: {enable: true}'
bad "check refuses a subject's l7 that is not on or off" 'invalid l7 "sometimes"' \
	'subjects:
  - {name: a, addresses: [10.0.0.2], l7: sometimes}'
check "check accepts the section" bash -c \
	"printf 'l7: {enabled: true, tls_ports: [443, 8443], default: off}\n' >'$FW_TMP/good.yaml' &&
	 '$FASTWALLD' -c '$FW_TMP/good.yaml' check"

# --- the daemon with the stand-in ---------------------------------------------

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4

# l7.default off: sandbox-a pinned by its own word, sandbox-b not
write_config() { # EXTRA_L7 A_L7
	cat >"$FW_CFG" <<EOF
datapath:
  bpffs: $BPFFS
  bridges: [br0]
dns:
  upstreams: [198.51.100.53]
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_TMP/vault.sock
l7:
  enabled: true
  default: off
  nginx: $FAKE/nginx
  module: $FAKE/part1.so
  runtime_dir: $RUNDIR
  user: nobody
  ca:
    dir: $CADIR
$1
subjects:
$(fw_subject_yaml a 2 v4)
    l7: $2
$(fw_subject_yaml b 3 v4)
EOF
}
write_config "" on

get() { # PATH: "CODE BODY" of the metrics listener
	local f=$FW_TMP/get.body code
	: >"$f"
	code=$(fw_ns "$NS_POD" curl -s -o "$f" -w '%{http_code}' --max-time 3 \
		"http://$METRICS$1" 2>/dev/null) || code=${code:-000}
	echo "$code $(<"$f")"
}
metric() { # NAME{LABELS}: its value in a scrape ("" when absent)
	get /metrics | awk -v m="$1" '$1 == m { print $2 }'
}
config_flags() { # fastwall_config's flags (the value's first u32)
	bpftool -j map dump pinned "$BPFFS/fastwall_config" | "$FW_PY" -c '
import json, sys
v = bytes(int(x, 16) for x in json.load(sys.stdin)[0]["value"])
print(int.from_bytes(v[:4], "little"))'
}
dispatch_flags() { # ADDRESS: the flags of its fastwall_dispatch value (byte 5)
	bpftool -j map dump pinned "$BPFFS/fastwall_dispatch" | "$FW_PY" -c '
import ipaddress, json, sys
want = b"\0" * 10 + b"\xff\xff" + ipaddress.ip_address(sys.argv[1]).packed
for e in json.load(sys.stdin):
    if bytes(int(x, 16) for x in e["key"]) == want:
        print(bytes(int(x, 16) for x in e["value"])[5])
        break
else:
    print("none")' "$1"
}
starts() { find "$FAKE/state" -name 'start.*' | wc -l; }
started() { [ "$(starts)" -ge "$1" ]; } # N: the proxy started N times at least
proxy_pid() { # the running stand-in's pid (its newest start record)
	local f
	f=$(find "$FAKE/state" -name 'start.*' -printf '%T@ %p\n' | sort -n | tail -n1 | cut -d' ' -f2)
	echo "${f##*.}"
}
up_flag() { [ $(($(config_flags) & 128)) -ne 0 ]; }
not_up() { ! up_flag; }
metric_is() { [ "$(metric "$1")" = "$2" ]; } # NAME VALUE

fw_start_daemon || fw_die "fastwalld did not start"
# a data plane without the proxy's own map yet (before the data path's
# layer-7 maps): give it one, as the data path will, and the proxy starts
# on its next try
if [ ! -e "$BPFFS/fastwall_l7_nat" ]; then
	bpftool map create "$BPFFS/fastwall_l7_nat" type hash key 20 value 40 entries 1024 \
		name fastwall_l7_nat flags 1
fi
fw_eventually 20 started 1 || fw_die "the proxy never started; log: $(tail -n 20 "$FW_LOG")"
PID1=$(proxy_pid)
REC=$FAKE/state/start.$PID1

check "the log says the proxy started, as nobody" \
	grep -qE "l7 proxy started: $FAKE/nginx \(pid [0-9]+\) as nobody" "$FW_LOG"
check_eq "it runs as nobody" "$(awk '$1 == "uid" { print $2 }' "$REC")" "$(id -u nobody)"
# CAP_BPF is bit 39: 0x8000000000, nothing else
check_eq "its one effective capability is CAP_BPF" "$(awk '$1 == "cap_eff" { print $2 }' "$REC")" 8000000000
check_eq "... and ambient, so it survives exec" "$(awk '$1 == "cap_amb" { print $2 }' "$REC")" 8000000000
check_eq "the four maps are BPF maps opened read-only" "$(awk '$1 == "maps" { print $2 }' "$REC")" ro,ro,ro,ro
check_eq "the report descriptor is a datagram socket" "$(awk '$1 == "report" { print $2 }' "$REC")" dgram
check_ge "it listens on both proxy ports" "$(awk '$1 == "listen" { print $2 }' "$REC")" 2
check "its stderr is in fastwalld's log with a prefix" \
	fw_wait_log "l7 proxy: \[notice\] $PID1#$PID1: fake nginx listening" 1 5

CONF=$RUNDIR/nginx.conf
check_eq "nginx.conf is root's, mode 0644" "$(stat -c '%U %a' "$CONF")" "root 644"
check_eq "the runtime directory is root's, mode 0755" "$(stat -c '%U %a' "$RUNDIR")" "root 755"
check_eq "var/ is the proxy's, mode 0700" "$(stat -c '%U %a' "$RUNDIR/var")" "nobody 700"
for line in "load_module /usr/lib/nginx/modules/ngx_stream_module.so;" \
	"load_module $FAKE/part1.so;" "daemon off;" \
	"worker_processes 1;" "pid $RUNDIR/var/nginx.pid;" "fastwall_l7_maps fd:3,4,5,6;" \
	"fastwall_l7_report fd:7;" "fastwall_l7_ech deny;" \
	"fastwall_l7_subject_connections 1024;" "worker_connections 8224;" "listen 15443;" \
	"ssl_preread on;" "fastwall_l7_pin tls;" "proxy_pass \$fastwall_l7_upstream;" \
	"listen 15080;" "fastwall_l7_pin http;" "proxy_pass http://\$fastwall_l7_upstream;"; do
	check "nginx.conf: $line" grep -qF -- "$line" "$CONF"
done

# --- credentials with a module that cannot inject: the CA, no part-2 lines ----

check_eq "l7.ca.dir is root's, 0700" "$(stat -c '%U %a' "$CADIR")" "root 700"
check_eq "ca.key: generated, root's, 0600" "$(stat -c '%U %a' "$CADIR/ca.key")" "root 600"
check_eq "ca.crt: root's, 0644" "$(stat -c '%U %a' "$CADIR/ca.crt")" "root 644"
check_eq "bundle.crt: root's, 0644" "$(stat -c '%U %a' "$CADIR/bundle.crt")" "root 644"
check "ca.crt is a CA: CA:TRUE, pathlen 0" bash -c \
	"openssl x509 -in '$CADIR/ca.crt' -noout -text | grep -q 'CA:TRUE, pathlen:0'"
check "... named fastwall layer-7 CA <hostname>" bash -c \
	"openssl x509 -in '$CADIR/ca.crt' -noout -subject | grep -qF 'CN = fastwall layer-7 CA $(hostname | cut -c1-43)'"
check "the log says the module lacks the credential directives" \
	grep -qE "l7 proxy: the module .* lacks .*: credentials are NOT injected" "$FW_LOG"
check_fails "... so nginx.conf has no credential lines" grep -q "fastwall_l7_vaults\|terminate" "$CONF"
check_eq "placeholder.key: root's, the proxy's group may read it (0640)" \
	"$(stat -c '%U %G %a' "$RUNDIR/tls/placeholder.key")" "root $(id -gn nobody) 640"
check_eq "placeholder.crt: root's, the proxy's group may read it (0640)" \
	"$(stat -c '%U %G %a' "$RUNDIR/tls/placeholder.crt")" "root $(id -gn nobody) 640"
check_eq "the directory of the TLS files: root's, 0755 (the proxy cannot swap them)" \
	"$(stat -c '%U %a' "$RUNDIR/tls")" "root 755"
check_eq "upstream-ca.crt: root's, 0644" "$(stat -c '%U %a' "$RUNDIR/tls/upstream-ca.crt")" "root 644"
check "upstream-ca.crt: the system store" bash -c \
	"cmp -s <(head -c 4096 /etc/ssl/certs/ca-certificates.crt) <(head -c 4096 '$RUNDIR/tls/upstream-ca.crt')"
fw_act_req GET /l7/ca.crt
check_eq "GET /l7/ca.crt: 200" "$FW_ACT_CODE" 200
check "... the bundle, byte for byte" cmp -s "$FW_TMP/act.body" "$CADIR/bundle.crt"
check "... Content-Type application/x-pem-file" grep -qi '^content-type: application/x-pem-file' "$FW_TMP/act.hdrs"
fw_act_req POST /l7/ca.crt
check_eq "POST /l7/ca.crt: 405" "$FW_ACT_CODE" 405
NOT_AFTER=$(date -d "$(openssl x509 -in "$CADIR/ca.crt" -noout -enddate | cut -d= -f2)" +%s)
check_eq "fastwall_l7_ca_expiry_seconds is its notAfter" "$(metric fastwall_l7_ca_expiry_seconds)" "$NOT_AFTER"
check_eq "fastwall_l7_vaults 0" "$(metric fastwall_l7_vaults)" 0
KEYLINE=$(sed -n 2p "$CADIR/ca.key")
check_fails "the CA key is in no log line" grep -qF -- "$KEYLINE" "$FW_LOG"
CA_SUM=$(sha256sum <"$CADIR/ca.crt")

check "FW_CF_L7_UP once the proxy accepts" fw_eventually 5 up_flag
check "FW_CF_L7 is set" test $(($(config_flags) & 64)) -ne 0
check "FW_CF_L7_QUIC is not (quic: deny)" test $(($(config_flags) & 256)) -eq 0
ready() { [ "$(get /readyz)" = "200 ready" ]; }
check "/readyz: 200 ready while it accepts" fw_eventually 5 ready
check_eq "fastwall_l7_up 1" "$(metric fastwall_l7_up)" 1
for r in l7-pinned l7-name l7-no-name l7-ech l7-bad-hello l7-lease l7-untracked-peer l7-limit \
	l7-upstream-failed l7-injected l7-misdirected l7-upstream-cert l7-no-cert; do
	check_eq "fastwall_l7_connections_total{reason=\"$r\"} is there at 0" \
		"$(metric "fastwall_l7_connections_total{reason=\"$r\"}")" 0
done
check_eq "fastwall_l7_active_connections 0" "$(metric fastwall_l7_active_connections)" 0
check_eq "fastwall_l7_restarts_total 0" "$(metric fastwall_l7_restarts_total)" 0
if command -v promtool >/dev/null; then
	fw_ns "$NS_POD" curl -s --max-time 3 "http://$METRICS/metrics" >"$FW_TMP/scrape.txt"
	check "promtool check metrics: no complaint" bash -c "promtool check metrics <'$FW_TMP/scrape.txt'"
else
	echo "# promtool not found: the scrape's lint is not checked"
fi

# --- subjects: FW_SF_L7 (4) from default off and each subject's own l7 -------

check_eq "sandbox-a (l7: on): FW_SF_L7 with its gateway flag" "$(dispatch_flags 10.42.0.2)" 5
check_eq "sandbox-b (says nothing, default off): no FW_SF_L7" "$(dispatch_flags 10.42.0.3)" 1

# --- the actions protocol's fastwallL7 -----------------------------------------

NET_C=(--ip 10.42.0.4 --veth sb-c --gw 10.42.0.1 --cidr 10.42.0.0/24)
fw_act SET_BINDING u-c "${NET_C[@]}" --input '{"defaultAction":"deny","fastwallL7":"maybe"}'
check_eq "SET_BINDING with fastwallL7 \"maybe\": 400 naming it" "$FW_ACT_CODE $FW_ACT_BODY" \
	'400 invalid action envelope: invalid binding.input: fastwallL7: invalid l7 "maybe", expected on or off'
check_eq "... nothing in dispatch for 10.42.0.4" "$(dispatch_flags 10.42.0.4)" none
fw_act SET_BINDING u-c "${NET_C[@]}" --input '{"defaultAction":"deny","fastwallL7":"on"}'
check_eq "SET_BINDING with fastwallL7 \"on\": 200" "$FW_ACT_CODE" 200
check_eq "... denying (no policy yet): no FW_SF_L7" "$(dispatch_flags 10.42.0.4)" 1
fw_act LIFECYCLE_HOOK u-c "${NET_C[@]}" --hook data-plane-ready --inv inv-c-1
check_eq "data-plane-ready: 200" "$FW_ACT_CODE" 200
check_eq "... active, u-c (default off, its policy on): FW_SF_L7" "$(dispatch_flags 10.42.0.4)" 5

# --- reports: counters, the monitor, the audit trail -----------------------------

"$FASTWALL" monitor --socket "$FW_MON_SOCK" --kind l7 >"$FW_TMP/mon.out" 2>"$FW_TMP/mon.err" &
FW_PIDS+=("$!")
fw_wait_log 'monitor: a reader connected' 1 5 || fw_die "the monitor reader did not connect"
SUBJ_A=$(fw_cli subjects | awk '$2 == "sandbox-a" { print $1 }')
# the pinned connection's verdict alone first: it is open
echo "verdict 0 $SUBJ_A 10.42.0.2 40001 203.0.113.10 443 tls api.example.com" >"$FAKE/state/reports"
chmod 0644 "$FAKE/state/reports"
kill -USR1 "$PID1"
check "a pinned verdict counts l7-pinned" fw_eventually 5 \
	metric_is 'fastwall_l7_connections_total{reason="l7-pinned"}' 1
check_eq "... and it is open: fastwall_l7_active_connections 1" \
	"$(metric fastwall_l7_active_connections)" 1
cat >"$FAKE/state/reports" <<EOF
verdict 1 $SUBJ_A 10.42.0.2 40002 203.0.113.10 443 tls evil.example.net
verdict 2 $SUBJ_A 10.42.0.2 40003 203.0.113.10 80 http
close 10.42.0.2 40001 203.0.113.10 443 tls 517 4096
EOF
kill -USR1 "$PID1"
check "a denial counts l7-name" fw_eventually 5 \
	metric_is 'fastwall_l7_connections_total{reason="l7-name"}' 1
check_eq "l7-no-name 1" "$(metric 'fastwall_l7_connections_total{reason="l7-no-name"}')" 1
check_eq "the close: no connection open" "$(metric fastwall_l7_active_connections)" 0
check_eq "bytes up" "$(metric 'fastwall_l7_bytes_total{direction="up"}')" 517
check_eq "bytes down" "$(metric 'fastwall_l7_bytes_total{direction="down"}')" 4096
check "the audit trail has the denial with its server name" grep -qE \
	"audit deny subject=sandbox-a reason=l7-name proto=tls src=10.42.0.2 sport=40002 dst=203.0.113.10 dport=443 name=evil.example.net" \
	"$FW_LOG"
check "... and the one without a Host" grep -qE \
	"audit deny subject=sandbox-a reason=l7-no-name proto=http .* name=-" "$FW_LOG"
check_fails "no audit record of the pinned connection" grep -q "audit deny .*api.example.com" "$FW_LOG"
check "the monitor shows the denial" fw_eventually 5 grep -qF \
	"sandbox-a 10.42.0.2:40002 -> 203.0.113.10:443 L7 tls evil.example.net DENIED (l7-name)" \
	"$FW_TMP/mon.out"
check "... and the pinned one" grep -qF \
	"sandbox-a 10.42.0.2:40001 -> 203.0.113.10:443 L7 tls api.example.com ALLOWED (l7-pinned)" \
	"$FW_TMP/mon.out"
check_fails "the probes' connections are in none of it" grep -q "127.0.0.1" "$FW_TMP/mon.out"

# --- the proxy killed: down at once, then started again ----------------------------

kill -KILL "$PID1"
check "its end is logged" fw_wait_log "l7 proxy \(pid $PID1\) killed by signal 9" 1 5
check "FW_CF_L7_UP cleared" fw_eventually 2 not_up
check "started again" fw_eventually 10 started 2
PID2=$(proxy_pid)
check "a new process" test "$PID2" != "$PID1"
check "up again" fw_eventually 5 up_flag
check_eq "fastwall_l7_restarts_total 1" "$(metric fastwall_l7_restarts_total)" 1

# the proxy down for good (its binary gone): 503 naming it, FW_CF_L7_UP off
mv "$FAKE/nginx" "$FAKE/nginx.away"
kill -KILL "$PID2"
not_ready() { get /readyz | grep -q '^503 not ready: the layer-7 proxy is not accepting'; }
check "/readyz 503 names the proxy while it is down" fw_eventually 5 not_ready
check_eq "fastwall_l7_up 0" "$(metric fastwall_l7_up)" 0
check_fails "FW_CF_L7_UP is off" up_flag
check "the failed start is in the log" fw_wait_log "l7 proxy: can't set up its exec|exited with status 127" 1 5
mv "$FAKE/nginx.away" "$FAKE/nginx"
check "back once it can start (within the backoff)" fw_eventually 20 up_flag
PID3=$(proxy_pid)

# --- reload: quic and a subject's l7 apply, workers waits for a restart -----------

write_config "  quic: allow
  workers: 3" off
fw_reload
check "reload: FW_CF_L7_QUIC (quic: allow) applied" test $(($(config_flags) & 256)) -ne 0
check "reload: l7.workers is restart-only, kept with a warning" \
	grep -qF "l7.workers changes only on restart; keeping '1'" "$FW_LOG"
check_eq "reload: sandbox-a (l7: off) loses FW_SF_L7" "$(dispatch_flags 10.42.0.2)" 1
check "the proxy was not restarted by the reload" kill -0 "$PID3"
check "still up" up_flag

# --- stop: the proxy goes with fastwalld ---------------------------------------------

fw_stop_daemon
check "the proxy got SIGQUIT" test -f "$FAKE/state/stop.$PID3"
check_eq "... and said so" "$(cat "$FAKE/state/stop.$PID3" 2>/dev/null)" "signal SIGQUIT"
check_fails "no proxy is left" kill -0 "$PID3"
check "the log says it stopped" grep -qE "l7 proxy \(pid $PID3\) stopped" "$FW_LOG"
check "FW_CF_L7_UP is off once fastwalld stopped" not_up

# --- the real thing, when the module is built: nginx under fastwalld ---------------

MODULE=$FW_BUILD/l7/ngx_fastwall_l7_module.so
if [ -f "$MODULE" ] && [ -x /usr/sbin/nginx ] &&
	[ -f /usr/lib/nginx/modules/ngx_stream_module.so ]; then
	sed -i "s|^  nginx: .*|  nginx: /usr/sbin/nginx|; s|^  module: .*|  module: $MODULE|; /^  workers: 3$/d" "$FW_CFG"
	n0=$(fw_log_count 'l7 proxy started: /usr/sbin/nginx')
	fw_start_daemon || fw_die "fastwalld did not start with the real proxy"
	check "nginx with the module starts under fastwalld" \
		fw_wait_log 'l7 proxy started: /usr/sbin/nginx \(pid [0-9]+\) as nobody' $((n0 + 1)) 10
	check "... reads the generated configuration and accepts: FW_CF_L7_UP" fw_eventually 10 up_flag
	check "/readyz: 200 ready" fw_eventually 5 ready
	NGINX_PID=$(cat "$RUNDIR/var/nginx.pid" 2>/dev/null || echo 0)
	check "its pid file is in var/" test "$NGINX_PID" -gt 0
	check_eq "its master runs as nobody" "$(ps -o user= -p "$NGINX_PID" | tr -d ' ')" nobody
	check "no error of its own in the log" bash -c "! grep -E 'l7 proxy: .*\[(emerg|alert|crit)\]' '$FW_LOG'"
	WORKERS=$(pgrep -g "$NGINX_PID" | grep -vx "$NGINX_PID" | tr '\n' ' ')
	check "its workers are in its process group" test -n "$WORKERS"
	# the master killed: its workers go too, and the next one can bind
	kill -KILL "$NGINX_PID"
	check "nginx killed: its workers are gone too" fw_eventually 5 bash -c "! pgrep -g $NGINX_PID >/dev/null"
	check "nginx started again and accepting" fw_eventually 15 bash -c \
		"[ -s '$RUNDIR/var/nginx.pid' ] && [ \"\$(cat '$RUNDIR/var/nginx.pid')\" != $NGINX_PID ]"
	check "... FW_CF_L7_UP again" fw_eventually 10 up_flag
	NGINX_PID=$(cat "$RUNDIR/var/nginx.pid")
	# a ClientHello on a connection no redirect recorded: refused by the
	# proxy, reported, counted
	fw_ns "$NS_POD" "$FW_PY" -c '
import socket, ssl
s = socket.create_connection(("10.42.0.1", 15443), 2)
c = ssl.create_default_context()
try:
    c.wrap_socket(s, server_hostname="api.example.com")
except (OSError, ssl.SSLError):
    pass' >/dev/null 2>&1 || true
	check "a connection no redirect recorded: l7-untracked-peer" fw_eventually 5 \
		metric_is 'fastwall_l7_connections_total{reason="l7-untracked-peer"}' 1
	check "... in the audit trail, no subject and no original destination" grep -qE \
		"audit deny subject=- reason=l7-untracked-peer proto=tls src=10.42.0.1 sport=[0-9]+ dst=- dport=0" "$FW_LOG"
	fw_stop_daemon
	check "nginx stopped with fastwalld" fw_eventually 5 bash -c "! kill -0 $NGINX_PID 2>/dev/null"
	check "the log says it stopped" grep -qE "l7 proxy \(pid [0-9]+\) stopped" "$FW_LOG"
else
	echo "# the module is not built (build/l7/ngx_fastwall_l7_module.so) or nginx is missing: the real proxy is not run"
fi

# --- credentials with a module that injects (its directives stood in) ----------------

# the stand-in reads what the module would; a file that names every
# directive of injection tells fastwalld the module takes them
printf 'fastwall_l7_vaults\0fastwall_l7_ca\0fastwall_l7_terminate_to\0fastwall_l7_origin\0fastwall_l7_keepalive\0fastwall_l7_terminate\0fastwall_l7_sni\0' \
	>"$FAKE/module.so"
sed -i "s|^  nginx: .*|  nginx: $FAKE/nginx|; s|^  module: .*|  module: $FAKE/module.so|" "$FW_CFG"
n0=$(starts)
NOWARN=$(fw_log_count 'credentials are NOT injected')
fw_start_daemon || fw_die "fastwalld did not start with an injecting module"
check "the proxy started" fw_eventually 10 started $((n0 + 1))
INJ=$FAKE/state/start.$(proxy_pid)
check_eq "the CA was kept across the restart" "$(sha256sum <"$CADIR/ca.crt")" "$CA_SUM"
check_eq "no warning of a module that lacks them this time" \
	"$(fw_log_count 'credentials are NOT injected')" "$NOWARN"
for line in "fastwall_l7_vaults fd:8,9;" "fastwall_l7_ca fd:10;" \
	"fastwall_l7_terminate_to unix:$RUNDIR/var/term.sock;" \
	"map \$http_upgrade \$fastwall_l7_connection { default upgrade; \"\" \"\"; }" \
	"upstream fastwall_l7_origin {" "fastwall_l7_origin;" "fastwall_l7_keepalive 64;" \
	"listen unix:$RUNDIR/var/term.sock ssl http2 proxy_protocol;" \
	"ssl_certificate $RUNDIR/tls/placeholder.crt;" \
	"ssl_certificate_key $RUNDIR/tls/placeholder.key;" "ssl_protocols TLSv1.2 TLSv1.3;" \
	"fastwall_l7_terminate on;" \
	"proxy_pass https://fastwall_l7_origin;" "proxy_set_header Host \$host;" \
	"proxy_set_header Upgrade \$http_upgrade;" \
	"proxy_set_header Connection \$fastwall_l7_connection;" "proxy_ssl_server_name on;" \
	"proxy_ssl_name \$fastwall_l7_sni;" "proxy_ssl_verify on;" "proxy_ssl_verify_depth 8;" \
	"proxy_ssl_trusted_certificate $RUNDIR/tls/upstream-ca.crt;"; do
	check "nginx.conf (injecting): $line" grep -qF -- "$line" "$CONF"
done
check "the terminating server comes after the pinned one, in http" bash -c \
	"awk '/fastwall_l7_pin http/ { p = 1 } p && /fastwall_l7_terminate on/ { ok = 1 } END { exit !ok }' '$CONF'"
fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" l7-conf >"$FW_TMP/l7conf.out" 2>/dev/null || true
check "fastwalld l7-conf prints the same configuration" diff -q "$FW_TMP/l7conf.out" "$CONF"
check_eq "descriptor 8: a BPF map opened read-only; 9: the generations (mappable: read-write)" "$(awk '$1 == "vaults" { print $2 }' "$INJ")" ro,rw
check_eq "descriptor 10: a pipe" "$(awk '$1 == "ca" { print $2 }' "$INJ")" pipe
check_eq "... written whole and closed: it reads to its end" "$(awk '$1 == "ca_eof" { print $2 }' "$INJ")" yes
check_eq "... the signing certificate first" "$(awk '$1 == "ca_certs" { print $2 }' "$INJ")" 1
check_eq "... then its key" "$(awk '$1 == "ca_key" { print $2 }' "$INJ")" yes
# CAP_BPF (39) and CAP_IPC_LOCK (14): the module locks its memory
check_eq "its capabilities: CAP_BPF and CAP_IPC_LOCK" "$(awk '$1 == "cap_eff" { print $2 }' "$INJ")" 8000004000
check_eq "... ambient" "$(awk '$1 == "cap_amb" { print $2 }' "$INJ")" 8000004000
check_fails "the vaults' maps are pinned nowhere" bash -c \
	"find '$BPFFS' -name 'fastwall_l7_vault*' | grep -q ."

map_id() { # NAME: the id of the newest map of that name
	bpftool -j map show | "$FW_PY" -c '
import json, sys
ids = [m["id"] for m in json.load(sys.stdin) if m.get("name") == sys.argv[1]]
print(max(ids) if ids else "")' "$1"
}
VAULTS_ID=$(map_id fw_l7_vaults)
GEN_ID=$(map_id fw_l7_vault_gen)
check "fastwall_l7_vaults exists (a hash, never pinned)" test -n "$VAULTS_ID"
check "fastwall_l7_vault_gen exists" test -n "$GEN_ID"
key_of() { # SUBJECT ID: its key's four bytes, for bpftool
	printf '%d %d %d %d' $(($1 & 255)) $((($1 >> 8) & 255)) 0 0
}
gen_of() { # SUBJECT ID: its generation in fastwall_l7_vault_gen
	local k
	read -ra k <<<"$(key_of "$1")"
	bpftool -j map lookup id "$GEN_ID" key "${k[@]}" | "$FW_PY" -c '
import json, sys
print(int.from_bytes(bytes(int(x, 16) for x in json.load(sys.stdin)["value"]), "little"))'
}
blob_has() { # SUBJECT ID TEXT: the subject's blob holds TEXT (its generation = gen_of)
	local k
	read -ra k <<<"$(key_of "$1")"
	bpftool -j map lookup id "$VAULTS_ID" key "${k[@]}" 2>/dev/null | "$FW_PY" -c '
import json, sys
v = bytes(int(x, 16) for x in json.load(sys.stdin)["value"])
gen, ln = int.from_bytes(v[:8], "little"), int.from_bytes(v[8:12], "little")
sys.exit(0 if sys.argv[1].encode() in v[16:16 + ln] and gen == int(sys.argv[2]) else 1)' "$2" "$(gen_of "$1")"
}
no_blob() { # SUBJECT ID: no blob for it
	local k
	read -ra k <<<"$(key_of "$1")"
	! bpftool map lookup id "$VAULTS_ID" key "${k[@]}" >/dev/null 2>&1
}

POL_D='{"defaultAction":"deny","egress":[{"action":"allow","target":"api.example.com"}]}'
fw_act SET_BINDING u-c "${NET_C[@]}" --input "$POL_D"
fw_act LIFECYCLE_HOOK u-c "${NET_C[@]}" --hook data-plane-ready --inv inv-c-2
ID_C=$(fw_cli subjects | awk '$2 == "u-c" { print $1 }')
check "u-c is active with a policy allowing api.example.com" test -n "$ID_C"
SECRET=fw-l7ca-SECRET-$FW_ID-$RANDOM$RANDOM
SECRET2=fw-l7ca-SECRET2-$FW_ID-$RANDOM$RANDOM
APIKEY='{"type":"apiKey","name":"X-Api-Key","credential":"k1"}'
vault() { # VALUE [AUTH JSON]
	printf '{"credentials":[{"name":"k1","source":{"type":"inline","value":"%s"}}],"bindings":[{"name":"b1","match":{"hosts":["api.example.com"]},"auth":%s}]}' \
		"$1" "${2:-$APIKEY}"
}
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary "$(vault "$SECRET")"
check_eq "vault POST: 201" "$FW_ACT_CODE" 201
check "the proxy's map has u-c's vault with the value, under a generation" blob_has "$ID_C" "$SECRET"
G1=$(gen_of "$ID_C")
check "... a generation that is not 0" test "$G1" -gt 0
check_eq "fastwall_l7_vaults 1" "$(metric fastwall_l7_vaults)" 1
# the proxy ends: the next one gets a CA pipe of its own and every vault
# written again
kill -KILL "$(proxy_pid)"
check "the proxy started again" fw_eventually 15 started $((n0 + 2))
INJ2=$FAKE/state/start.$(proxy_pid)
check_eq "... with a CA pipe of its own: certificate and key" \
	"$(awk '$1 == "ca_certs" || $1 == "ca_key" { printf "%s ", $2 }' "$INJ2")" "1 yes "
newer() { [ "$(gen_of "$1")" -gt "$2" ]; } # SUBJECT ID GENERATION
check "... and u-c's vault written again (a newer generation)" fw_eventually 5 newer "$ID_C" "$G1"
check "... with its value" blob_has "$ID_C" "$SECRET"
G1=$(gen_of "$ID_C")
fw_act_req PATCH /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary \
	"{\"credentials\":[{\"name\":\"k1\",\"source\":{\"type\":\"inline\",\"value\":\"$SECRET2\"}}]}"
check_eq "vault PATCH: 200" "$FW_ACT_CODE" 200
check "the map follows the patch: the new value" blob_has "$ID_C" "$SECRET2"
check "... under a newer generation" test "$(gen_of "$ID_C")" -gt "$G1"
G2=$(gen_of "$ID_C")
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary "$(vault "$SECRET\\r\\nX-Evil: 1")"
check_eq "a value with CR LF: 400 naming the credential" "$FW_ACT_CODE $FW_ACT_BODY" \
	'400 invalid credential vault: credential "k1": source.value contains CR, LF or NUL'
check_fails "... and not its value" grep -qF "$SECRET" "$FW_TMP/act.body"
check_eq "... the map unchanged" "$(gen_of "$ID_C")" "$G2"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary \
	"$(vault "$SECRET" '{"type":"basic","credential":"k1"}')"
check_eq "basic with a value that is no user:password: 400" "$FW_ACT_CODE $FW_ACT_BODY" \
	'400 invalid credential vault: binding "b1": auth type basic needs credential "k1" to be user:password'
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary \
	"$(vault "user:$SECRET" '{"type":"basic","credential":"k1"}')"
check_eq "basic with user:password: 201" "$FW_ACT_CODE" 201
B64=$(printf 'user:%s' "$SECRET" | base64 -w0)
check "the map holds Basic base64(user:password)" blob_has "$ID_C" "Basic $B64"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary \
	"$(vault "$SECRET" '{"type":"bearer","credential":"k1"}')"
check_eq "bearer: 201" "$FW_ACT_CODE" 201
check "the map holds Bearer value" blob_has "$ID_C" "Bearer $SECRET"
# 60 KB, bound three times: over what the proxy's map holds
BIG=$(head -c 45000 /dev/zero | base64 -w0 | tr -d '=')
BIGBODY=$(printf '{"credentials":[{"name":"k1","source":{"type":"inline","value":"%s"}}],"bindings":[' "$BIG"
	for i in 1 2 3; do printf '%s{"name":"b%d","match":{"hosts":["api.example.com"]},"auth":{"type":"apiKey","name":"X-Api-Key","credential":"k1"}}' "$([ "$i" = 1 ] || echo ,)" "$i"; done
	printf ']}')
printf '%s' "$BIGBODY" >"$FW_TMP/big.json"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary "@$FW_TMP/big.json"
too_large() { [ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == *"in the layer-7 proxy's encoding, more than its 131056"* ]]; }
check "a vault too large for the proxy's map: 400 saying so" too_large
check "... the one before still in force" blob_has "$ID_C" "Bearer $SECRET"
fw_act_req DELETE /credential-vault -H 'X-Fast-Sandbox-Uid: u-c'
check_eq "vault DELETE: 204" "$FW_ACT_CODE" 204
check_eq "... generation 0" "$(gen_of "$ID_C")" 0
check "... the blob deleted" no_blob "$ID_C"
check_eq "fastwall_l7_vaults 0 again" "$(metric fastwall_l7_vaults)" 0
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-c' --data-binary "$(vault "$SECRET")"
check "pushed again: in the map" blob_has "$ID_C" "$SECRET"
# a new runtime instance (new fence): a new id, the vault moves with it
fw_act SET_BINDING u-c "${NET_C[@]}" --rt rt-2 --input "$POL_D"
ID_C2=$(fw_cli subjects | awk '$2 == "u-c" { print $1 }')
check "a rebind (new fence) gives u-c a new id" test -n "$ID_C2" -a "$ID_C2" != "$ID_C"
check "... its vault is in the map under the new id" blob_has "$ID_C2" "$SECRET"
check_eq "... the old id's generation: 0" "$(gen_of "$ID_C")" 0
check "... the old id's blob deleted" no_blob "$ID_C"
fw_act REMOVE_BINDING u-c "${NET_C[@]}" --rt rt-2
check_eq "REMOVE_BINDING: 200" "$FW_ACT_CODE" 200
check_eq "the removed subject's generation: 0" "$(gen_of "$ID_C2")" 0
check "... its blob deleted" no_blob "$ID_C2"
check_fails "no secret in fastwalld's log" grep -qF -- "-SECRET" "$FW_LOG"
check_fails "... nor in the metrics" bash -c "curl -s --max-time 3 'http://$METRICS/metrics' 2>/dev/null | grep -qF -- -SECRET"
fw_stop_daemon
sed -i "s|^  module: .*|  module: $FW_BUILD/l7/ngx_fastwall_l7_module.so|" "$FW_CFG"

# --- a CA key others may read: refused, with the reason -----------------------------

chmod 0644 "$CADIR/ca.key"
set +e
timeout 20 nsenter --net="/run/netns/$NS_POD" "$FASTWALLD" -c "$FW_CFG" run >"$FW_TMP/badkey.log" 2>&1
rc=$?
set -e
check_eq "ca.key mode 0644: exit 3 (configuration)" "$rc" 3
check "... saying why" grep -qF "$CADIR/ca.key: mode 0644 lets its group or others at it: refused (chmod 0600)" "$FW_TMP/badkey.log"
check_fails "... and not the key" grep -qF -- "$KEYLINE" "$FW_TMP/badkey.log"
chmod 0600 "$CADIR/ca.key"

# --- the operator's CA, with the next one staged in publish -------------------------

install -m 0600 "$CADIR/ca.key" "$FW_TMP/op.key"
install -m 0644 "$CADIR/ca.crt" "$FW_TMP/op.crt"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=fastwall e2e next CA" -addext basicConstraints=critical,CA:TRUE,pathlen:0 \
	-addext keyUsage=critical,keyCertSign,cRLSign -keyout "$FW_TMP/next.key" \
	-out "$FW_TMP/next.crt" 2>/dev/null
# a key beside the certificate by mistake: never published
cat "$FW_TMP/next.crt" "$FW_TMP/next.key" >"$FW_TMP/next.pem"
sed -i "s|^    dir: .*|    dir: $FW_TMP/l7-ca2\n    cert: $FW_TMP/op.crt\n    key: $FW_TMP/op.key\n    publish: [$FW_TMP/next.pem]|" "$FW_CFG"
fw_start_daemon || fw_die "fastwalld did not start with the operator's CA"
check "bundle.crt in l7.ca.dir (made for it): the signing CA, then the staged one" bash -c \
	"[ \"\$(grep -c 'BEGIN CERTIFICATE' '$FW_TMP/l7-ca2/bundle.crt')\" = 2 ] &&
	 cmp -s <(head -c \"\$(stat -c %s '$FW_TMP/op.crt')\" '$FW_TMP/l7-ca2/bundle.crt') '$FW_TMP/op.crt'"
check_fails "... and no private key" grep -q "PRIVATE" "$FW_TMP/l7-ca2/bundle.crt"
check_fails "no CA generated there" test -e "$FW_TMP/l7-ca2/ca.key"
fw_act_req GET /l7/ca.crt
check "GET /l7/ca.crt serves the same two" cmp -s "$FW_TMP/act.body" "$FW_TMP/l7-ca2/bundle.crt"
fw_stop_daemon
sed -i "/^    cert: \|^    key: \|^    publish: /d; s|^    dir: .*|    dir: $CADIR|" "$FW_CFG"

# --- proxy ports below 1024: CAP_NET_BIND_SERVICE too ------------------------------

sed -i "s|^  nginx: .*|  nginx: $FAKE/nginx|; s|^  user: nobody$|  user: nobody\\n  proxy_tls_port: 843\\n  proxy_http_port: 880|" "$FW_CFG"
n0=$(starts)
fw_start_daemon || fw_die "fastwalld did not start with low proxy ports"
check "the proxy started with ports 843 and 880" fw_eventually 10 started $((n0 + 1))
LOW=$FAKE/state/start.$(proxy_pid)
# CAP_BPF (bit 39) and CAP_NET_BIND_SERVICE (bit 10)
# and CAP_IPC_LOCK (bit 14) when it injects credentials (it locks its memory)
lowcaps=8000000400
grep -q "fastwall_l7_vaults" "$CONF" && lowcaps=8000004400
check_eq "its capabilities: CAP_BPF and CAP_NET_BIND_SERVICE (and CAP_IPC_LOCK when it injects)" \
	"$(awk '$1 == "cap_eff" { print $2 }' "$LOW")" "$lowcaps"
check_eq "... ambient" "$(awk '$1 == "cap_amb" { print $2 }' "$LOW")" "$lowcaps"
check "it binds them and accepts" fw_eventually 5 up_flag
fw_stop_daemon

# --- l7.credentials: off: no CA served, no vaults' maps ------------------------------

sed -i 's|^  user: nobody$|  user: nobody\n  credentials: off|' "$FW_CFG"
fw_start_daemon || fw_die "fastwalld did not start with credentials off"
check "up with credentials off" fw_eventually 10 up_flag
fw_act_req GET /l7/ca.crt
check_eq "GET /l7/ca.crt: 404" "$FW_ACT_CODE $FW_ACT_BODY" \
	"404 layer-7 credential injection is off: no CA"
check_eq "no fastwall_l7_vaults metric" "$(metric fastwall_l7_vaults)" ""
check_eq "no fastwall_l7_ca_expiry_seconds metric" "$(metric fastwall_l7_ca_expiry_seconds)" ""
check_fails "no credential lines in nginx.conf" grep -q "fastwall_l7_vaults\|fastwall_l7_ca " "$CONF"
fw_stop_daemon
sed -i '/^  credentials: off$/d' "$FW_CFG"

# --- no actions section: no vault can arrive, so no CA ------------------------------

cp "$FW_CFG" "$FW_TMP/with-actions.yaml"
sed -i "/^actions:$/,/^  vault_socket:/d; s|^    dir: .*|    dir: $FW_TMP/l7-ca3|" "$FW_CFG"
n0=$(fw_log_count 'no credential vault can arrive')
fw_start_daemon || fw_die "fastwalld did not start without actions"
check "without actions: up, and the log says nothing is injected" \
	fw_wait_log 'no actions section, so no credential vault can arrive' $((n0 + 1)) 5
check_fails "... no CA made" test -e "$FW_TMP/l7-ca3"
fw_stop_daemon
mv "$FW_TMP/with-actions.yaml" "$FW_CFG"

# --- a user that does not exist: fastwalld does not start ---------------------------

sed -i 's/^  user: nobody$/  user: no-such-user-fw/' "$FW_CFG"
set +e
timeout 20 nsenter --net="/run/netns/$NS_POD" "$FASTWALLD" -c "$FW_CFG" run >"$FW_TMP/nouser.log" 2>&1
rc=$?
set -e
check_eq "an unknown l7.user: exit 3 (configuration)" "$rc" 3
check "... naming it" grep -qF "l7.user: no user 'no-such-user-fw'" "$FW_TMP/nouser.log"

fw_summary
