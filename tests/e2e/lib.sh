# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Shared topology and helpers for fastwall's end-to-end tests and the demo.
# Source it from bash; everything it creates carries a per-run id and lives
# in network namespaces it creates, and fw_cleanup removes all of it.
#
#   internet ns (fwinet-ID)                 pod ns (fwpod-ID)
#   eth0 192.0.2.254/24  <-- veth -->  up0 192.0.2.1/24          br0 10.42.0.1/24
#        2001:db8:1::254/64                2001:db8:1::1/64         fd00:42::1/64
#   lo 198.51.100.10, .66                                           |  ports sb-X
#      203.0.113.10                                                 |
#      2001:db8::10, ::66           sandbox ns fwsb-ID-X: eth0 10.42.0.N/24
#                                                                  fd00:42::N/64
#
# Only documentation ranges (RFC 5737, RFC 3849) and 10.42.0.0/24,
# fd00:42::/64 are used, all inside the namespaces; the initial namespace
# is never touched besides the pin directory under /sys/fs/bpf.

# The test runners glob tests/e2e/*.sh; run directly, this file does nothing.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "lib.sh: helpers sourced by the end-to-end tests and scripts/demo.sh; nothing to run"
	exit 0
fi

FW_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FW_ROOT=$(cd "$FW_E2E_DIR/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) FW_BUILD=$BUILD ;; *) FW_BUILD=$FW_ROOT/$BUILD ;; esac
FASTWALLD=$FW_BUILD/fastwalld
FASTWALL=$FW_BUILD/fastwall
if [ -x /usr/bin/python3 ]; then FW_PY=/usr/bin/python3; else FW_PY=python3; fi
FW_PROBE=$FW_E2E_DIR/probe.py

FW_ID=$(printf '%x%s' $$ "$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')")
NS_POD=fwpod-$FW_ID
NS_INET=fwinet-$FW_ID
BPFFS=/sys/fs/bpf/fastwall-$FW_ID
FW_TMP=$(mktemp -d "/tmp/fastwall-$FW_ID.XXXXXX")
FW_LOG=$FW_TMP/fastwalld.log
FW_CFG=$FW_TMP/fastwalld.yaml
# this run's own monitor socket (see fw_own_sockets)
FW_MON_SOCK=$FW_TMP/monitor.sock
FW_NSS=()	     # namespaces we created
FW_PIDS=()	     # processes we started
FW_DAEMON_PID=""

fw_die() {
	echo "fatal: $*" >&2
	exit 1
}

# Under set -e a script ends at the first command that fails outside a
# check, and without this it would end in silence: say which one it was.
# Without set -e (a script that never sets it, a set +e stretch) a failure
# ends nothing and is expected: say nothing.
fw_on_err() {
	case $- in *e*) echo "fatal: line $2 of ${BASH_SOURCE[1]##*/} exited $1: $3" >&2 ;; esac
}
trap 'fw_on_err $? $LINENO "$BASH_COMMAND"' ERR

fw_require() {
	[ "$(id -u)" = 0 ] || fw_die "must run as root"
	{ [ -x "$FASTWALLD" ] && [ -x "$FASTWALL" ]; } ||
		fw_die "$FASTWALLD or $FASTWALL missing: run make all (BUILD=$BUILD)"
	for t in ip tc nsenter curl; do
		command -v "$t" >/dev/null || fw_die "$t not found"
	done
	mountpoint -q /sys/fs/bpf || fw_die "/sys/fs/bpf is not a bpffs mount"
}

# Runs a command in namespace $1 (nsenter keeps /sys/fs/bpf visible).
fw_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

fw_sb_ns() { echo "fwsb-$FW_ID-$1"; }

fw_cleanup() {
	local pid ns
	set +e
	for pid in $FW_DAEMON_PID "${FW_PIDS[@]}"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	for pid in $FW_DAEMON_PID "${FW_PIDS[@]}"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	# FW_KEEP_LOG=FILE keeps the daemon's log (with its exit) for a look
	[ -n "${FW_KEEP_LOG:-}" ] && [ -f "$FW_LOG" ] && cp "$FW_LOG" "$FW_KEEP_LOG"
	# anything else still running inside our namespaces, by pid
	for ns in "${FW_NSS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
	done
	for ns in "${FW_NSS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$BPFFS" ] && [ -d "$BPFFS" ] && rm -rf "$BPFFS"
	[ -n "$FW_TMP" ] && rm -rf "$FW_TMP"
	return 0
}

fw_netns_add() {
	ip netns add "$1" || fw_die "can't create namespace $1"
	FW_NSS+=("$1")
	ip -n "$1" link set lo up
	# no DAD: a tentative link-local address can't source neighbour
	# solicitations, which would lose the first packets for a second
	fw_ns "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
}

# The pod (bridge br0, uplink) and the simulated internet.
fw_topology() {
	fw_netns_add "$NS_POD"
	fw_netns_add "$NS_INET"

	# fixed MAC: a bridge otherwise takes its lowest port MAC, which
	# changes under the sandboxes' ARP caches when ports come and go
	ip -n "$NS_POD" link add br0 address 02:fa:57:00:00:01 type bridge mcast_snooping 0
	ip -n "$NS_POD" addr add 10.42.0.1/24 dev br0
	ip -n "$NS_POD" addr add fd00:42::1/64 dev br0 nodad
	ip -n "$NS_POD" link set br0 up

	ip -n "$NS_POD" link add up0 type veth peer name eth0 netns "$NS_INET"
	ip -n "$NS_POD" addr add 192.0.2.1/24 dev up0
	ip -n "$NS_POD" addr add 2001:db8:1::1/64 dev up0 nodad
	ip -n "$NS_POD" link set up0 up
	ip -n "$NS_POD" route add default via 192.0.2.254
	ip -n "$NS_POD" -6 route add default via 2001:db8:1::254
	fw_ns "$NS_POD" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1

	ip -n "$NS_INET" addr add 192.0.2.254/24 dev eth0
	ip -n "$NS_INET" addr add 2001:db8:1::254/64 dev eth0 nodad
	ip -n "$NS_INET" link set eth0 up
	# the internet's hosts sit on its loopback (no dummy driver needed)
	for a in 198.51.100.10/32 198.51.100.66/32 203.0.113.10/32; do
		ip -n "$NS_INET" addr add "$a" dev lo
	done
	for a in 2001:db8::10/128 2001:db8::66/128; do
		ip -n "$NS_INET" addr add "$a" dev lo nodad
	done
	ip -n "$NS_INET" route add 10.42.0.0/24 via 192.0.2.1
	ip -n "$NS_INET" -6 route add fd00:42::/64 via 2001:db8:1::1
}

# fw_sandbox LETTER N: namespace fwsb-ID-LETTER with 10.42.0.N and
# fd00:42::N, connected to br0 through the pod-side port sb-LETTER.
fw_sandbox() {
	local l=$1 n=$2 ns
	ns=$(fw_sb_ns "$l")
	fw_netns_add "$ns"
	ip -n "$NS_POD" link add "sb-$l" type veth peer name eth0 netns "$ns"
	ip -n "$ns" addr add "10.42.0.$n/24" dev eth0
	ip -n "$ns" addr add "fd00:42::$n/64" dev eth0 nodad
	# ARP from the primary address only, even for a spoofed source
	fw_ns "$ns" sysctl -qw net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.eth0.arp_announce=2
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via 10.42.0.1
	ip -n "$ns" -6 route add default via fd00:42::1
	ip -n "$NS_POD" link set "sb-$l" master br0
	ip -n "$NS_POD" link set "sb-$l" up
}

# fw_bg NS CMD...: a background process inside NS, killed by fw_cleanup.
fw_bg() {
	local ns=$1
	shift
	# nsenter execs the command, so $! is the process itself
	nsenter --net="/run/netns/$ns" "$@" >>"$FW_TMP/bg.log" 2>&1 &
	FW_PIDS+=($!)
}

# fw_serve NS ARGS...: probe.py serve in NS; returns when it listens.
fw_serve() {
	local ns=$1 ready
	shift
	ready=$FW_TMP/ready.$RANDOM$RANDOM
	fw_bg "$ns" "$FW_PY" "$FW_PROBE" serve --ready "$ready" "$@"
	for _ in $(seq 100); do
		[ -e "$ready" ] && return 0
		sleep 0.05
	done
	fw_die "server in $ns did not start: $(tail -3 "$FW_TMP/bg.log")"
}

# fw_bg_ready NS READY CMD...: CMD --ready READY in the background in NS
# (fw_bg); returns once the server wrote the file READY, which it does
# when it listens.
fw_bg_ready() {
	local ns=$1 ready=$2
	shift 2
	fw_bg "$ns" "$@" --ready "$ready"
	for _ in $(seq 100); do
		[ -e "$ready" ] && return 0
		sleep 0.05
	done
	fw_die "$* did not start: $(tail -5 "$FW_TMP/bg.log")"
}

# The internet's servers: HTTP on :80 of every address and on 198.51.100.10
# :853 (so a DoT drop is the firewall, not a missing listener); UDP echo on
# :9000 and :853; on 198.51.100.10:9001 a UDP echo that records every
# sender in $FW_INET_SEEN, to tell "dropped" from "reply went elsewhere".
FW_INET_SEEN=$FW_TMP/inet-seen
fw_serve_internet() {
	fw_serve "$NS_INET" \
		--http 198.51.100.10:80 --http 198.51.100.66:80 --http 203.0.113.10:80 \
		--http '[2001:db8::10]:80' --http '[2001:db8::66]:80' \
		--http 198.51.100.10:853 \
		--udp 198.51.100.10:9000 --udp 198.51.100.66:9000 --udp 203.0.113.10:9000 \
		--udp '[2001:db8::10]:9000' --udp '[2001:db8::66]:9000' \
		--udp 198.51.100.10:853 \
		--udp-logged "198.51.100.10:9001=$FW_INET_SEEN"
}

# fw_resolver ADDR RECORD...: the internet's resolver, dnsmasq on ADDR
# port 53 (ADDR is added to the internet namespace's loopback) serving
# fixed data: each RECORD is a host-record, "NAME,ADDRESS[,ADDRESS],TTL",
# and every other name is NXDOMAIN. Returns once the first record
# resolves; dnsmasq logs to $FW_TMP/dnsmasq.log, and fw_cleanup stops it.
fw_resolver() {
	local addr=$1 name want r
	shift
	name=${1%%,*}
	want=${1#*,}
	want=${want%%,*}
	ip -n "$NS_INET" addr add "$addr/32" dev lo
	{
		printf '%s\n' no-resolv no-hosts no-poll bind-interfaces "listen-address=$addr" \
			port=53 user=root pid-file= 'address=/#/'
		for r in "$@"; do echo "host-record=$r"; done
	} >"$FW_TMP/dnsmasq.conf"
	fw_bg "$NS_INET" dnsmasq -k -C "$FW_TMP/dnsmasq.conf" --log-facility="$FW_TMP/dnsmasq.log"
	fw_eventually 5 fw_resolves "$addr" "$name" "$want" ||
		fw_die "dnsmasq did not answer on $addr: $(tail -3 "$FW_TMP/dnsmasq.log" 2>/dev/null)"
}

# fw_resolves SERVER NAME ADDRESS: SERVER answers NAME with ADDRESS (asked
# from the internet namespace).
fw_resolves() {
	fw_ns "$NS_INET" dig +short +time=1 +tries=1 "@$1" "$2" 2>/dev/null | grep -qxF -- "$3"
}

# fw_own_sockets FILE: gives the daemon configuration FILE this run's own
# monitor socket, $FW_MON_SOCK, by putting a monitor section first unless
# FILE has one (first, so that a test appending list items to its last
# section, subjects: say, still appends them there). On the default path (/run/fastwall/monitor.sock) a test daemon
# would unlink and take over the socket of another test's daemon, or of a
# fastwalld on the host. The other unix sockets (actions.vault_socket,
# processes.socket) exist only with their sections, and every test that
# has one names a path of its own run.
fw_own_sockets() {
	[ -f "$1" ] || return 0
	grep -q '^monitor:' "$1" && return 0
	local tmp="$1.own"
	{
		# after a document start marker, if the file has one
		if [ "$(head -n1 "$1")" = --- ]; then
			echo ---
			printf 'monitor:\n  socket: %s\n' "$FW_MON_SOCK"
			tail -n +2 "$1"
		else
			printf 'monitor:\n  socket: %s\n' "$FW_MON_SOCK"
			cat "$1"
		fi
	} >"$tmp" && cat "$tmp" >"$1" && rm -f "$tmp"
}

# fw_start_daemon [ARGS...]: fastwalld run with $FW_CFG in the pod ns;
# returns when it logged "fastwalld ready". $FW_CFG gets this run's own
# sockets first (fw_own_sockets), unless FW_OWN_SOCKETS=0 (a release that
# has no monitor section refuses the key).
# extra arguments go to fastwalld before "run"; most callers pass none
# shellcheck disable=SC2120
fw_start_daemon() {
	local before
	[ "${FW_OWN_SOCKETS:-1}" = 0 ] || fw_own_sockets "$FW_CFG"
	before=$(grep -c 'fastwalld ready' "$FW_LOG" 2>/dev/null || true)
	# nsenter execs fastwalld: $! is the daemon, signals reach it
	nsenter --net="/run/netns/$NS_POD" "$FASTWALLD" -c "$FW_CFG" "$@" run >>"$FW_LOG" 2>&1 &
	FW_DAEMON_PID=$!
	for _ in $(seq 200); do
		if [ "$(grep -c 'fastwalld ready' "$FW_LOG" 2>/dev/null || true)" -gt "${before:-0}" ]; then
			return 0
		fi
		kill -0 "$FW_DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "fastwalld did not become ready; its log:" >&2
	sed 's/^/  | /' "$FW_LOG" >&2
	return 1
}

fw_stop_daemon() {
	[ -n "$FW_DAEMON_PID" ] || return 0
	kill -TERM "$FW_DAEMON_PID" 2>/dev/null || true
	wait "$FW_DAEMON_PID" 2>/dev/null || true
	FW_DAEMON_PID=""
}

# fw_wait_log PATTERN [COUNT] [TIMEOUT_S]: waits until the daemon log
# holds at least COUNT lines matching the extended regex PATTERN.
fw_wait_log() {
	local pat=$1 count=${2:-1} tries=$((${3:-5} * 20))
	for _ in $(seq "$tries"); do
		[ "$(grep -cE -- "$pat" "$FW_LOG" 2>/dev/null || true)" -ge "$count" ] && return 0
		sleep 0.05
	done
	return 1
}

fw_log_count() { grep -cE -- "$1" "$FW_LOG" 2>/dev/null || true; }

# fw_reload: SIGHUP, then wait for the reload's outcome line.
fw_reload() {
	local n
	n=$(fw_log_count 'reloaded |reload rejected|reload applied with errors')
	kill -HUP "$FW_DAEMON_PID"
	fw_wait_log 'reloaded |reload rejected|reload applied with errors' $((n + 1)) 5
}

fw_cli() { fw_ns "$NS_POD" "$FASTWALL" --bpffs "$BPFFS" "$@"; }

# fw_counter "drop default-deny": packets of that verdict in fastwall status.
fw_counter() {
	fw_cli status | awk -v v="$1" '
		($1 " " $2) == v { n = $3 } END { print n + 0 }'
}

# fw_subject_counter NAME "drop default-deny": that subject's packets.
fw_subject_counter() {
	fw_cli subjects | awk -v s="$1" -v v="$2" '
		/^[0-9]/ { cur = $2; next }
		cur == s {
			gsub(/^ +/, ""); n = split($0, kv, ",")
			for (i = 1; i <= n; i++) {
				split(kv[i], p, "=")
				if (p[1] == v) c = p[2]
			}
		}
		END { print c + 0 }'
}

# Clients. Each returns 0 when the exchange completed.
# fw_http NS URL [TIMEOUT] [CURL ARGS...]
fw_http() {
	local ns=$1 url=$2 t=${3:-2}
	shift 3 2>/dev/null || shift $#
	fw_ns "$ns" curl -s -o /dev/null -f --connect-timeout "$t" --max-time "$((t + 1))" "$@" "$url"
}

fw_udp() { # NS HOST PORT [TIMEOUT] [--src ADDR]
	local ns=$1 host=$2 port=$3 t=${4:-1}
	shift 4 2>/dev/null || shift $#
	fw_ns "$ns" "$FW_PY" "$FW_PROBE" udp "$host" "$port" --timeout "$t" "$@"
}

fw_dns() { fw_ns "$1" "$FW_PY" "$FW_PROBE" dns "$2" --timeout "${3:-1}"; }
fw_icmp() { fw_ns "$1" "$FW_PY" "$FW_PROBE" icmp "$2" --timeout "${3:-1}"; }

# TAP-like reporting for the tests.
FW_PASSED=0
FW_FAILED=0

fw_ok() {
	echo "ok - $1"
	FW_PASSED=$((FW_PASSED + 1))
}

fw_not_ok() {
	echo "not ok - $1"
	FW_FAILED=$((FW_FAILED + 1))
}

# check DESC CMD...: ok when CMD succeeds.
# A check's own output is kept out of the way and shown only on failure.
check() {
	local d=$1
	shift
	if "$@" >"$FW_TMP/check.out" 2>&1; then
		fw_ok "$d"
	else
		fw_not_ok "$d"
		sed 's/^/#   /' "$FW_TMP/check.out"
	fi
}

# check_fails DESC CMD...: ok when CMD fails.
check_fails() {
	local d=$1
	shift
	if "$@" >"$FW_TMP/check.out" 2>&1; then
		fw_not_ok "$d"
		sed 's/^/#   /' "$FW_TMP/check.out"
	else
		fw_ok "$d"
	fi
}

# fw_eventually SECONDS CMD...: CMD succeeds within SECONDS (tried every 0.1 s)
fw_eventually() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# check_eq DESC GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then fw_ok "$1"; else fw_not_ok "$1 (got '$2', want '$3')"; fi
}

# check_ge DESC GOT MIN
check_ge() {
	if [ "$2" -ge "$3" ]; then fw_ok "$1"; else fw_not_ok "$1 (got $2, want >= $3)"; fi
}

fw_summary() {
	echo "$FW_PASSED passed, $FW_FAILED failed"
	[ "$FW_FAILED" -eq 0 ]
}

# --- the Sandbox Actions protocol (actions.sh, actions-restart.sh) ---------
# The daemon listens on 127.0.0.1:$FW_ACT_PORT inside the pod namespace and
# serves the active vault on $FW_ACT_SOCK; requests go through curl there.
FW_ACT_PORT=18080
FW_ACT_RUN=/run/fastwall-$FW_ID
FW_ACT_SOCK=$FW_ACT_RUN/vault.sock
FW_ACT_URL=http://127.0.0.1:$FW_ACT_PORT
FW_ACT_CLIENT=$FW_E2E_DIR/actions_client.py
FW_ACT_CODE=""	# of the last fw_act_req: status, body, response headers
FW_ACT_BODY=""
FW_ACT_HDRS=""

fw_act_cleanup() {
	# FW_ACT_KEEP_LOG=FILE keeps the daemon's log for a look afterwards
	[ -n "${FW_ACT_KEEP_LOG:-}" ] && [ -f "$FW_LOG" ] && cp "$FW_LOG" "$FW_ACT_KEEP_LOG"
	fw_cleanup
	[ -n "$FW_ACT_RUN" ] && rm -rf "$FW_ACT_RUN"
	return 0
}

# fw_act_config [restart keep|wipe] [grace S]: $FW_CFG with the actions
# section, bridge br0, no static subjects.
fw_act_config() {
	cat >"$FW_CFG" <<EOC
log_level: debug
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 1000, burst: 1000 }
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_ACT_SOCK
  restart: ${1:-keep}
  grace: ${2:-3}
  pending_ttl: 30
  bind_host_veth: true
EOC
}

# fw_act_env OP UID [actions_client.py env options]: one envelope.
fw_act_env() { "$FW_PY" -S "$FW_ACT_CLIENT" env "$@"; }

# fw_act_req METHOD PATH [CURL ARGS...]: one request to the TCP listener;
# sets FW_ACT_CODE, FW_ACT_BODY (trailing newline stripped), FW_ACT_HDRS.
fw_act_req() {
	local m=$1 p=$2
	shift 2
	: >"$FW_TMP/act.body"
	: >"$FW_TMP/act.hdrs"
	FW_ACT_CODE=$(fw_ns "$NS_POD" curl -s -X "$m" -o "$FW_TMP/act.body" -D "$FW_TMP/act.hdrs" \
		-w '%{http_code}' --max-time 5 "$@" "$FW_ACT_URL$p" 2>/dev/null) || true
	FW_ACT_BODY=$(<"$FW_TMP/act.body")
	FW_ACT_HDRS=$(<"$FW_TMP/act.hdrs")
	FW_ACT_HDRS=${FW_ACT_HDRS//$'\r'/}
}

# fw_act_post JSON: POST /_fastlet/v1/actions.
fw_act_post() {
	printf '%s' "$1" >"$FW_TMP/act.req"
	fw_act_req POST /_fastlet/v1/actions -H 'Content-Type: application/json' \
		--data-binary "@$FW_TMP/act.req"
}

# fw_act OP UID [env options]: builds the envelope and posts it.
fw_act() { fw_act_post "$(fw_act_env "$@")"; }

# fw_act_header NAME: a header of the last response.
fw_act_header() {
	local line name want=${1,,}
	while IFS= read -r line; do
		name=${line%%:*}
		if [ "$name" != "$line" ] && [ "${name,,}" = "$want" ]; then
			echo "${line#*: }"
			return 0
		fi
	done <<<"$FW_ACT_HDRS"
}

# check_reply DESC CODE BODY: the last response had that status and body.
check_reply() {
	if [ "$FW_ACT_CODE" = "$2" ] && [ "$FW_ACT_BODY" = "$3" ]; then
		fw_ok "$1"
	else
		fw_not_ok "$1 (got $FW_ACT_CODE '$FW_ACT_BODY', want $2 '$3')"
	fi
}

# check_code DESC CODE: the last response had that status.
check_code() {
	if [ "$FW_ACT_CODE" = "$2" ]; then
		fw_ok "$1"
	else
		fw_not_ok "$1 (got $FW_ACT_CODE '$FW_ACT_BODY', want $2)"
	fi
}

# fw_subj NAME FIELD: "id" or "state" of NAME in fastwall subjects
# (empty when it is not listed).
fw_subj() {
	fw_cli subjects | awk -v n="$1" -v f="$2" '
		/^[0-9]/ && $2 == n { print (f == "id" ? $1 : f == "state" ? $3 : $5); exit }'
}

# fw_dispatch IP: the subject id dispatch maps IP to, or "none".
fw_dispatch() { "$FW_PY" -S "$FW_ACT_CLIENT" dispatch "$BPFFS" "$1"; }

# fw_learned ID: learned addresses of subject id ID, one a line.
fw_learned() { "$FW_PY" -S "$FW_ACT_CLIENT" learned "$BPFFS" "$1"; }

# fw_no_learned ID: ID holds no learned address.
fw_no_learned() { [ -z "$(fw_learned "$1")" ]; }
# fw_learned_add ID IP: a learned address for ID with a 60 s lease.
fw_learned_add() { "$FW_PY" -S "$FW_ACT_CLIENT" learned-add "$BPFFS" "$1" "$2"; }

# fw_act_instance: instanceId of the status endpoint.
fw_act_instance() {
	fw_ns "$NS_POD" curl -s --max-time 2 "$FW_ACT_URL/_fastlet/v1/actions/status" |
		"$FW_PY" -S -c 'import json,sys; print(json.load(sys.stdin)["instanceId"])' 2>/dev/null
}

# --- the ingress gateway (ingress.sh, hostnames.sh, xcluster.sh) ----------
# The real nginx with this build's module, against the stand-ins of
# FastPath and of the Fastlets in ingress_servers.py.
FW_NGINX=/usr/sbin/nginx
# shellcheck disable=SC2034 # for the scripts that source this
FW_NGX_MODULE=$FW_BUILD/ingress/ngx_http_fastwall_ingress_module.so
# shellcheck disable=SC2034
FW_NGX_SERVERS=$FW_E2E_DIR/ingress_servers.py

# fw_ingress_require NAME [PYTHON-MODULE...]: without nginx and nginx-dev,
# the test NAME is skipped (and the script exits, 0 passed); else what
# fw_require checks, the Python modules the stand-ins import (grpc and
# grpc_tools, and those named) and a module built by make ingress.
fw_ingress_require() {
	local name=$1 mods
	shift
	if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ]; then
		echo "$name: skipped: nginx or nginx-dev is not installed (scripts/install-deps.sh installs both)"
		echo "0 passed, 0 failed"
		exit 0
	fi
	fw_require
	mods=$(printf ', %s' grpc grpc_tools "$@")
	mods=${mods#, }
	"$FW_PY" -c "import $mods" 2>/dev/null ||
		fw_die "$FW_PY can't import $mods: install python3-grpcio python3-grpc-tools"
	make -s -C "$FW_ROOT" BUILD="$BUILD" ingress >/dev/null || fw_die "make ingress failed"
}

# fw_fastpath_stubs: the FastPath stand-in's gRPC code in $FW_TMP/gen,
# generated from the pinned .proto.
fw_fastpath_stubs() {
	mkdir -p "$FW_TMP/gen"
	"$FW_PY" -m grpc_tools.protoc -I"$FW_ROOT/gateway/proto" --python_out="$FW_TMP/gen" \
		--grpc_python_out="$FW_TMP/gen" "$FW_ROOT/gateway/proto/fastpath_v2.proto" ||
		fw_die "can't generate the stand-in from the proto"
}

# --- cgroup2 for process sandboxes (cgroup.sh, run-caps.sh, source-route.sh)
# fw_cg_mount DIR: cgroup2 at DIR with nsdelegate, as systemd mounts it (a
# cgroup namespace is then a delegation boundary, which `fastwall run`
# needs for a root command). nsdelegate is a flag of the hierarchy, not of
# one mount: fw_cg_umount takes it off again when the machine did not have
# it before. fw_cg_flags DIR OPTIONS remounts with exactly OPTIONS (mount(8)
# would add the ones it finds).
FW_CG_NSDELEGATE_WAS=$(grep -cE ' - cgroup2 [^ ]+ [^ ]*nsdelegate' /proc/self/mountinfo || true)
fw_cg_flags() {
	"$FW_PY" -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT = 32
if libc.mount(b"none", sys.argv[1].encode(), b"cgroup2", MS_REMOUNT, sys.argv[2].encode()):
    sys.exit("remount: errno %d" % ctypes.get_errno())' "$1" "$2"
}
fw_cg_mount() {
	mkdir -p "$1"
	mount -t cgroup2 -o nsdelegate none "$1" || fw_die "can't mount cgroup2 at $1"
	grep -qE " $1 [^ ]+ - cgroup2 [^ ]+ [^ ]*nsdelegate" /proc/self/mountinfo ||
		fw_die "cgroup2 at $1 has no nsdelegate"
}
fw_cg_umount() {
	mountpoint -q "$1" || return 0
	[ "$FW_CG_NSDELEGATE_WAS" = 0 ] && fw_cg_flags "$1" ""
	umount "$1"
	rmdir "$1" 2>/dev/null
}
# fw_cg_teardown CG MNT: kills what is left in the process sandboxes'
# parent cgroup CG, stops fastwalld, takes its programs off, removes CG
# once empty and unmounts MNT (fw_cg_umount).
fw_cg_teardown() {
	local cg=$1
	[ -w "$cg/cgroup.kill" ] && echo 1 >"$cg/cgroup.kill"
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	if [ -d "$cg" ]; then
		for _ in $(seq 50); do
			[ "$(awk '/populated/ { print $2 }' "$cg/cgroup.events")" = 0 ] && break
			sleep 0.1
		done
		find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	fw_cg_umount "$2"
}
