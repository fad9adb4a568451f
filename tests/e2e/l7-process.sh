#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: layer-7 pinning of process sandboxes (`fastwall run`; the
# cgroup programs send a pinned connect to the proxy on loopback). The
# same internet as l7.sh (tests/e2e/lib/l7.sh): a real nginx serving
# api.example.com and other.example.com on one shared address over TLS
# and HTTP, evil.example.net on another, dnsmasq naming them, a capture on
# the internet's link and the server's access log. A run allowed
# api.example.com resolves it (its DNS goes to fastwalld's proxy) and then:
# the allowed name passes (IPv4 and IPv6; getpeername says the address
# the process asked for), another tenant of the address, no SNI and HTTP
# with another Host are refused with nothing reaching the server, UDP 443
# (QUIC) fails at sendto, and the proxy's own port on loopback is no way
# around. Skipped (exit 77) only without nginx or nginx-dev.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_l7_require l7-process.sh

CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
CDN4=$FW_L7_CDN4
CDN6=$FW_L7_CDN6
EVIL4=$FW_L7_EVIL4

cg_cleanup() {
	set +e
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_cleanup
}
trap cg_cleanup EXIT
trap 'exit 130' INT TERM

fw_topology
fw_l7_internet
fw_l7_resolver
fw_l7_capture
fw_cg_mount "$CG_MNT"

cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: true, port: 15353, upstreams: [$FW_L7_UP4] }
datapath:
  bpffs: $BPFFS
  events: { rate: 1000, burst: 1000 }
metrics:
  listen: $FW_L7_METRICS
$(fw_l7_yaml "subject_connections: 64")
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
EOF
fw_start_daemon || exit 1
check "fastwalld attached the cgroup programs" fw_wait_log "process sandboxes: cgroup programs on $CG" 1 2
check "the proxy is up (fastwall_l7_up 1)" fw_eventually 15 fw_l7_up

# a run allowed api.example.com, kept alive; commands join its cgroup
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "p-$FW_ID" \
	--allow api.example.com -- sleep 300 &
FW_PIDS+=($!)
RUN_CG=$CG/p-$FW_ID
fw_eventually 20 grep -qs . "$RUN_CG/cgroup.procs" || fw_die "fastwall run did not start"
in_cg() { # CMD...: in the run's cgroup, in the pod namespace
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$RUN_CG" "$@"
}
tool() { in_cg "$FW_PY" "$FW_L7_TOOL" "$@"; }
curl_in() { # NAME ADDR [CURL ARGS...]: "STATUS BODY" of https://NAME/ at ADDR
	local name=$1 addr=$2 r=$2 out
	shift 2
	case $addr in *:*) r="[$addr]" ;; esac
	out=$(in_cg curl -s --cacert "$FW_L7_CA" --connect-timeout 2 --max-time 4 \
		--resolve "$name:${L7_PORT:-443}:$r" -w '\n%{http_code}' "$@" \
		"${L7_SCHEME:-https}://$name:${L7_PORT:-443}/" 2>/dev/null) || true
	echo "${out##*$'\n'} ${out%%$'\n'*}"
}
status_of() { echo "${1%% *}"; }
dig_in() { in_cg dig +short +time=2 +tries=1 @192.0.2.53 "${2:-A}" "$1" 2>/dev/null | head -n1; }

echo "# before resolving"
fw_l7_mark
check_eq "api.example.com's address is refused at connect" "$(status_of "$(curl_in api.example.com "$CDN4")")" 000
check "... nothing reached the far side" fw_l7_nothing_arrived

echo "# the allowed name"
check_eq "api.example.com resolves (through fastwalld's DNS proxy)" "$(dig_in api.example.com)" "$CDN4"
check_eq "... AAAA too" "$(dig_in api.example.com AAAA)" "$CDN6"
pinned0=$(fw_l7_sum fastwall_l7_connections_total l7-pinned)
fw_l7_mark
check_eq "curl https://api.example.com: 200 from api's own server" "$(curl_in api.example.com "$CDN4")" "200 api"
check "the server saw SNI and Host api.example.com" \
	fw_l7_server_saw "$CDN4:443 sni=api\.example\.com host=api\.example\.com \"GET / HTTP/1\.1\" 200$"
check "the ClientHello on the wire names api.example.com" fw_l7_wire_sni api.example.com
check_ge "it went through the proxy (fastwall_l7_connections_total{reason=l7-pinned})" \
	"$(fw_l7_sum fastwall_l7_connections_total l7-pinned)" $((pinned0 + 1))
check_eq "getpeername gives the address the process connected to" \
	"$(tool peer "$CDN4" 443)" "$CDN4 443"
fw_l7_mark
check_eq "over IPv6: 200" "$(curl_in api.example.com "$CDN6")" "200 api"
check "... the server saw it" fw_l7_server_saw "sni=api\.example\.com host=api\.example\.com"
check "a ClientHello in 5 pieces, 0.3 s apart: 200" \
	tool hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --pieces 5 --want "ok 200"
fw_l7_mark
check_eq "HTTP, Host api.example.com: 200" \
	"$(L7_SCHEME=http L7_PORT=80 curl_in api.example.com "$CDN4")" "200 api"

echo "# refused"
fw_l7_mark
check_eq "SNI other.example.com on the shared address: refused" \
	"$(status_of "$(curl_in other.example.com "$CDN4")")" 000
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check "no SNI: refused" tool hello "$CDN4" 443 --want refused
check "an ECH extension: refused" tool hello "$CDN4" 443 --sni api.example.com --ech --want refused
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check_eq "HTTP, Host other.example.com: 403" \
	"$(status_of "$(L7_SCHEME=http L7_PORT=80 curl_in other.example.com "$CDN4")")" 403
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check_eq "evil.example.net's address (never resolved): refused at connect" \
	"$(status_of "$(curl_in evil.example.net "$EVIL4")")" 000
check "... nothing reached the server" fw_l7_nothing_arrived
check "the proxy's TLS port on loopback, addressed directly: refused" \
	tool hello 127.0.0.1 15443 --sni api.example.com --ca "$FW_L7_CA" --want refused
check "... over IPv6 too" tool hello ::1 15443 --sni api.example.com --ca "$FW_L7_CA" --want refused

echo "# QUIC"
quic0=$(fw_counter "drop l7-quic")
fw_l7_mark
check_fails "UDP 443 to the allowed name's address fails at sendto" tool udp "$CDN4" 443
check_fails "... over IPv6 too" tool udp "$CDN6" 443
check "... nothing captured on the far side" fw_l7_nothing_arrived "" 443
check_ge "... counted as drop l7-quic" "$(fw_counter "drop l7-quic")" $((quic0 + 2))

echo "# reporting"
check "fastwalld's log audits the refusal with the run and the name" \
	fw_l7_has_line "$FW_LOG" "p-$FW_ID" l7-name other.example.com

fw_summary
