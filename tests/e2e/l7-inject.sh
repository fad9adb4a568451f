#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: layer-7 credential injection (docs/egress-l7.md,
# "Credentials") against the attacks on it. Two container sandboxes,
# subjects of the actions protocol, each with a vault pushed over
# /credential-vault: u-a's binds api.example.com and bad.example.com
# (X-Api-Key, https) and api.example.com over plain HTTP (bearer), u-b's
# binds other.example.com. The internet (tests/e2e/lib/credentials.sh): a
# real nginx with the test CA serving api.example.com and
# other.example.com on one shared address, evil.example.net on a second,
# bad.example.com with a self-signed certificate on a third, and behind it
# a backend that answers (and logs) every X-Api-Key and Authorization
# value it got, the body's length and hash, and a websocket echo. The
# clients trust fastwalld's CA as served at GET /l7/ca.crt on the actions
# listener. Checks, each on what the client saw and what the upstream got:
#
#   CA         the endpoint serves a CA certificate; a terminated name's
#              leaf is issued by it for the name
#   inject     curl, python requests, curl --http2 and h2load get the
#              credential to the upstream; the sandbox's own X-Api-Key (one
#              copy, two, any case) is replaced; plain HTTP gets the
#              http binding's Authorization and no X-Api-Key
#   siblings   a name the vault does not bind passes through untouched
#              (the upstream's own certificate, no header); u-b gets its
#              own credential and never u-a's, u-a never u-b's
#   requests   Host != SNI: 421 (HTTP/1.1 and HTTP/2), nothing upstream;
#              Host with a port, in upper case: injected; no ALPN;
#              HTTP/1.0 with and without Host; absolute-form naming
#              another host; CONNECT; a websocket upgrade; a streamed
#              (chunked) body
#   refused    a name not allowed (another tenant's SNI, an address never
#              resolved); an upstream with a bad certificate: 502
#   pushes     CR/LF or NUL in a credential, a binding for a host outside
#              the policy: 400 naming the credential, never its value, and
#              the vault unchanged; a patch is seen on the next request of
#              a kept-alive connection; removing the subject stops
#              injection at once
#   reporting  fastwall_l7_connections_total{reason=l7-injected,
#              l7-misdirected, l7-upstream-cert}; no credential in
#              fastwalld's log (the proxy's stderr is in it), the proxy's
#              files, fastwall monitor's output or the metrics
#
#   process    a `fastwall run` sandbox root started, allowed
#              api.example.com: a vault pushed before it started applies
#              when it registers; a delete, a new push and a binding
#              outside its policy (400) as for a container; when the run
#              ends its vault goes, and a new run of the name has none; a
#              run an unprivileged user started takes no vault (403)
#
# Skipped (exit 77) without nginx or nginx-dev, and on a build without
# credential injection: fastwalld check refuses `l7.credentials`, or the
# module has no fastwall_l7_terminate; FW_INJECT_HARNESS=1 runs it there
# all the same (the checks of injection fail, the rest shows the harness
# works). Prints "ok - ..." / "not ok - ..." and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
inject_cleanup() {
	local ns
	set +e
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_cleanup
	for ns in "$SB_A" "$SB_B"; do rm -rf "/etc/netns/$ns"; done
}
trap inject_cleanup EXIT
trap 'exit 130' INT TERM
fw_l7_require l7-inject.sh
# FW_INJECT_HARNESS=1: run on a build without injection all the same (no
# l7.credentials key, the test CA in place of fastwalld's): the checks of
# injection then fail, the rest shows the harness works
HARNESS=${FW_INJECT_HARNESS:-0}
if [ "$HARNESS" != 1 ] && ! fw_cred_has_terminate; then
	echo "l7-inject.sh: skipped: this build's module has no credential injection (no fastwall_l7_terminate in $FW_L7_SO)"
	exit 77
fi
for t in h2load jq; do
	command -v "$t" >/dev/null || fw_die "$t not found: run scripts/install-deps.sh"
done
"$FW_PY" -c 'import requests' 2>/dev/null || fw_die "python3-requests missing: run scripts/install-deps.sh"

CDN4=$FW_L7_CDN4
EVIL4=$FW_L7_EVIL4
BAD4=$FW_CRED_BAD4
FW_ACT_SOCK=$FW_TMP/vault.sock
SECRET_A=fw-e2e-A-$FW_ID-$RANDOM$RANDOM
SECRET_A2=fw-e2e-A2-$FW_ID-$RANDOM$RANDOM
SECRET_B=fw-e2e-B-$FW_ID-$RANDOM$RANDOM
SECRET_H=fw-e2e-H-$FW_ID-$RANDOM$RANDOM
SECRET_X=fw-e2e-X-$FW_ID-$RANDOM$RANDOM
SECRET_P=fw-e2e-P-$FW_ID-$RANDOM$RANDOM
SECRET_P2=fw-e2e-P2-$FW_ID-$RANDOM$RANDOM
RUN_GID=47312
FWCA=$FW_TMP/fw-ca.crt
NET_A=(--ip 10.42.0.2 --veth sb-a --gw 10.42.0.1 --cidr 10.42.0.0/24)
NET_B=(--ip 10.42.0.3 --veth sb-b --gw 10.42.0.1 --cidr 10.42.0.0/24)
POL_A='{"defaultAction":"deny","egress":[{"action":"allow","target":"api.example.com"},{"action":"allow","target":"other.example.com"},{"action":"allow","target":"bad.example.com"}]}'
POL_B='{"defaultAction":"deny","egress":[{"action":"allow","target":"api.example.com"},{"action":"allow","target":"other.example.com"}]}'
VAULT_A='{"credentials":[{"name":"k1","source":{"type":"inline","value":"'$SECRET_A'"}},{"name":"kh","source":{"type":"inline","value":"'$SECRET_H'"}}],"bindings":[{"name":"b-api","match":{"hosts":["api.example.com","bad.example.com"],"schemes":["https"]},"auth":{"type":"apiKey","name":"X-Api-Key","credential":"k1"}},{"name":"b-http","match":{"hosts":["api.example.com"],"schemes":["http"]},"auth":{"type":"bearer","credential":"kh"}}]}'

cat >"$FW_CFG" <<EOF
log_level: debug
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 1000, burst: 1000 }
dns:
  upstreams: [$FW_L7_UP4]
  timeout: 1
  port: 15353
metrics:
  listen: $FW_L7_METRICS
actions:
  listen: 127.0.0.1:$FW_ACT_PORT
  vault_socket: $FW_ACT_SOCK
  bind_host_veth: true
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
  run_group: $RUN_GID
$(if [ "$HARNESS" = 1 ]; then fw_l7_yaml; else fw_l7_yaml "credentials: on" "upstream_ca: $FW_L7_CA"; fi)
EOF
if ! "$FASTWALLD" -c "$FW_CFG" check >"$FW_TMP/check.out" 2>&1; then
	if grep -qE 'credentials|upstream_ca' "$FW_TMP/check.out"; then
		echo "l7-inject.sh: skipped: this fastwalld has no credential injection: $(head -n1 "$FW_TMP/check.out")"
		exit 77
	fi
	fw_die "fastwalld check refuses the configuration: $(cat "$FW_TMP/check.out")"
fi

fw_cg_mount "$CG_MNT"
fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_cred_internet
fw_cred_resolver
# the clients' names (ip netns exec mounts these over /etc/hosts)
for ns in "$SB_A" "$SB_B"; do
	mkdir -p "/etc/netns/$ns"
	printf '%s api.example.com other.example.com\n%s evil.example.net\n%s bad.example.com\n' \
		"$CDN4" "$EVIL4" "$BAD4" >"/etc/netns/$ns/hosts"
done

fw_start_daemon || fw_die "fastwalld did not start"
check "the proxy is up (fastwall_l7_up 1)" fw_eventually 15 fw_l7_up
"$FASTWALL" monitor --socket "$FW_MON_SOCK" -o json >"$FW_TMP/monitor.out" 2>&1 &
FW_PIDS+=($!)
fw_wait_log 'monitor: a reader connected' 1 5 || echo "# (fastwall monitor did not connect)"

in_ns() { # NS CMD...: with the namespace's /etc/hosts
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}
# get NS FIELD URL CA [CURL ARGS...]: "STATUS VALUES", VALUES the backend's
# list FIELD (x-api-key, authorization) comma-joined, "-" for none; HTTP/1.1
# unless the arguments say --http2
get() {
	local ns=$1 field=$2 url=$3 ca=$4 out code body vals
	shift 4
	out=$(in_ns "$ns" curl -s --http1.1 --connect-timeout 2 --max-time 5 --cacert "$ca" \
		-w '\n%{http_code}' "$@" "$url" 2>/dev/null) || true
	code=${out##*$'\n'}
	body=${out%$'\n'*}
	vals=$(jq -r --arg f "$field" '.[$f] | join(",")' <<<"$body" 2>/dev/null) || vals=""
	echo "${code:-000} ${vals:--}"
}
key_a() { get "$SB_A" x-api-key "https://api.example.com/echo" "$FWCA" "$@"; }
raw() { # NS ADDR SNI REQUEST [--alpn LIST|none]: the status of REQUEST over TLS
	local ns=$1 addr=$2 sni=$3 req=$4
	shift 4
	fw_ns "$ns" "$FW_PY" "$FW_CRED_TOOL" raw "$addr" 443 --sni "$sni" --ca "$FWCA" "$@" "$req"
}
echo_mark() { ECHO_MARK=$(wc -l <"$FW_CRED_ECHO"); }
echo_since() { tail -n +"$((ECHO_MARK + 1))" "$FW_CRED_ECHO"; }
mark() {
	L7_MARK_LOG=$(wc -l <"$FW_L7_ACCESS")
	echo_mark
}
# reply CODE [PATTERN...]: the last actions reply had CODE and a body
# matching every PATTERN (glob); says what it had
reply() {
	local code=$1 p
	shift
	echo "got $FW_ACT_CODE '$FW_ACT_BODY'"
	[ "$FW_ACT_CODE" = "$code" ] || return 1
	for p in "$@"; do
		# shellcheck disable=SC2053 # a glob on purpose
		[[ $FW_ACT_BODY == $p ]] || return 1
	done
}
no_secret_in_reply() { [[ $FW_ACT_BODY != *"$1"* ]]; }
nothing_upstream() { # no request reached the upstream since the mark
	sleep 0.3
	if [ -n "$(fw_l7_log_since)" ] || [ -n "$(echo_since)" ]; then
		fw_l7_log_since
		echo_since
		return 1
	fi
}
metric() { fw_l7_sum fastwall_l7_connections_total "$1"; }
# the first line's status of an HTTP response, for curl -o /dev/null
code_of() { echo "${1%% *}"; }

echo "# the CA"
fw_act_req GET /l7/ca.crt
check_eq "GET /l7/ca.crt on the actions listener: 200" "$FW_ACT_CODE" 200
cp "$FW_TMP/act.body" "$FWCA"
[ "$HARNESS" = 1 ] && [ "$FW_ACT_CODE" != 200 ] && cp "$FW_L7_CA" "$FWCA"
check "... a CA certificate (basicConstraints CA:TRUE)" \
	sh -c "openssl x509 -in '$FWCA' -noout -text | grep -q 'CA:TRUE'"
CA_SUBJ=$(openssl x509 -in "$FWCA" -noout -subject -nameopt RFC2253 2>/dev/null | sed 's/^subject=//')
check "... fastwalld's own, not the test CA" test -n "$CA_SUBJ" -a "$CA_SUBJ" != "CN=fastwall-l7-test-ca"

echo "# the sandboxes and their vaults"
fw_act SET_BINDING u-a "${NET_A[@]}" --input "$POL_A" --gen 1
check_code "SET_BINDING u-a: 200" 200
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready --gen 1
fw_act SET_BINDING u-b "${NET_B[@]}" --input "$POL_B" --gen 1
check_code "SET_BINDING u-b: 200" 200
fw_act LIFECYCLE_HOOK u-b "${NET_B[@]}" --hook data-plane-ready --gen 1
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary "$VAULT_A"
check_code "u-a's vault (X-Api-Key for https api and bad, bearer for http api): 201" 201
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-b' \
	--data-binary "$(fw_cred_vault "$SECRET_B" other.example.com)"
check_code "u-b's vault (X-Api-Key for https other): 201" 201
for n in api.example.com other.example.com bad.example.com; do
	check_eq "u-a resolves $n" "$(fw_l7_resolve "$SB_A" "$n")" "$(awk -v n="$n" '$0 ~ n { print $1 }' "/etc/netns/$SB_A/hosts")"
done
for n in api.example.com other.example.com; do
	check_eq "u-b resolves $n" "$(fw_l7_resolve "$SB_B" "$n")" "$CDN4"
done

echo "# injected"
inj0=$(metric l7-injected)
mark
check_eq "curl https://api.example.com (trusting fastwalld's CA only): the upstream got u-a's credential" \
	"$(key_a)" "200 $SECRET_A"
check "... the upstream's log: from the pod's address, SNI and Host api.example.com, the key" \
	fw_l7_server_saw "^192\.0\.2\.1 $CDN4:443 sni=api\.example\.com host=api\.example\.com \"GET /echo HTTP/1\.1\" 200 t=[0-9.]+ key=\"$SECRET_A\""
leaf_from_ca() { # the leaf s_client got for api.example.com: issued by fastwalld's CA, for the name
	local leaf
	leaf=$(fw_ns "$SB_A" timeout 5 openssl s_client -connect "$CDN4:443" -servername api.example.com \
		</dev/null 2>/dev/null | openssl x509 -noout -issuer -ext subjectAltName -nameopt RFC2253 2>/dev/null)
	echo "$leaf"
	[[ $leaf == *"issuer=$CA_SUBJ"* && $leaf == *"DNS:api.example.com"* ]]
}
check "the leaf it got: issued by fastwalld's CA, for DNS:api.example.com" leaf_from_ca
check_eq "the sandbox's own X-Api-Key: replaced" "$(key_a -H 'X-Api-Key: mine')" "200 $SECRET_A"
check_eq "two copies of it: both replaced by one" "$(key_a -H 'X-Api-Key: m1' -H 'X-Api-Key: m2')" "200 $SECRET_A"
check_eq "... in lower case: replaced" "$(key_a -H 'x-api-key: m3')" "200 $SECRET_A"
check_eq "Host with the port (api.example.com:443): injected" \
	"$(key_a -H 'Host: api.example.com:443')" "200 $SECRET_A"
check_eq "Host in upper case: injected" "$(key_a -H 'Host: API.EXAMPLE.COM')" "200 $SECRET_A"
check_eq "python requests: injected" \
	"$(in_ns "$SB_A" "$FW_PY" "$FW_CRED_TOOL" req https://api.example.com/echo --ca "$FWCA")" "200 $SECRET_A"
H2OUT=$(in_ns "$SB_A" curl -s --http2 --max-time 5 --cacert "$FWCA" -o "$FW_TMP/h2.body" \
	-w '%{http_version}' https://api.example.com/echo 2>/dev/null)
check_eq "curl --http2: HTTP/2 to the proxy" "$H2OUT" 2
check_eq "... injected" "$(jq -r '."x-api-key" | join(",")' "$FW_TMP/h2.body" 2>/dev/null)" "$SECRET_A"
# nginx 1.22's default protocols stop at TLS 1.2: the terminating server
# names its own
tls_of() { # the protocol curl negotiated with the proxy
	in_ns "$SB_A" curl -sv --max-time 5 --cacert "$FWCA" -o /dev/null \
		https://api.example.com/echo 2>&1 | sed -n 's/^\* SSL connection using \(TLSv1\.[0-9]\).*/\1/p'
}
check_eq "the terminating server speaks TLS 1.3" "$(tls_of)" TLSv1.3
mark
H2LOAD=$(in_ns "$SB_A" h2load -n 200 -c 2 -m 10 https://api.example.com/seen 2>&1)
check "h2load: 200 requests over 2 HTTP/2 connections, all succeeded" \
	grep -q 'requests: 200 total, 200 started, 200 done, 200 succeeded' <<<"$H2LOAD"
check_eq "... each reached the upstream with the credential" \
	"$(fw_l7_log_since | grep -c "\"GET /seen HTTP/1\.1\" 200 t=[0-9.]* key=\"$SECRET_A\"")" 200
HOUT=$(get "$SB_A" authorization http://api.example.com/echo "$FWCA")
check_eq "plain HTTP: the http binding's Authorization: Bearer" "$HOUT" "200 Bearer $SECRET_H"
check_eq "... and no X-Api-Key (the https binding does not name http)" \
	"$(get "$SB_A" x-api-key http://api.example.com/echo "$FWCA")" "200 -"
check_eq "https: no Authorization (the http binding does not name https)" \
	"$(get "$SB_A" authorization https://api.example.com/echo "$FWCA")" "200 -"
check_ge "fastwall_l7_connections_total{reason=l7-injected} counts them" "$(metric l7-injected)" $((inj0 + 8))

echo "# siblings"
mark
check_eq "u-a to other.example.com (not in its vault): passes through, the upstream's own certificate, no header" \
	"$(get "$SB_A" x-api-key https://other.example.com/echo "$FW_L7_CA")" "200 -"
check_eq "... its own X-Api-Key arrives as it sent it" \
	"$(get "$SB_A" x-api-key https://other.example.com/echo "$FW_L7_CA" -H 'X-Api-Key: own')" "200 own"
check_eq "u-b to other.example.com: u-b's credential" \
	"$(get "$SB_B" x-api-key https://other.example.com/echo "$FWCA")" "200 $SECRET_B"
check_eq "u-b to api.example.com (not in its vault): passes through, no header" \
	"$(get "$SB_B" x-api-key https://api.example.com/echo "$FW_L7_CA")" "200 -"
check_eq "u-a with SNI other.example.com and Host api.example.com: no credential" \
	"$(get "$SB_A" x-api-key https://other.example.com/echo "$FW_L7_CA" -H 'Host: api.example.com')" "200 -"
check_fails "the upstream never got u-b's credential from u-a, nor u-a's from u-b" \
	sh -c "grep -F '$SECRET_B' '$FW_CRED_ECHO' | grep -q 'api.example.com' || grep -F '$SECRET_A' '$FW_CRED_ECHO' | grep -q 'other.example.com'"

echo "# requests"
mis0=$(metric l7-misdirected)
mark
check_eq "Host other.example.com on the api.example.com connection: 421" \
	"$(key_a -H 'Host: other.example.com')" "421 -"
check_eq "... over HTTP/2 (:authority other.example.com): 421" \
	"$(code_of "$(key_a --http2 -H 'Host: other.example.com')")" 421
check_eq "absolute-form naming other.example.com: 421" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'GET https://other.example.com/echo HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n')" 421
check_eq "HTTP/1.0 without Host: 421" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'GET /echo HTTP/1.0\r\n\r\n')" 421
check "... none of them reached the upstream" nothing_upstream
check_ge "fastwall_l7_connections_total{reason=l7-misdirected}" "$(metric l7-misdirected)" $((mis0 + 4))
mark
check_eq "CONNECT other.example.com:443 inside the connection: refused (not 200)" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'CONNECT other.example.com:443 HTTP/1.1\r\nHost: other.example.com:443\r\n\r\n' |
		sed 's/^200$/200 (tunnel)/; t; s/.*/refused/')" refused
check_eq "CONNECT api.example.com:443: refused too" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n' |
		sed 's/^200$/200 (tunnel)/; t; s/.*/refused/')" refused
check "... nothing reached the upstream" nothing_upstream
mark
check_eq "no ALPN: HTTP/1.1 works" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'GET /echo HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n' --alpn none)" 200
check_eq "HTTP/1.0 with Host: 200" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'GET /echo HTTP/1.0\r\nHost: api.example.com\r\n\r\n')" 200
check_eq "absolute-form naming api.example.com: 200" \
	"$(raw "$SB_A" "$CDN4" api.example.com 'GET https://api.example.com/echo HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n')" 200
check_eq "... each arrived with the credential" \
	"$(echo_since | jq -r '."x-api-key" | join(",")' | sort -u)" "$SECRET_A"
mark
check_eq "a websocket upgrade: 101 and the echo" \
	"$(fw_ns "$SB_A" "$FW_PY" "$FW_CRED_TOOL" ws "$CDN4" 443 --sni api.example.com --ca "$FWCA")" "101 hello-ws"
check_eq "... the upgrade request carried the credential" \
	"$(echo_since | jq -r 'select(.path == "/ws") | ."x-api-key" | join(",")')" "$SECRET_A"
mark
STREAM=$( (printf 'part1-'; sleep 0.4; printf 'part2-'; sleep 0.4; printf 'part3') |
	in_ns "$SB_A" curl -s --max-time 8 --cacert "$FWCA" -T - -X POST https://api.example.com/upload 2>/dev/null)
check_eq "a streamed (chunked) body: arrives whole, with the credential" \
	"$(jq -r '"\(.body_len) \(.body_sha256) \(."x-api-key" | join(","))"' <<<"$STREAM" 2>/dev/null)" \
	"17 $(printf 'part1-part2-part3' | sha256sum | cut -d' ' -f1) $SECRET_A"
head -c 3000000 /dev/urandom >"$FW_TMP/big"
BIG=$( (head -c 1000000 "$FW_TMP/big"; sleep 0.3; tail -c +1000001 "$FW_TMP/big") |
	in_ns "$SB_A" curl -s --max-time 15 --cacert "$FWCA" -T - -X POST https://api.example.com/upload 2>/dev/null)
check_eq "3 MB streamed: arrives whole" "$(jq -r '"\(.body_len) \(.body_sha256)"' <<<"$BIG" 2>/dev/null)" \
	"3000000 $(sha256sum <"$FW_TMP/big" | cut -d' ' -f1)"

echo "# refused"
mark
check_eq "u-a with the SNI of a name it is not allowed (evil.example.net) on the shared address: refused" \
	"$(code_of "$(get "$SB_A" x-api-key https://evil.example.net/echo "$FWCA" --resolve "evil.example.net:443:$CDN4")")" 000
check_eq "u-a to evil.example.net's own address (never resolved, not allowed): refused" \
	"$(code_of "$(get "$SB_A" x-api-key https://evil.example.net/echo "$FW_L7_CA")")" 000
check "... nothing reached the upstream" nothing_upstream
uc0=$(metric l7-upstream-cert)
mark
check_eq "bad.example.com (bound; its upstream's certificate is self-signed): 502" \
	"$(code_of "$(get "$SB_A" x-api-key https://bad.example.com/echo "$FWCA")")" 502
check "... no request reached it" nothing_upstream
check_ge "fastwall_l7_connections_total{reason=l7-upstream-cert}" "$(metric l7-upstream-cert)" $((uc0 + 1))

echo "# pushes"
BAD_CRLF='{"credentials":[{"name":"k1","source":{"type":"inline","value":"'$SECRET_X'\r\nX-Evil: 1"}}],"bindings":[{"name":"b-api","match":{"hosts":["api.example.com"]},"auth":{"type":"apiKey","name":"X-Api-Key","credential":"k1"}}]}'
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary "$BAD_CRLF"
check "a credential with CR LF: 400 naming the credential" reply 400 '*k1*'
check "... not its value" no_secret_in_reply "$SECRET_X"
fw_act_req PATCH /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary \
	'{"credentials":[{"name":"k1","source":{"type":"inline","value":"'"$SECRET_X"'\u0000x"}}]}'
check "a PATCH with NUL in a credential: 400" reply 400
check "... without the value" no_secret_in_reply "$SECRET_X"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' \
	--data-binary "$(fw_cred_vault "$SECRET_X" evil.example.net)"
check "a binding for a host outside the policy: 400" reply 400 '*outside the subject*'
check_eq "... the vault unchanged: still u-a's credential" "$(key_a)" "200 $SECRET_A"

# a kept-alive client: one request, then (after the push) another on the
# same connection
keepalive() { # DONE-FILE OUT-FILE
	in_ns "$SB_A" "$FW_PY" "$FW_CRED_TOOL" req https://api.example.com/echo --ca "$FWCA" \
		--wait "$1" >"$2" 2>&1 &
	FW_PIDS+=($!)
	fw_eventually 10 test -e "$1.sent"
}
keepalive "$FW_TMP/ka1" "$FW_TMP/ka1.out"
fw_act_req PATCH /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary \
	'{"credentials":[{"name":"k1","source":{"type":"inline","value":"'"$SECRET_A2"'"}}]}'
check_code "PATCH k1 with a new value: 200" 200
touch "$FW_TMP/ka1"
fw_eventually 10 sh -c "[ \$(wc -l <'$FW_TMP/ka1.out') -ge 2 ]"
check_eq "a kept-alive connection: the old value before the patch, the new one on its next request" \
	"$(tr '\n' ' ' <"$FW_TMP/ka1.out")" "200 $SECRET_A 200 $SECRET_A2 "
check_eq "a new connection: the new value" "$(key_a)" "200 $SECRET_A2"

keepalive "$FW_TMP/ka2" "$FW_TMP/ka2.out"
mark
fw_act REMOVE_BINDING u-a "${NET_A[@]}"
check_code "REMOVE_BINDING u-a: 200" 200
touch "$FW_TMP/ka2"
fw_eventually 10 sh -c "[ \$(wc -l <'$FW_TMP/ka2.out') -ge 2 ]"
after_removal() { # the kept-alive client: injected before, nothing after
	cat "$FW_TMP/ka2.out"
	[ "$(sed -n 1p "$FW_TMP/ka2.out")" = "200 $SECRET_A2" ] && ! sed -n 2p "$FW_TMP/ka2.out" | grep -qF "$SECRET_A2"
}
check "u-a removed: the next request of its open connection carries no credential" after_removal
check_eq "... a new connection: refused" "$(code_of "$(key_a)")" 000
check_fails "... the upstream got no credential of u-a's since the removal" \
	sh -c "tail -n +$((ECHO_MARK + 2)) '$FW_CRED_ECHO' | grep -qF '$SECRET_A2'"

echo "# a process sandbox"
# a vault pushed for a run not started yet is cached, and applied when
# root's run of that name registers
fw_act_req POST /credential-vault -H "X-Fast-Sandbox-Uid: p-$FW_ID" \
	--data-binary "$(fw_cred_vault "$SECRET_P" api.example.com)"
check_eq "a vault for a run not started yet: 202 (cached)" "$FW_ACT_CODE" 202
RUN_CG=$CG/p-$FW_ID
start_run() { # root's run p-ID allowed api.example.com, kept alive
	nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "p-$FW_ID" \
		--allow api.example.com -- sleep 300 &
	FW_PIDS+=($!)
	fw_eventually 20 grep -qs . "$RUN_CG/cgroup.procs" || fw_die "fastwall run did not start"
}
start_run
in_cg() { # CMD...: in the run's cgroup, in the pod namespace
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$RUN_CG" "$@"
}
get_cg() { # CA [CURL ARGS...]: "STATUS X-API-KEYS" of https://api.example.com/echo from the run
	local ca=$1 out
	shift
	out=$(in_cg curl -s --http1.1 --connect-timeout 2 --max-time 5 --cacert "$ca" \
		--resolve "api.example.com:443:$CDN4" -w '\n%{http_code}' "$@" https://api.example.com/echo 2>/dev/null) || true
	echo "${out##*$'\n'} $(jq -r '."x-api-key" | join(",")' <<<"${out%$'\n'*}" 2>/dev/null | sed 's/^$/-/')"
}
check_eq "the run resolves api.example.com (through fastwalld's DNS proxy)" \
	"$(in_cg dig +short +time=2 +tries=1 @192.0.2.53 api.example.com 2>/dev/null | head -n1)" "$CDN4"
check_eq "the run, its vault cached before it started: its credential reaches the upstream" \
	"$(get_cg "$FWCA")" "200 $SECRET_P"
check_eq "... the sandbox's own X-Api-Key replaced" \
	"$(get_cg "$FWCA" -H 'X-Api-Key: mine')" "200 $SECRET_P"
fw_act_req DELETE /credential-vault -H "X-Fast-Sandbox-Uid: p-$FW_ID"
check_eq "the run's vault deleted: 204" "$FW_ACT_CODE" 204
check_eq "... the next connection passes through untouched (the upstream's certificate, no header)" \
	"$(get_cg "$FW_L7_CA")" "200 -"
fw_act_req POST /credential-vault -H "X-Fast-Sandbox-Uid: p-$FW_ID" \
	--data-binary "$(fw_cred_vault "$SECRET_P2" api.example.com)"
check_eq "a vault pushed to the live run: 201" "$FW_ACT_CODE" 201
check_eq "... its credential on the next connection" "$(get_cg "$FWCA")" "200 $SECRET_P2"
fw_act_req POST /credential-vault -H "X-Fast-Sandbox-Uid: p-$FW_ID" \
	--data-binary "$(fw_cred_vault "$SECRET_X" other.example.com)"
check_eq "a binding for a host outside the run's policy (other.example.com): 400" \
	"$FW_ACT_CODE $FW_ACT_BODY" \
	'400 invalid credential vault: binding "b1": host "other.example.com" is outside the subject'"'"'s policy'
check_eq "... the vault unchanged" "$(get_cg "$FWCA")" "200 $SECRET_P2"
# the run ends: its vault goes with it, and a later run of the name has none
# shellcheck disable=SC2046 # the cgroup's pids
kill $(cat "$RUN_CG/cgroup.procs") 2>/dev/null
check "the run ended: its subject and cgroup are gone" fw_eventually 10 test ! -d "$RUN_CG"
fw_act_req GET /credential-vault -H "X-Fast-Sandbox-Uid: p-$FW_ID"
check_eq "... GET of its vault: 404" "$FW_ACT_CODE" 404
start_run
check_eq "a new run of the same name resolves api.example.com" \
	"$(in_cg dig +short +time=2 +tries=1 @192.0.2.53 api.example.com 2>/dev/null | head -n1)" "$CDN4"
check_eq "... and gets no credential (the upstream's certificate, no header)" \
	"$(get_cg "$FW_L7_CA")" "200 -"
fw_act_req GET /credential-vault -H "X-Fast-Sandbox-Uid: p-$FW_ID"
check_eq "... GET of its vault: 404" "$FW_ACT_CODE" 404
# a user's run names itself: it never takes a vault (the name could be
# the one the platform pushes a sandbox's credentials for)
chmod 711 "$FW_TMP"
fw_ns "$NS_POD" setpriv --reuid=65534 --regid=65534 --groups="$RUN_GID" -- \
	"$FASTWALL" run --socket "$RUN_SOCK" --name "q-$FW_ID" --allow api.example.com -- sleep 300 &
FW_PIDS+=($!)
check "a run by an unprivileged user of the run group started" \
	fw_eventually 20 sh -c "grep -qs . '$CG'/*/'q-$FW_ID/cgroup.procs' || grep -qs . '$CG/q-$FW_ID/cgroup.procs'"
fw_act_req POST /credential-vault -H "X-Fast-Sandbox-Uid: q-$FW_ID" \
	--data-binary "$(fw_cred_vault "$SECRET_X" api.example.com)"
check_eq "a vault pushed for the user's run: 403" "$FW_ACT_CODE" 403
fw_act_req GET /credential-vault -H "X-Fast-Sandbox-Uid: q-$FW_ID"
check_eq "... it has none (404)" "$FW_ACT_CODE" 404

echo "# no credential anywhere but the upstream"
sleep 0.5 # the monitor's last events
fw_ns "$NS_POD" curl -s --max-time 3 "http://$FW_L7_METRICS/metrics" >"$FW_TMP/metrics.out"
for s in "$SECRET_A" "$SECRET_A2" "$SECRET_B" "$SECRET_H" "$SECRET_X" "$SECRET_P" "$SECRET_P2"; do
	check_fails "${s%%-"$FW_ID"*}: not in fastwalld's log (with the proxy's stderr)" grep -qF "$s" "$FW_LOG"
	check_fails "${s%%-"$FW_ID"*}: not in the proxy's files" grep -rqF "$s" "$FW_TMP/l7run"
	check_fails "${s%%-"$FW_ID"*}: not in fastwall monitor's output" grep -qF "$s" "$FW_TMP/monitor.out"
	check_fails "${s%%-"$FW_ID"*}: not in the metrics" grep -qF "$s" "$FW_TMP/metrics.out"
done
check "fastwall monitor reported l7-misdirected" fw_l7_has_line "$FW_TMP/monitor.out" l7-misdirected
check "... and l7-upstream-cert" fw_l7_has_line "$FW_TMP/monitor.out" l7-upstream-cert

fw_summary
