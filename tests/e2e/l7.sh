#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: layer-7 pinning of container sandboxes (TC redirect to
# fastwalld's nginx proxy). A real nginx in the simulated internet serves
# api.example.com and other.example.com on ONE shared address (a CDN) and
# evil.example.net on a second one, over TLS (a test CA made here) and
# HTTP; dnsmasq names them. Each check says what the user in the sandbox
# sees AND what reached the far side: a capture on the internet's link
# (l7tool.py capture: SYNs, the ClientHello's server name, the request's
# Host) and the server's access log (the remote address, SNI and Host of
# every request). Proxied connections reach the server from the pod's
# address (192.0.2.1), never from the sandbox's.
#
#   controls   without fastwalld: the server answers every name, a split,
#              a large, a padded, an ECH and a no-SNI ClientHello
#   TLS        sandbox-a, allowed api.example.com only: the allowed name
#              (IPv4, IPv6, upper case, 5 pieces, ~1.8 KB), another tenant
#              of the shared address, no SNI, an address as the name, ECH,
#              two server_name extensions, two names in one; fronting
#              (sandbox-b: api.example.com to the address evil.example.net
#              taught), and the address sandbox-a never resolved
#   HTTP       Host, another Host, a second request on the kept-alive
#              connection, an absolute-form URI, CL+TE, two Hosts
#   bypass     the proxy's ports addressed directly; UDP 443 (QUIC)
#   limit      l7.subject_connections: the extra connection refused, a
#              sibling still connects; the data plane's share: connections
#              opened and closed faster than it, a raw SYN flood
#   off        a subject with "l7: off" reaches any tenant, as before
#   reporting  fastwall monitor, the audit log, metrics, fastwall status
#   down       the proxy killed: nothing passes until it is back; a proxy
#              that never starts: l7-proxy-down, /readyz fails
# Skipped (exit 77) only without nginx or nginx-dev. FW_L7_OLD=1 runs the
# cases against fastwalld with no l7 section (a build without pinning
# fails them). Prints "ok - ..." / "not ok - ..." and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_l7_require l7.sh

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)
SB_D=$(fw_sb_ns d)
CDN4=$FW_L7_CDN4
CDN6=$FW_L7_CDN6
EVIL4=$FW_L7_EVIL4
LIMIT=4
SHARE=16 # dns.max_connections_per_subject: the data plane's share of fastwall_l7_nat

tool() { # NS ARGS...: l7tool.py in NS
	local ns=$1
	shift
	fw_ns "$ns" "$FW_PY" "$FW_L7_TOOL" "$@"
}
# s_client NS ADDR [ARGS...]: the CN of the certificate openssl s_client
# got from ADDR:443, "none" when the connection gave none
s_client() {
	local ns=$1 addr=$2 cn
	shift 2
	cn=$(fw_ns "$ns" timeout 5 openssl s_client -connect "$addr:443" -CAfile "$FW_L7_CA" "$@" \
		</dev/null 2>/dev/null | sed -n 's/^subject=.*CN *= *\([^,/]*\).*/\1/p' | head -n1)
	echo "${cn:-none}"
}
status_of() { echo "${1%% *}"; } # "STATUS BODY" -> STATUS
a_gets_api() { [ "$(fw_l7_curl "$SB_A" api.example.com "$CDN4")" = "200 api" ]; }
SB_SRC=' (10\.42\.0\.[0-9]+|fd00:42::[0-9a-f]+) [0-9]+ [^ ]+ (443|80) '
no_bypass() { # nothing from a sandbox's own address reached 443 or 80
	if fw_l7_cap_since | grep -qE "$SB_SRC"; then
		fw_l7_cap_since | grep -E "$SB_SRC" | head -3
		return 1
	fi
}

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4
fw_sandbox d 5
fw_l7_internet
fw_l7_resolver
fw_l7_capture

echo "# controls: the internet side answers, with no fastwalld running (from the pod)"
fw_l7_mark
check_eq "api.example.com on the shared address: its own server" "$(fw_l7_curl "$NS_POD" api.example.com "$CDN4")" "200 api"
check_eq "other.example.com on the same address" "$(fw_l7_curl "$NS_POD" other.example.com "$CDN4")" "200 other"
check_eq "evil.example.net on the second address" "$(fw_l7_curl "$NS_POD" evil.example.net "$EVIL4")" "200 evil"
check_eq "api.example.com over IPv6" "$(fw_l7_curl "$NS_POD" api.example.com "$CDN6")" "200 api"
check_eq "HTTP Host other.example.com on the shared address" "$(fw_l7_http "$NS_POD" other.example.com "$CDN4")" "200 other"
check "the server logged SNI and Host of each" fw_l7_server_saw "^192\.0\.2\.1 $CDN4:443 sni=other\.example\.com host=other\.example\.com \"GET / HTTP/1\.1\" 200$"
check "the capture saw the ClientHello naming other.example.com" fw_l7_wire_sni other.example.com
check "a ClientHello in 5 pieces, 0.3 s apart: the handshake completes" \
	tool "$NS_POD" hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --pieces 5 --want "ok 200"
check "a ~1.8 KB ClientHello (a long ALPN list): the handshake completes" \
	tool "$NS_POD" hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --size 1800 --want "ok 200"
check "a ClientHello with a 1.5 KB padding extension: ServerHello" \
	tool "$NS_POD" hello "$CDN4" 443 --sni api.example.com --pad 1500 --want serverhello
check "a ClientHello with an ECH extension: ServerHello (the server ignores it)" \
	tool "$NS_POD" hello "$CDN4" 443 --sni api.example.com --ech --want serverhello
check_eq "no SNI (s_client -noservername): the default certificate" \
	"$(s_client "$NS_POD" "$CDN4" -noservername)" default.invalid
fw_l7_mark
tool "$NS_POD" udp "$CDN4" 443
check "UDP to 443 leaves the pod (the capture sees it)" \
	fw_eventually 2 sh -c "tail -n +$((L7_MARK_CAP + 1)) '$FW_L7_CAP' | grep -q '^udp 192.0.2.1 [0-9]* $CDN4 443 '"

L7_YAML=$(fw_l7_yaml "subject_connections: $LIMIT")
cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 1000, burst: 1000 }
dns:
  upstreams: [$FW_L7_UP4]
  timeout: 1
  max_connections_per_subject: $SHARE
metrics:
  listen: $FW_L7_METRICS
$L7_YAML
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: api.example.com }
$(fw_subject_yaml b 3 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: api.example.com }
        - { action: allow, target: evil.example.net }
$(fw_subject_yaml c 4 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: api.example.com }
$(fw_subject_yaml d 5 v4)
$(fw_l7_subject_off)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: api.example.com }
EOF
fw_start_daemon || fw_die "fastwalld did not start"
check "fastwalld attached to the bridge ports" fw_wait_log 'attached to sb-d' 1 5
check "the proxy is up (fastwall_l7_up 1)" fw_eventually 15 fw_l7_up
"$FASTWALL" monitor --socket "$FW_MON_SOCK" -o json >"$FW_TMP/monitor.out" 2>&1 &
FW_PIDS+=($!)
fw_wait_log 'monitor: a reader connected' 1 5 || echo "# (fastwall monitor did not connect)"

echo "# TLS: sandbox-a, allowed api.example.com only"
fw_l7_mark
check_eq "before resolving, api.example.com's address is dropped" \
	"$(status_of "$(fw_l7_curl "$SB_A" api.example.com "$CDN4")")" 000
check "... and nothing reached the far side" fw_l7_nothing_arrived
check_eq "api.example.com resolves to the shared address" "$(fw_l7_resolve "$SB_A" api.example.com)" "$CDN4"
check_eq "... AAAA too" "$(fw_l7_resolve "$SB_A" api.example.com AAAA)" "$CDN6"
proxy0=$(fw_subject_counter sandbox-a "pass l7-proxy")
fw_l7_mark
check_eq "curl https://api.example.com: 200 from api's own server (its certificate checked)" \
	"$(fw_l7_curl "$SB_A" api.example.com "$CDN4")" "200 api"
check "the server saw SNI and Host api.example.com, from the proxy (the pod's address)" \
	fw_l7_server_saw "^192\.0\.2\.1 $CDN4:443 sni=api\.example\.com host=api\.example\.com \"GET / HTTP/1\.1\" 200$"
check "the ClientHello on the wire names api.example.com (passed through, not re-made)" \
	fw_l7_wire_sni api.example.com
check "nothing of sandbox-a's own address reached the far side" no_bypass
check_ge "fastwall subjects counts sandbox-a's pass l7-proxy" \
	"$(fw_subject_counter sandbox-a "pass l7-proxy")" $((proxy0 + 1))
fw_l7_mark
check_eq "over IPv6: 200 from api's server" "$(fw_l7_curl "$SB_A" api.example.com "$CDN6")" "200 api"
check "... which saw it from the pod's IPv6 address" \
	fw_l7_server_saw "^2001:db8:1::1 \[?$CDN6\]?:443 sni=api\.example\.com host=api\.example\.com"
fw_l7_mark
check "the name in upper case is the same name: the handshake completes" \
	tool "$SB_A" hello "$CDN4" 443 --sni API.Example.COM --ca "$FW_L7_CA" --host api.example.com --want "ok 200"

fw_l7_mark
check_eq "SNI other.example.com to the shared address (another tenant): refused" \
	"$(status_of "$(fw_l7_curl "$SB_A" other.example.com "$CDN4")")" 000
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check_eq "... over IPv6 too" "$(status_of "$(fw_l7_curl "$SB_A" other.example.com "$CDN6")")" 000
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check_eq "no SNI (openssl s_client -noservername): no certificate comes back" \
	"$(s_client "$SB_A" "$CDN4" -noservername)" none
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check_eq "an address as the server name (s_client -servername $CDN4): none" \
	"$(s_client "$SB_A" "$CDN4" -servername "$CDN4")" none
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check "an ECH extension (0xfe0d) with SNI api.example.com: refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --ech --want refused
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check "two server_name extensions (api.example.com, other.example.com): refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --dup-sni other.example.com --want refused
check "... the second naming api.example.com too: refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --dup-sni api.example.com --want refused
check "two host_name entries in one server_name extension: refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --two-names other.example.com --want refused
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check "a ClientHello for api.example.com in 5 pieces, 0.3 s apart: 200" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --pieces 5 --want "ok 200"
check "... the server saw it" fw_l7_server_saw "^192\.0\.2\.1 $CDN4:443 sni=api\.example\.com "
fw_l7_mark
check "a ~1.8 KB ClientHello for api.example.com: 200" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --size 1800 --want "ok 200"
check "... 1.8 KB and in 5 pieces: 200" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --size 1800 --pieces 5 --want "ok 200"
check "a ClientHello with a 1.5 KB padding extension: the server's ServerHello comes back" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --pad 1500 --want serverhello
check "... the server saw those" fw_l7_server_saw "^192\.0\.2\.1 $CDN4:443 sni=api\.example\.com .* 200$"
fw_l7_mark
check "a ClientHello for other.example.com in 5 pieces: refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni other.example.com --ca "$FW_L7_CA" --pieces 5 --want refused
check "... 1.8 KB: refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni other.example.com --ca "$FW_L7_CA" --size 1800 --want refused
check "... nothing reached the server" fw_l7_nothing_arrived

echo "# fronting: the address another name taught"
check_eq "sandbox-b: evil.example.net resolves to the second address" \
	"$(fw_l7_resolve "$SB_B" evil.example.net)" "$EVIL4"
check_eq "sandbox-b: api.example.com resolves to the shared address" \
	"$(fw_l7_resolve "$SB_B" api.example.com)" "$CDN4"
fw_l7_mark
check_eq "sandbox-b: evil.example.net on its own address: 200" \
	"$(fw_l7_curl "$SB_B" evil.example.net "$EVIL4")" "200 evil"
fw_l7_mark
check_eq "sandbox-b: SNI api.example.com to the address only evil.example.net taught: refused" \
	"$(status_of "$(fw_l7_curl "$SB_B" api.example.com "$EVIL4")")" 000
check "... nothing reached the server" fw_l7_nothing_arrived
dd0=$(fw_subject_counter sandbox-a "drop default-deny")
fw_l7_mark
check_eq "sandbox-a (never resolved evil.example.net): SNI api.example.com to its address: dropped" \
	"$(status_of "$(fw_l7_curl "$SB_A" api.example.com "$EVIL4")")" 000
check_ge "... by policy (drop default-deny)" "$(fw_subject_counter sandbox-a "drop default-deny")" $((dd0 + 1))
check "... nothing reached the server" fw_l7_nothing_arrived

echo "# HTTP: the Host of every request"
fw_l7_mark
check_eq "Host api.example.com on the shared address: 200" "$(fw_l7_http "$SB_A" api.example.com "$CDN4")" "200 api"
check "... the server saw it from the proxy, Host api.example.com" \
	fw_l7_server_saw "^192\.0\.2\.1 $CDN4:80 sni=- host=api\.example\.com \"GET / HTTP/1\.[01]\" 200$"
check "nothing of sandbox-a's own address reached the far side" no_bypass
fw_l7_mark
check_eq "Host other.example.com on the shared address: 403" \
	"$(status_of "$(fw_l7_http "$SB_A" other.example.com "$CDN4")")" 403
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check "a kept-alive connection: Host api.example.com 200, then Host other.example.com refused" \
	tool "$SB_A" http "$CDN4" 80 'GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n' \
	'GET / HTTP/1.1\r\nHost: other.example.com\r\n\r\n' --want "200 403|200 closed"
check "... the server saw the first request" fw_l7_server_saw "host=api\.example\.com \"GET / HTTP/1\.[01]\" 200$"
check_fails "... and not the second" fw_l7_log_has "other\.example\.com"
fw_l7_mark
check "an absolute-form URI of another host (Host api.example.com): refused" \
	tool "$SB_A" http "$CDN4" 80 'GET http://other.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n' \
	--want "403|400|closed"
check "... nothing reached the server" fw_l7_nothing_arrived
fw_l7_mark
check "Content-Length with Transfer-Encoding (a smuggled request behind): 400" \
	tool "$SB_A" http "$CDN4" 80 'POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: other.example.com\r\n\r\n' \
	--want 400
check "two Host headers (api.example.com, other.example.com): 400" \
	tool "$SB_A" http "$CDN4" 80 'GET / HTTP/1.1\r\nHost: api.example.com\r\nHost: other.example.com\r\n\r\n' \
	--want 400
check "... nothing reached the server" fw_l7_nothing_arrived

echo "# the proxy's own ports, and QUIC"
fw_l7_mark
check_fails "sandbox-a to the proxy's TLS port on the gateway (10.42.0.1:15443): dropped" \
	fw_ns "$SB_A" nc -z -w 2 10.42.0.1 15443
check_fails "... its HTTP port (10.42.0.1:15080)" fw_ns "$SB_A" nc -z -w 2 10.42.0.1 15080
check_fails "... over IPv6 ([fd00:42::1]:15443)" fw_ns "$SB_A" nc -z -w 2 fd00:42::1 15443
check_fails "... on the pod's uplink address (192.0.2.1:15443)" fw_ns "$SB_A" nc -z -w 2 192.0.2.1 15443
quic0=$(fw_subject_counter sandbox-a "drop l7-quic")
fw_l7_mark
tool "$SB_A" udp "$CDN4" 443
tool "$SB_A" udp "$CDN6" 443
check "UDP 443 (QUIC) from sandbox-a: nothing captured on the far side" fw_l7_nothing_arrived "" 443
check_ge "... dropped as l7-quic, IPv4 and IPv6" "$(fw_subject_counter sandbox-a "drop l7-quic")" $((quic0 + 2))

echo "# the per-subject limit (l7.subject_connections: $LIMIT)"
check_eq "sandbox-c resolves api.example.com" "$(fw_l7_resolve "$SB_C" api.example.com)" "$CDN4"
fw_bg "$SB_A" "$FW_PY" "$FW_L7_TOOL" hold "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" \
	-n "$LIMIT" --out "$FW_TMP/hold.out"
HOLDER=${FW_PIDS[-1]}
fw_eventually 20 test -s "$FW_TMP/hold.out" || true
check_eq "sandbox-a holds $LIMIT proxied TLS connections" "$(cat "$FW_TMP/hold.out" 2>/dev/null)" "ready $LIMIT 0"
fw_l7_mark
check "one more from sandbox-a: refused" \
	tool "$SB_A" hello "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" --want refused
check "... nothing reached the server" fw_l7_nothing_arrived
check_eq "sandbox-c (a sibling) still connects meanwhile" "$(fw_l7_curl "$SB_C" api.example.com "$CDN4")" "200 api"
kill "$HOLDER" 2>/dev/null || true
wait "$HOLDER" 2>/dev/null || true
check "sandbox-a connects again once it holds fewer" \
	fw_eventually 5 a_gets_api

echo "# the data plane's share (dns.max_connections_per_subject: $SHARE) bounds open connections, not their rate"
full0=$(fw_subject_counter sandbox-c "drop l7-full")
out=$(tool "$SB_C" connlat "$CDN4" 443 --sni api.example.com --ca "$FW_L7_CA" -n $((SHARE * 8)))
check_eq "sandbox-c opens and closes $((SHARE * 8)) connections one after another: all complete" \
	"$(tr ' ' '\n' <<<"$out" | grep '^failed=')" "failed=0"
check_eq "... none dropped l7-full" "$(fw_subject_counter sandbox-c "drop l7-full")" "$full0"
c_entries() { # sandbox-c's (10.42.0.4) fastwall_l7_nat entries
	bpftool -j map dump pinned "$BPFFS/fastwall_l7_nat" | "$FW_PY" -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)
          if [int(b, 16) for b in e["key"][10:16]] == [0xff, 0xff, 10, 42, 0, 4]))'
}
c_entries_gone() {
	[ "$(c_entries)" = 0 ]
}
echo "# sandbox-c's entries after the last close: $(c_entries)"
check "... and their entries go within 2 s of the last close (the proxy reported them)" \
	fw_eventually 2 c_entries_gone

echo "# a SYN flood from every source port (a raw socket in sandbox-b): its share holds, a sibling connects"
bfull0=$(fw_subject_counter sandbox-b "drop l7-full")
bproxy0=$(fw_subject_counter sandbox-b "pass l7-proxy")
fw_l7_mark
check_eq "sandbox-b sends 3000 SYNs to api.example.com's address, from 3000 ports" \
	"$(tool "$SB_B" synflood "$CDN4" 443 --src 10.42.0.3 -n 3000)" "sent 3000"
check "... none reached the far side" fw_l7_nothing_arrived
check_ge "... all but its share dropped l7-full" \
	"$(fw_subject_counter sandbox-b "drop l7-full")" $((bfull0 + 3000 - SHARE))
check_ge "... and its share went to the proxy" \
	"$(fw_subject_counter sandbox-b "pass l7-proxy")" $((bproxy0 + SHARE))
check_eq "sandbox-c (a sibling) connects right after" "$(fw_l7_curl "$SB_C" api.example.com "$CDN4")" "200 api"

echo "# l7: off"
check_eq "sandbox-d (l7: off) resolves api.example.com" "$(fw_l7_resolve "$SB_D" api.example.com)" "$CDN4"
fw_l7_mark
check_eq "sandbox-d reaches other.example.com on the shared address, as without pinning" \
	"$(fw_l7_curl "$SB_D" other.example.com "$CDN4")" "200 other"
check "... directly: the server saw sandbox-d's own address" \
	fw_l7_server_saw "^10\.42\.0\.5 $CDN4:443 sni=other\.example\.com host=other\.example\.com"

echo "# what fastwall reports"
check "fastwall monitor showed the l7-name denial with the name" \
	fw_eventually 5 fw_l7_has_line "$FW_TMP/monitor.out" l7-name other.example.com sandbox-a
check "fastwalld's log audits it with the subject and the name" \
	fw_l7_has_line "$FW_LOG" sandbox-a l7-name other.example.com
check "... and the ECH refusal" fw_l7_has_line "$FW_LOG" sandbox-a l7-ech
check "... and the HTTP Host refusal" fw_l7_has_line "$FW_LOG" sandbox-a l7-name other.example.com
check_ge "fastwall_l7_connections_total{reason=l7-pinned}" "$(fw_l7_sum fastwall_l7_connections_total l7-pinned)" 8
check_ge "... {reason=l7-name}" "$(fw_l7_sum fastwall_l7_connections_total l7-name)" 7
check_ge "... {reason=l7-no-name}" "$(fw_l7_sum fastwall_l7_connections_total l7-no-name)" 2
check_ge "... {reason=l7-ech}" "$(fw_l7_sum fastwall_l7_connections_total l7-ech)" 1
check_ge "... {reason=l7-bad-hello}" "$(fw_l7_sum fastwall_l7_connections_total l7-bad-hello)" 3
check_ge "... {reason=l7-limit}" "$(fw_l7_sum fastwall_l7_connections_total l7-limit)" 1
check_ge "fastwall_l7_bytes_total counts the proxied bytes" "$(fw_l7_sum fastwall_l7_bytes_total)" 1000
check_ge "fastwall status counts pass l7-proxy" "$(fw_counter "pass l7-proxy")" 8
check_ge "... and drop l7-quic" "$(fw_counter "drop l7-quic")" 2

echo "# the proxy killed"
mapfile -t PROXY < <(fw_l7_proxy_pids)
check "fastwalld runs the proxy: an nginx master and its worker" test "${#PROXY[@]}" -ge 2
down0=$(fw_counter "drop l7-proxy-down")
restarts0=$(fw_l7_metric fastwall_l7_restarts_total)
fw_l7_mark
[ "${#PROXY[@]}" -ge 1 ] && kill -KILL "${PROXY[@]}" 2>/dev/null
failed=0
back=""
for _ in $(seq 150); do
	if [ "$(fw_l7_curl "$SB_A" api.example.com "$CDN4" --connect-timeout 0.3 --max-time 1)" = "200 api" ]; then
		back=yes
		break
	fi
	failed=$((failed + 1))
done
check_ge "right after the kill, new connections fail" "$failed" 1
check_ge "... dropped as l7-proxy-down" "$(fw_counter "drop l7-proxy-down")" $((down0 + 1))
check "... and none of them reached the server: only the one after the restart did" \
	test "$(fw_l7_log_since | grep -vc '^192\.0\.2\.1 ' || true)" = 0 -a "$(fw_l7_log_since | wc -l)" -le 1
check "nothing of sandbox-a's own address reached the far side" no_bypass
check_eq "the proxy is back: api.example.com answers" "${back:-no}" yes
check_ge "fastwall_l7_restarts_total counted the restart" "$(fw_l7_metric fastwall_l7_restarts_total)" $((restarts0 + 1))
check "the proxy is a new process" sh -c "! kill -0 ${PROXY[0]:-0} 2>/dev/null && [ -n \"\$(pgrep -P $FW_DAEMON_PID nginx)\" ]"

echo "# a proxy that never starts"
fw_stop_daemon
printf '#!/bin/sh\necho "not nginx" >&2\nexit 1\n' >"$FW_TMP/no-nginx"
chmod 0755 "$FW_TMP/no-nginx"
sed -i "s|^  enabled: true|  enabled: true\n  nginx: $FW_TMP/no-nginx|" "$FW_CFG"
if ! fw_start_daemon; then
	fw_not_ok "fastwalld runs, failing closed, when its proxy never starts"
	fw_summary
	exit
fi
check "fastwalld runs, failing closed, when its proxy never starts" kill -0 "$FW_DAEMON_PID"
check_eq "fastwall_l7_up 0" "$(fw_l7_metric fastwall_l7_up)" 0
check_eq "/readyz fails while the proxy is down" \
	"$(fw_ns "$NS_POD" curl -s -o /dev/null -w '%{http_code}' "http://$FW_L7_METRICS/readyz")" 503
down0=$(fw_counter "drop l7-proxy-down")
fw_l7_mark
check_eq "sandbox-a's allowed name: no connection" \
	"$(status_of "$(fw_l7_curl "$SB_A" api.example.com "$CDN4")")" 000
check_eq "... nor HTTP" "$(status_of "$(fw_l7_http "$SB_A" api.example.com "$CDN4")")" 000
check_ge "... dropped as l7-proxy-down" "$(fw_counter "drop l7-proxy-down")" $((down0 + 2))
check "... nothing reached the server" fw_l7_nothing_arrived
check_eq "sandbox-d (l7: off) still reaches it" "$(fw_l7_curl "$SB_D" api.example.com "$CDN4")" "200 api"

fw_summary
