#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: a hostile client on the actions listener (the real fastwalld
# in a pod namespace; the clients are python sockets bound to other
# loopback addresses of that namespace). Idle and trickling connections
# must not lock out the status endpoint, held bodies must not grow the
# daemon without bound, a body framed two ways is refused, a uid cannot
# forge a log record.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
# shellcheck disable=SC2016 # the checks hand code in single quotes to eval or bash -c, which expand it
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_act_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

ABUSE=$FW_E2E_DIR/http_abuse.py
fw_topology
fw_sandbox s 9
fw_act_config keep 3
# under SANITIZE=1, ASan keeps freed blocks in quarantine, which the held
# bodies' RSS check would count as the daemon's; no effect otherwise
export ASAN_OPTIONS="quarantine_size_mb=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fw_start_daemon || fw_die "fastwalld did not start"
abuse() { fw_ns "$NS_POD" "$FW_PY" -S "$ABUSE" --port "$FW_ACT_PORT" "$@"; }

echo "# idle sockets"
check "1,100 idle sockets from 127.0.0.2: status from 127.0.0.1 answered within 3 s" \
	abuse idle --flood-src 127.0.0.2 -n 1100 --timeout 3
check "and again at once (the refused ones did not pile up)" \
	abuse idle --flood-src 127.0.0.2 -n 200 --timeout 3

echo "# trickled headers"
check "headers trickled a byte every 0.5 s: closed by the 10 s header deadline" \
	abuse --src 127.0.0.3 trickle --every 0.5 --within 13

echo "# body framing"
check "two different Content-Length headers: 400" abuse framing two-lengths
check "Content-Length with Transfer-Encoding: chunked: 400" abuse framing length-and-chunked
fw_act_req GET /_fastlet/v1/actions/status
check_code "status still 200 afterwards" 200

echo "# control characters in a uid"
FORGED='2026-12-01T00:00:00.000Z info  subject sb-victim: removed (id 1)'
fw_act REMOVE_BINDING $'sb-evil\n'"$FORGED"$'\e[2K'
check_reply "a uid with a newline and an escape: 400" 400 \
	"invalid action envelope: sandbox.uid must not contain control characters"
fw_act_req PUT /policy -H $'X-Fast-Sandbox-Uid: sb-evil\e[31m' --data-binary '{"defaultAction":"deny"}'
check_reply "a uid header with an escape: 400" 400 "missing or invalid X-Fast-Sandbox-Uid"
check_fails "no forged record in the log" grep -q "^$FORGED" "$FW_LOG"
check_fails "no escape byte in the log" grep -q $'\e' "$FW_LOG"

echo "# secrets in errors"
# a vault body with its value unquoted: jansson's message quotes the token
BROKEN='{"credentials":[{"name":"gh","source":{"type":"inline","value":nullSecretabcdef0123}}]}'
# cached before the binding, so parsed when the binding flushes them
fw_act_req PUT /policy -H 'X-Fast-Sandbox-Uid: sb-s' --data-binary "$BROKEN"
check_code "a policy push for a uid not bound yet: cached" 202
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: sb-s' --data-binary "$BROKEN"
check_code "a vault push for it: cached" 202
NET_S=(--ip 10.42.0.9 --veth sb-s --gw 10.42.0.1 --cidr 10.42.0.0/24)
fw_act SET_BINDING sb-s "${NET_S[@]}"
check_code "SET_BINDING sb-s: 200" 200
fw_act LIFECYCLE_HOOK sb-s "${NET_S[@]}" --hook data-plane-ready
check_code "data-plane-ready sb-s: 200" 200
for m in PUT POST PATCH DELETE; do
	fw_act_req "$m" /policy -H 'X-Fast-Sandbox-Uid: sb-s' --data-binary "$BROKEN"
	check "$m /policy with a broken vault body: 400 without the secret" \
		bash -c 'echo "$1 $2"; [ "$1" = 400 ] && [[ $2 != *Secretabcdef* ]] && [[ $2 != *abcdef0123* ]]' _ \
		"$FW_ACT_CODE" "$FW_ACT_BODY"
done
for m in POST PATCH; do
	fw_act_req "$m" /credential-vault -H 'X-Fast-Sandbox-Uid: sb-s' --data-binary "$BROKEN"
	check "$m /credential-vault with it: 400 without the secret" \
		bash -c 'echo "$1 $2"; [ "$1" = 400 ] && [[ $2 != *Secretabcdef* ]]' _ "$FW_ACT_CODE" "$FW_ACT_BODY"
done
fw_act_post "$BROKEN"
check "POST /_fastlet/v1/actions with it: 400 without the secret" \
	bash -c 'echo "$1 $2"; [ "$1" = 400 ] && [[ $2 != *Secretabcdef* ]]' _ "$FW_ACT_CODE" "$FW_ACT_BODY"
check_fails "the secret is nowhere in the log" grep -qE 'Secretabcdef|abcdef0123' "$FW_LOG"

echo "# held bodies"
check "96 bodies of 1 MB held open: daemon grows < 56 MiB, the excess answered 503" \
	abuse bodies --pid "$FW_DAEMON_PID" --srcs 127.0.0.10,127.0.0.11 -n 96 --size 1000000 --max-mib 56
fw_act_req GET /_fastlet/v1/actions/status
check_code "status still 200 afterwards" 200
check "fastwalld still running" kill -0 "$FW_DAEMON_PID"

fw_summary
