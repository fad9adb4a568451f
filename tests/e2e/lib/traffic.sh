# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh: servers (background processes, the internet's listeners
# and resolver) and the clients that talk to them.

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
