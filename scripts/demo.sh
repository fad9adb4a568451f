#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# fastwall demo: a pod with three sandboxes and a simulated internet, all in
# network namespaces this script creates; fastwalld enforces each sandbox's
# egress policy and the script shows, connection by connection, what passed
# and why. Run as root after `make all` (make demo does both); BUILD names
# the build directory. Everything is removed on exit, unless KEEP=1: then
# the pod stays up and the script prints what to try and the command that
# removes it. See docs/demo.md.
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"
KEEP=${KEEP:-}
trap '[ "$KEEP" = 1 ] || fw_cleanup' EXIT
trap 'KEEP=; exit 130' INT TERM
fw_require

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)

if [ -t 1 ]; then
	B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' Y=$'\e[33m' N=$'\e[0m'
else
	B="" G="" R="" Y="" N=""
fi

heading() { printf '\n%s%s%s\n' "$B" "$1" "$N"; }

# write_config STATE_OF_C
write_config() {
	cat >"$FW_CFG.new" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]               # every port of br0, also ports added later
  events: { rate: 100, burst: 200 }
dns:
  upstreams: [198.51.100.53]   # the simulated internet's resolver
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: allow, target: "2001:db8::/64" }
        - { action: deny, target: 198.51.100.66 }
        - { action: deny, target: bad.example.com }
        - { action: allow, target: "*.example.com" }
$(fw_subject_yaml b 3)
    policy:
      defaultAction: allow
      egress:
        - { action: deny, target: 203.0.113.0/24 }
$(fw_subject_yaml c 4 v4)
    state: $1
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.10 }
EOF
	mv "$FW_CFG.new" "$FW_CFG"
}

# Verdict counters as "pass allow-cidr 12" lines.
snapshot() { fw_cli status | awk '$1 == "pass" || $1 == "drop" { print $1, $2, $3 }'; }

# The verdict reason that grew most between two snapshots (ARP/ND aside).
reason_between() {
	awk 'NR == FNR { old[$1 " " $2] = $3; next }
	     $2 != "neighbour" { d = $3 - old[$1 " " $2]; if (d > best) { best = d; r = $2 } }
	     END { print (r == "" ? "-" : r) }' <(echo "$1") <(echo "$2")
}

# conn FROM NS TARGET EXPECT WHY KIND ARGS...: runs one exchange and prints
# its line. EXPECT is ALLOWED or BLOCKED; an outcome that differs is flagged.
UNEXPECTED=0
conn() {
	local from=$1 ns=$2 target=$3 expect=$4 why=$5 kind=$6 before after got reason color
	shift 6
	before=$(snapshot)
	case $kind in
	http) fw_http "$ns" "$1" 1 "${@:2}" ;;
	udp) fw_udp "$ns" "$1" "$2" 0.7 "${@:3}" ;;
	dig) # a NOERROR answer with an address counts as allowed
		fw_ns "$ns" dig +time=2 +tries=1 "@$1" "$2" | grep -q 'status: NOERROR' &&
			[ -n "$(fw_ns "$ns" dig +short +time=2 +tries=1 "@$1" "$2")" ] ;;
	icmp) fw_icmp "$ns" "$1" 0.7 ;;
	esac >/dev/null 2>&1 && got=ALLOWED || got=BLOCKED
	after=$(snapshot)
	reason=$(reason_between "$before" "$after")
	[ "$got" = ALLOWED ] && color=$G || color=$R
	printf '  %-10s → %-24s %s%-8s%s %-16s %s' "$from" "$target" "$color" "$got" "$N" "$reason" "$why"
	if [ "$got" != "$expect" ]; then
		printf '  %s(expected %s)%s' "$Y" "$expect" "$N"
		UNEXPECTED=$((UNEXPECTED + 1))
	fi
	printf '\n'
}

conn_header() {
	printf '  %-10s   %-24s %-8s %-16s %s\n' "from" "to" "verdict" "data plane" "why"
	printf '  %-10s   %-24s %-8s %-16s %s\n' "----" "--" "-------" "----------" "---"
}

heading "fastwall demo"
cat <<EOF
  A pod network namespace holds bridge br0 (gateway 10.42.0.1, fd00:42::1);
  each sandbox is its own namespace on a br0 port (sb-a, sb-b, sb-c). A
  fourth namespace plays the internet: HTTP on 198.51.100.10, 198.51.100.66,
  203.0.113.10 and 2001:db8::10, UDP echo on :9000, and a resolver on
  198.51.100.53 (api.example.com is 203.0.113.10). fastwalld runs in the
  pod, filters what each sandbox sends at TC ingress of its port, and
  answers every sandbox's DNS through its proxy.

  sandbox-a  10.42.0.2  default deny; allow 198.51.100.0/24 and 2001:db8::/64,
                        but deny 198.51.100.66; allow *.example.com but
                        deny bad.example.com (domain rules, through DNS)
  sandbox-b  10.42.0.3  default allow; deny 203.0.113.0/24
  sandbox-c  10.42.0.4  state denying (not ready yet); will allow 198.51.100.10
EOF

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4
fw_serve_internet
# the internet's resolver (dnsmasq with fixed data)
fw_resolver 198.51.100.53 api.example.com,203.0.113.10,30 bad.example.com,198.51.100.66,30
fw_serve "$NS_POD" --http 10.42.0.1:22
write_config denying

heading "Starting fastwalld"
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-c' 1 5 || true
sed -nE 's/^[0-9T:.-]+Z +[a-z]+ +//; /data plane loaded|attached to|fastwalld ready/ s/^/  /p' "$FW_LOG"

heading "Connections"
conn_header
conn sandbox-a "$SB_A" 198.51.100.10:80 ALLOWED "allow rule 198.51.100.0/24" http http://198.51.100.10/
conn sandbox-a "$SB_A" '[2001:db8::10]:80' ALLOWED "allow rule 2001:db8::/64 (IPv6)" http 'http://[2001:db8::10]/'
conn sandbox-a "$SB_A" 198.51.100.10:9000/udp ALLOWED "allow rule 198.51.100.0/24 (UDP)" udp 198.51.100.10 9000
conn sandbox-a "$SB_A" 198.51.100.66:80 BLOCKED "deny 198.51.100.66 beats allow /24" http http://198.51.100.66/
conn sandbox-a "$SB_A" 203.0.113.10:80 BLOCKED "no rule matches: default deny" http http://203.0.113.10/
conn sandbox-b "$SB_B" 198.51.100.66:80 ALLOWED "no rule matches: default allow" http http://198.51.100.66/
conn sandbox-b "$SB_B" 203.0.113.10:80 BLOCKED "deny rule 203.0.113.0/24" http http://203.0.113.10/
conn sandbox-b "$SB_B" 198.51.100.10:853 BLOCKED "DNS-over-TLS is always blocked" http http://198.51.100.10:853/
conn sandbox-a "$SB_A" "10.42.0.3 (ping)" BLOCKED "sandbox-b is a sibling" icmp 10.42.0.3
conn sandbox-a "$SB_A" 10.42.0.1:22 BLOCKED "gateway: only DNS is open" http http://10.42.0.1:22/
conn sandbox-a "$SB_A" "api.example.com (DNS)" ALLOWED "*.example.com: answered, 203.0.113.10 learned" dig 10.42.0.1 api.example.com
conn sandbox-a "$SB_A" 203.0.113.10:80 ALLOWED "learned from api.example.com, 90 s lease" http http://203.0.113.10/
conn sandbox-a "$SB_A" "bad.example.com (DNS)" BLOCKED "deny bad.example.com: NXDOMAIN" dig 10.42.0.1 bad.example.com
conn sandbox-a "$SB_A" "github.com (DNS)" BLOCKED "no domain rule: NXDOMAIN" dig 10.42.0.1 github.com
conn sandbox-b "$SB_B" "bad.example.com @public" ALLOWED "default allow: any name answers (via the proxy)" dig 198.51.100.53 bad.example.com
conn sandbox-a "$SB_A" "bad.example.com @public" BLOCKED "DNS to 198.51.100.53 goes to the proxy: NXDOMAIN" dig 198.51.100.53 bad.example.com
conn sandbox-c "$SB_C" 198.51.100.10:80 BLOCKED "sandbox-c is still denying" http http://198.51.100.10/
ip -n "$SB_B" addr add 10.42.0.2/32 dev eth0 noprefixroute
conn "sandbox-b" "$SB_B" "198.51.100.10:80" BLOCKED "spoofs sandbox-a's 10.42.0.2 from sb-b" \
	http http://198.51.100.10/ --interface 10.42.0.2
ip -n "$SB_B" addr del 10.42.0.2/32 dev eth0
ip -n "$NS_POD" neigh flush dev br0 2>/dev/null || true

heading "Reload: sandbox-c becomes active (config rewritten, SIGHUP)"
write_config active
fw_reload || fw_die "no reload outcome in the log"
sed -nE 's/^[0-9T:.-]+Z +[a-z]+ +//; /reload/ s/^/  /p' "$FW_LOG"
conn_header
conn sandbox-c "$SB_C" 198.51.100.10:80 ALLOWED "active now: allow 198.51.100.10" http http://198.51.100.10/
conn sandbox-c "$SB_C" 198.51.100.66:80 BLOCKED "active now: default deny" http http://198.51.100.66/

heading "Why was it dropped? fastwall explain"
cat <<EOF
  fastwall explain asks the pinned maps what they would do with one packet
  and what decided it, without sending anything (exit 7: it would drop):

EOF
echo "  \$ fastwall explain 10.42.0.2 198.51.100.66 80/tcp"
fw_cli explain --config "$FW_CFG" 10.42.0.2 198.51.100.66 80/tcp | sed 's/^/  /' || true
echo "  \$ fastwall explain 10.42.0.2 192.0.2.77 443/tcp"
fw_cli explain --config "$FW_CFG" 10.42.0.2 192.0.2.77 443/tcp | sed 's/^/  /' || true

heading "Watching: fastwall monitor"
echo "  \$ fastwall monitor --kind drop --count 1      (then sandbox-b -> 203.0.113.10:80)"
"$FASTWALL" monitor --socket "$FW_MON_SOCK" --kind drop --count 1 >"$FW_TMP/monitor.out" 2>&1 &
MON=$!
sleep 0.3 # its request reaches fastwalld
fw_http "$SB_B" http://203.0.113.10/ 1 >/dev/null 2>&1 || true
for _ in $(seq 50); do
	kill -0 "$MON" 2>/dev/null || break
	sleep 0.1
done
kill "$MON" 2>/dev/null || true
wait "$MON" 2>/dev/null || true
sed 's/^/  /' "$FW_TMP/monitor.out"

heading "Metrics: a line of /metrics"
echo "  \$ curl -s http://127.0.0.1:9464/metrics | grep default-deny"
fw_ns "$NS_POD" curl -s --max-time 3 http://127.0.0.1:9464/metrics |
	grep -E '^fastwall_packets_total[{].*reason="default-deny"' | head -1 | sed 's/^/  /' || true

# Inbound: a client on the internet reaches sandbox-a's port 8080 through
# fastwall-ingress (nginx with the module, in the pod), which checks the
# route scope and asks a FastPath stand-in where the sandbox runs.
inbound() { # LABEL SCOPE WANT WHY
	local code color
	code=$(fw_ns "$NS_INET" curl -s -m 5 -o /dev/null -w '%{http_code}' \
		-H "OpenSandbox-Ingress-To: $2" "http://$ING_GW/hello?from=internet")
	if [ "$code" = "$3" ]; then color=$G; else color=$R; UNEXPECTED=$((UNEXPECTED + 1)); fi
	printf '  %-40s %s%-6s%s %s' "$1" "$color" "$code" "$N" "$4"
	[ "$code" = "$3" ] || printf '  %s(expected %s)%s' "$Y" "$3" "$N"
	printf '\n'
}
demo_ingress() {
	local ngx=$FW_TMP/ingress keys=$FW_TMP/ingress/keys ok
	local uuid=0f8fad5b-d9cb-469f-a165-70867728950e
	ING_GW=192.0.2.1:8088
	heading "Inbound: fastwall-ingress (nginx module) in front of sandbox-a's port 8080"
	if [ ! -f /usr/share/nginx/src/conf_flags ] || ! "$FW_PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
		! make -s -C "$FW_ROOT" BUILD="$BUILD" ingress >/dev/null 2>&1; then
		echo "  skipped: nginx, nginx-dev or python3-grpcio missing (scripts/install-deps.sh installs them)"
		return 0
	fi
	mkdir -p "$ngx/logs" "$ngx/tmp"
	fw_fastpath_stubs
	printf 'k=%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$keys"
	: >"$ngx/calls"
	fw_serve "$SB_A" --http 10.42.0.2:8080
	fw_bg "$NS_POD" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" \
		--listen 127.0.0.1:50051 --calls "$ngx/calls" --upstream http://10.42.0.2:8080 \
		--refused http://10.42.0.9:1 --tls-upstream https://10.42.0.9:1 --ready "$ngx/fp.ready"
	cat >"$ngx/nginx.conf" <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
worker_processes 1;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log warn;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $ngx/tmp/body;
	proxy_temp_path $ngx/tmp/proxy;
	fastcgi_temp_path $ngx/tmp/fcgi;
	uwsgi_temp_path $ngx/tmp/uwsgi;
	scgi_temp_path $ngx/tmp/scgi;
	fastwall_ingress_keys $keys;
	fastwall_ingress_resolver 127.0.0.1:50051;
	# this gateway is cluster west's; east's gateway is the one below
	fastwall_ingress_cluster_id west;
	fastwall_ingress_cluster east http://gw-east.demo:8089/east address=127.0.0.1:8089;
	# exposed services by hostname; hashed labels under this routing name
	fastwall_ingress_service_hosts *.apps.demo.test;
	fastwall_ingress_routing_name gateway-demo;
	fastwall_ingress_service_store sqlite:$ngx/services.db;
	proxy_http_version 1.1;
	# the service admin API, on the pod's loopback
	server { listen 127.0.0.1:8090; location /services { fastwall_ingress_admin; } }
	server {
		listen $ING_GW;
		location / {
			fastwall_ingress on;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
			proxy_set_header Host \$fastwall_ingress_cluster_host;
		}
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_read_timeout 2s;
		}
	}
}
EOF
	# cluster east's gateway: its data plane under /east, the same resolver
	mkdir -p "$ngx/east/tmp"
	sed -e "s|pid $ngx/nginx.pid|pid $ngx/east/nginx.pid|" -e "s|$ngx/tmp|$ngx/east/tmp|g" \
		-e "s|$ngx/logs/error.log|$ngx/east/error.log|" -e "s|listen $ING_GW;|listen 127.0.0.1:8089;|" \
		-e 's|fastwall_ingress_cluster_id west;|fastwall_ingress_cluster_id east;|' \
		-e 's|fastwall_ingress_cluster east .*|fastwall_ingress_cluster_prefix /east;|' \
		-e '/fastwall_ingress_service_\|fastwall_ingress_routing_name\|fastwall_ingress_admin/d' \
		"$ngx/nginx.conf" >"$ngx/east/nginx.conf"
	fw_bg "$NS_POD" /usr/sbin/nginx -p "$ngx" -c "$ngx/nginx.conf"
	fw_bg "$NS_POD" /usr/sbin/nginx -p "$ngx/east" -c "$ngx/east/nginx.conf"
	for _ in $(seq 50); do
		[ -e "$ngx/fp.ready" ] && fw_ns "$NS_POD" curl -s -o /dev/null "http://$ING_GW/" &&
			fw_ns "$NS_POD" curl -s -o /dev/null "http://127.0.0.1:8089/" && break
		sleep 0.1
	done
	cat <<EOF
  The gateway listens on the pod's uplink ($ING_GW); a client in the
  internet namespace sends the route scope in OpenSandbox-Ingress-To. The
  FastPath stand-in resolves every sandbox to 10.42.0.2:8080 except
  sb-missing (NOT_FOUND) and sb-notready (FAILED_PRECONDITION). This
  gateway is cluster west's; a sandbox id east.<uuid> belongs to cluster
  east, whose gateway (127.0.0.1:8089, data plane under /east) resolves it.

EOF
	ok=$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo sandbox-a 8080)
	echo "  \$ fastwall scope sign --keys KEYS --key-id k tenant-demo sandbox-a 8080"
	echo "  $ok"
	echo
	printf '  %-40s %-6s %s\n' "scope for" "status" "why"
	printf '  %-40s %-6s %s\n' "---------" "------" "---"
	inbound "sandbox-a:8080" "$ok" 200 "verified, resolved, proxied; the reply passes (pod-reply)"
	inbound "sandbox-a:8080 again" "$ok" 200 "from the gateway's cache: no resolver call"
	inbound "sandbox-a:8080, last character changed" "${ok%?}x" 401 "tampered scope: the MAC does not match"
	inbound "sandbox-a:18080 (the policy port)" \
		"$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo sandbox-a 18080)" 501 \
		"never forwarded, no resolver call"
	inbound "sb-missing:8080" "$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo sb-missing 8080)" \
		404 "the resolver does not know it"
	inbound "sb-notready:8080" "$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo sb-notready 8080)" \
		503 "not ready: Retry-After: 1, and nothing more"
	inbound "east.<uuid>:8080 (cluster east)" \
		"$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo "east.$uuid" 8080)" 200 \
		"forwarded to east's gateway, which resolved it"
	inbound "mars.<uuid>:8080 (no such cluster)" \
		"$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo "mars.$uuid" 8080)" 502 \
		"no gateway for cluster mars: never resolved"
	echo "  resolver calls: $(wc -l <"$ngx/calls") (sandbox-a once, then sb-missing and sb-notready," \
		"then east.<uuid> from east's gateway)"
	demo_service_hosts "$ngx" "$keys"
}
# The same port as an exposed service: the admin API (loopback, in the
# pod) records it, and its URL is one hashed label under the base domain.
demo_service_hosts() {
	local ngx=$1 keys=$2 url host code color want scope cred
	echo
	echo "  Exposed as a service (admin API on the pod's loopback; routing name gateway-demo):"
	echo "  \$ curl -X PUT 'http://127.0.0.1:8090/services/tenant-demo/sandbox-a/web?port=8080'"
	fw_ns "$NS_POD" curl -s -m 5 -X PUT -o "$ngx/expose.json" \
		'http://127.0.0.1:8090/services/tenant-demo/sandbox-a/web?port=8080'
	host=$("$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"])' "$ngx/expose.json" 2>/dev/null)
	url="http://$host/hello"
	echo "  service URL: $url (fastwall hostname hash --gateway gateway-demo tenant-demo sandbox-a web:" \
		"$("$FASTWALL" hostname hash --gateway gateway-demo tenant-demo sandbox-a web))"
	scope=$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant-demo sandbox-a 8080)
	# a service host needs a credential for its sandbox: here its scope
	for host in "$host" tenant-demo--sandbox-a--web.apps.demo.test "$host -" unknownlabel2345.apps.demo.test; do
		cred=(-H "OpenSandbox-Ingress-To: $scope")
		want=200
		case $host in
		unknown*) want=404 cred=() ;;
		*" -") host=${host% -} want=401 cred=() ;;
		esac
		code=$(fw_ns "$NS_INET" curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Host: $host" \
			"${cred[@]}" "http://$ING_GW/hello?from=internet")
		if [ "$code" = "$want" ]; then color=$G; else color=$R; UNEXPECTED=$((UNEXPECTED + 1)); fi
		printf '  Host: %-44s %-9s %s%-6s%s\n' "$host" "$([ ${#cred[@]} -gt 0 ] && echo '+ scope' || echo '')" \
			"$color" "$code" "$N"
	done
	echo "  (hashed and readable hosts reach sandbox-a:8080 with its scope, which also sets a"
	echo "   cookie for the host; without a credential 401; an unknown label is 404)"
}
demo_ingress

heading "fastwall status"
fw_cli status | sed -E "s/^(.)/  \1/"

heading "fastwall subjects"
fw_cli subjects | sed 's/^/  /'

heading "fastwall leases (DNS-learned addresses)"
fw_cli leases | sed 's/^/  /'

heading "Deny events (fastwalld log)"
sleep 0.2
sed -nE 's/^[0-9T:.-]+Z +[a-z]+ +//; /^deny subject=/ s/^/  /p' "$FW_LOG"

if [ "$KEEP" = 1 ]; then
	teardown=$FW_TMP/teardown.sh
	{
		echo '#!/bin/sh'
		echo "# removes the demo pod $FW_ID: its processes, namespaces, pins and files"
		for ns in "${FW_NSS[@]}"; do
			echo "for p in \$(ip netns pids $ns 2>/dev/null); do kill -9 \"\$p\" 2>/dev/null; done"
		done
		for ns in "${FW_NSS[@]}"; do
			echo "ip netns del $ns 2>/dev/null"
		done
		echo "rm -rf '$BPFFS' '$FW_TMP'"
		echo "echo 'demo pod $FW_ID removed'"
	} >"$teardown"
	chmod 0755 "$teardown"
	heading "Left running (KEEP=1)"
	cat <<EOF
  fastwalld (pid $FW_DAEMON_PID) enforces in namespace $NS_POD; its log is
  $FW_LOG. Things to try:

    ip netns exec $SB_A curl -s http://198.51.100.10/          # allowed
    ip netns exec $SB_A curl -s -m 2 http://203.0.113.99/      # dropped
    $FASTWALL --bpffs $BPFFS explain 10.42.0.2 203.0.113.99 80/tcp
    $FASTWALL monitor --socket $FW_MON_SOCK
    $FASTWALL --bpffs $BPFFS status
    ip netns exec $NS_POD curl -s http://127.0.0.1:9464/metrics
    (edit $FW_CFG, then kill -HUP $FW_DAEMON_PID)

  Remove it all:

    sh $teardown
EOF
	[ "$UNEXPECTED" -eq 0 ] || echo "${Y}$UNEXPECTED connection(s) did not behave as expected${N}"
	exit 0
fi

fw_stop_daemon
heading "Cleaning up"
echo "  namespaces, links, pins under $BPFFS and processes are removed on exit"
if [ "$UNEXPECTED" -ne 0 ]; then
	echo "${Y}$UNEXPECTED connection(s) did not behave as expected${N}"
	exit 1
fi
