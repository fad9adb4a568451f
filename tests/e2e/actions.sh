#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the Sandbox Actions protocol over HTTP against the real
# fastwalld, with real traffic from sandbox namespaces. Every endpoint and
# error of the protocol and of the credential push (docs/protocol.md) is
# checked by status code and body.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
# shellcheck disable=SC2016 # the checks hand code in single quotes to eval or bash -c, which expand it
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_act_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v nc >/dev/null || fw_die "nc not found"
command -v bpftool >/dev/null || fw_die "bpftool not found"

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
SB_C=$(fw_sb_ns c)
SB_D=$(fw_sb_ns d)

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_sandbox c 4
fw_sandbox d 5
fw_serve_internet
fw_act_config keep 3
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-d' 1 5 || fw_die "fastwalld did not attach to the sandbox ports"

NET_A=(--ip 10.42.0.2 --veth sb-a --gw 10.42.0.1 --cidr 10.42.0.0/24)
NET_B=(--ip 10.42.0.3 --veth sb-b --gw 10.42.0.1 --cidr 10.42.0.0/24)
NET_C=(--ip 10.42.0.4 --veth sb-c --gw 10.42.0.1 --cidr 10.42.0.0/24)
NET_D=(--ip 10.42.0.5 --veth sb-d --gw 10.42.0.1 --cidr 10.42.0.0/24)
# allow the 198.51.100.0/24 "internet" except .66; a name for the vault
POL_A='{"defaultAction":"deny","egress":[{"action":"allow","target":"198.51.100.0/24"},{"action":"deny","target":"198.51.100.66"},{"action":"allow","target":"api.example.com"}]}'
# ... and 203.0.113.10 too
POL_A2='{"defaultAction":"deny","egress":[{"action":"allow","target":"198.51.100.0/24"},{"action":"deny","target":"198.51.100.66"},{"action":"allow","target":"api.example.com"},{"action":"allow","target":"203.0.113.10"}]}'
EMPTY='{}'
ENV_ERR="invalid action envelope:"

allowed() { fw_http "$1" http://198.51.100.10/ 2; }	  # NS: a real TCP exchange
udp_ok() { fw_udp "$1" "$2" 9000 1; }			  # NS HOST
udp_dropped() { ! fw_udp "$1" "$2" 9000 0.5; }		  # NS HOST
policy_of() { # UID: the "policy" member of GET /policy, compact
	fw_act_req GET /policy -H "X-Fast-Sandbox-Uid: $1"
	"$FW_PY" -S -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["policy"],separators=(",",":")))' \
		<<<"$FW_ACT_BODY" 2>/dev/null
}
norm() { "$FW_PY" -S -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]),separators=(",",":")))' "$1"; }

echo "# status endpoint"
fw_act_req GET /_fastlet/v1/actions/status
check_code "GET status: 200" 200
check_eq "GET status: Content-Type application/json" "$(fw_act_header Content-Type)" application/json
check "GET status: apiVersion, ready:true, instanceId of the form <name>-<pid>-<12 hex>" \
	"$FW_PY" -S -c '
import json, re, sys
j = json.loads(sys.argv[1])
assert j["apiVersion"] == "sandbox.fast.io/actions/v1", j
assert j["ready"] is True, j
assert re.fullmatch(r"[a-z]+-[0-9]+-[0-9a-f]{12}", j["instanceId"]), j
' "$FW_ACT_BODY"
INST1=$(fw_act_instance)
check_eq "instanceId stable within one process" "$(fw_act_instance)" "$INST1"
for m in POST PUT DELETE; do
	fw_act_req "$m" /_fastlet/v1/actions/status
	check_reply "$m status: 405" 405 "method not allowed"
	check_eq "$m status: Allow: GET" "$(fw_act_header Allow)" GET
done
for m in GET PUT PATCH; do
	fw_act_req "$m" /_fastlet/v1/actions
	check_reply "$m actions: 405" 405 "method not allowed"
	check_eq "$m actions: Allow: POST" "$(fw_act_header Allow)" POST
done
for p in /_fastlet/v1/actions/status/ /_fastlet/v1/actions/ /_fastlet/v1 /_fastlet/v1/actions/status/x /nope /; do
	fw_act_req GET "$p"
	check_code "GET $p: 404" 404
done
fw_act_req POST /_fastlet/v1/actions/ --data-binary "$(fw_act_env SET_BINDING u-x "${NET_A[@]}")"
check_code "POST /_fastlet/v1/actions/ (trailing slash): 404" 404
fw_act_req GET '/credential-vault/_active?clientIp=10.42.0.2'
check_code "GET /credential-vault/_active on the TCP listener: 404" 404

echo "# validation: 400 with the reason, in the documented order"
V=(--ip 10.42.0.50 --veth sb-v)
# the cases are collected, their envelopes built by one process, then sent
VC_D=()
VC_W=()
VC_A=()
vcase() { # DESC REASON ENV ARGS...
	VC_D+=("$1")
	VC_W+=("$2")
	shift 2
	VC_A+=("$(printf '%q ' "$@")")
}
vcase "apiVersion wrong (uid empty too): apiVersion first" 'unsupported apiVersion "v0"' \
	SET_BINDING "" "${V[@]}" --set 'apiVersion="v0"'
vcase "apiVersion missing" 'unsupported apiVersion ""' SET_BINDING u-v "${V[@]}" --del apiVersion
vcase "uid empty (no binding either): uid before the operation checks" "sandbox.uid is required" \
	SET_BINDING "" "${V[@]}" --no-binding
vcase "uid missing" "sandbox.uid is required" SET_BINDING u-v "${V[@]}" --del sandbox.uid
vcase "unknown operation" 'unknown operation "FROB"' FROB u-v "${V[@]}"
vcase "operation missing" 'unknown operation ""' SET_BINDING u-v "${V[@]}" --del operation
vcase "SET_BINDING without binding (no runtimeInstanceId either): binding first" \
	"binding is required" SET_BINDING u-v "${V[@]}" --no-binding --rt ""
vcase "SET_BINDING binding without input" "binding.input is required" \
	SET_BINDING u-v "${V[@]}" --set 'binding={}'
vcase "SET_BINDING binding.input a number" "binding.input must be a string or null" \
	SET_BINDING u-v "${V[@]}" --set 'binding.input=5'
vcase "SET_BINDING binding.input an object" "binding.input must be a string or null" \
	SET_BINDING u-v "${V[@]}" --set 'binding.input={"defaultAction":"deny"}'
vcase "SET_BINDING without attachment.network.ip" "attachment.network.ip is required" \
	SET_BINDING u-v --veth sb-v
vcase "SET_BINDING bad IP" 'invalid attachment.network.ip "10.42.0.300"' \
	SET_BINDING u-v --ip 10.42.0.300 --veth sb-v
vcase "SET_BINDING without hostVeth" "attachment.network.hostVeth is required" \
	SET_BINDING u-v --ip 10.42.0.50
vcase "LIFECYCLE_HOOK without hook" "hook is required" LIFECYCLE_HOOK u-v "${V[@]}"
vcase "LIFECYCLE_HOOK hook without name" "hook.name is required" \
	LIFECYCLE_HOOK u-v "${V[@]}" --set 'hook={"sequence":2}'
vcase "LIFECYCLE_HOOK unknown hook (no fence either): hook first" 'unknown hook "sandbox.bogus"' \
	LIFECYCLE_HOOK u-v "${V[@]}" --hook sandbox.bogus --rt ""
vcase "SET_BINDING without runtimeInstanceId" "revision.runtimeInstanceId is required" \
	SET_BINDING u-v "${V[@]}" --rt ""
vcase "SET_BINDING without attachmentId" "revision.attachmentId is required" \
	SET_BINDING u-v "${V[@]}" --att ""
vcase "LIFECYCLE_HOOK without attachmentId" "revision.attachmentId is required" \
	LIFECYCLE_HOOK u-v "${V[@]}" --hook data-plane-ready --att ""
vcase "REMOVE_BINDING without runtimeInstanceId" "revision.runtimeInstanceId is required" \
	REMOVE_BINDING u-v --rt ""
vcase "REMOVE_BINDING without attachmentId" "revision.attachmentId is required" \
	REMOVE_BINDING u-v --att ""
vcase "bad gateway" 'invalid attachment.network.gateway "10.42.0.x"' \
	SET_BINDING u-v "${V[@]}" --gw 10.42.0.x
vcase "bad privateCidr" 'invalid attachment.network.privateCidr "10.42.0.0/33"' \
	SET_BINDING u-v "${V[@]}" --cidr 10.42.0.0/33
vcase "bad IP on REMOVE_BINDING too" 'invalid attachment.network.ip "nope"' \
	REMOVE_BINDING u-v --ip nope
vcase "negative specGeneration" "revision.specGeneration must be a non-negative integer" \
	SET_BINDING u-v "${V[@]}" --gen -1
vcase "negative routeGeneration" "revision.routeGeneration must be a non-negative integer" \
	SET_BINDING u-v "${V[@]}" --set 'revision.routeGeneration=-3'
vcase "negative hook.sequence" "hook.sequence must be a non-negative integer" \
	LIFECYCLE_HOOK u-v "${V[@]}" --hook data-plane-ready --seq -1
vcase "uid a number" "sandbox.uid must be a string" SET_BINDING u-v "${V[@]}" --set 'sandbox.uid=7'
mapfile -t VC_E < <(printf '%s\n' "${VC_A[@]}" | "$FW_PY" -S "$FW_ACT_CLIENT" envs)
for i in "${!VC_D[@]}"; do
	fw_act_post "${VC_E[$i]:-}"
	check_reply "${VC_D[$i]}" 400 "$ENV_ERR ${VC_W[$i]}"
done
fw_act_post '{"apiVersion":"sandbox.fast.io/actions/v1",'
check "malformed JSON: 400 invalid action envelope: malformed JSON..." \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == "$ENV_ERR malformed JSON"* ]]'
fw_act_post '[1,2]'
check_reply "body not an object: 400" 400 "$ENV_ERR body must be a JSON object"
fw_act_post ''
check "empty body: 400 invalid action envelope: malformed JSON..." \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == "$ENV_ERR malformed JSON"* ]]'
fw_act SET_BINDING u-v "${V[@]}" --input '{"defaultAction":"maybe"}'
check "invalid policy in binding.input: 400 invalid action envelope: invalid binding.input: ..." \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == "$ENV_ERR invalid binding.input: "* ]]'
fw_act SET_BINDING u-v "${V[@]}" --input '{"egress":[{"action":"allow","target":"10.0.0.0/40"}]}'
check "bad CIDR target in binding.input: 400 invalid binding.input" \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == "$ENV_ERR invalid binding.input: "* ]]'
# over 1 MiB: with a Content-Length, and chunked (no length)
"$FW_PY" -S -c '
import json, sys
e = json.loads(sys.argv[1]); e["pad"] = "x" * (1 << 20)
open(sys.argv[2], "w").write(json.dumps(e))' "$(fw_act_env SET_BINDING u-v "${V[@]}")" "$FW_TMP/big.json"
fw_act_req POST /_fastlet/v1/actions --data-binary "@$FW_TMP/big.json"
check "body > 1 MiB (Content-Length): 400 ...too large" \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == *"too large"* ]]'
fw_act_req POST /_fastlet/v1/actions -H 'Transfer-Encoding: chunked' --data-binary "@$FW_TMP/big.json"
check "body > 1 MiB (chunked): 400 ...too large" \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == *"too large"* ]]'
check_eq "no state change after the rejected envelopes: u-v not registered" "$(fw_subj u-v id)" ""
check_eq "no state change: no dispatch for 10.42.0.50" "$(fw_dispatch 10.42.0.50)" none
fw_act_req GET /_fastlet/v1/actions/status
check_code "status still 200 after the rejections" 200

echo "# first SET_BINDING without the network slot, then the retry"
fw_act SET_BINDING u-a --input "$POL_A" --gen 1
check_reply "SET_BINDING with empty attachment.network: 400" 400 "$ENV_ERR attachment.network.ip is required"
fw_act SET_BINDING u-a --input "$POL_A" --gen 1 --set 'attachment.network={}'
check_reply "SET_BINDING with attachment.network {}: 400" 400 "$ENV_ERR attachment.network.ip is required"
check_eq "nothing registered for u-a" "$(fw_subj u-a id)" ""
dn0=$(fw_counter "drop denying")
fw_act SET_BINDING u-a "${NET_A[@]}" --input "$POL_A" --gen 1 --set 'unknownField={"x":1}' \
	--set 'sandbox.extra="y"'
check_reply "retry with the network (and unknown fields): 200 {}" 200 "$EMPTY"
ID_A=$(fw_subj u-a id)
check_eq "u-a is denying in fastwall subjects" "$(fw_subj u-a state)" denying
check_eq "dispatch 10.42.0.2 -> u-a" "$(fw_dispatch 10.42.0.2)" "$ID_A"
check_fails "denying: sandbox-a tcp -> 198.51.100.10:80 (allowed by the pending policy) dropped" \
	fw_http "$SB_A" http://198.51.100.10/ 1
check_ge "drop denying counted" "$(fw_counter "drop denying")" $((dn0 + 1))
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-a'
check "GET /policy while denying: 200, state denying" \
	eval '[ "$FW_ACT_CODE" = 200 ] && [[ $FW_ACT_BODY == *"\"state\":\"denying\""* ]]'

echo "# hooks and activation"
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook runtime-ready
check_reply "runtime-ready: 200 {}" 200 "$EMPTY"
check_eq "runtime-ready changes nothing: still denying" "$(fw_subj u-a state)" denying
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready --inv inv-a-dpr-1
check_reply "data-plane-ready: 200 {}" 200 "$EMPTY"
check_eq "u-a active" "$(fw_subj u-a state)" active
check_eq "u-a id unchanged by activation" "$(fw_subj u-a id)" "$ID_A"
check "active: sandbox-a tcp -> 198.51.100.10:80 passes" allowed "$SB_A"
check "active: sandbox-a udp -> 198.51.100.10:9000 passes" udp_ok "$SB_A" 198.51.100.10
check "active: sandbox-a udp -> 198.51.100.66 (deny rule) dropped" udp_dropped "$SB_A" 198.51.100.66
check "active: sandbox-a udp -> 203.0.113.10 (default deny) dropped" udp_dropped "$SB_A" 203.0.113.10
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready --inv inv-a-dpr-1
check_reply "duplicate data-plane-ready (same invocationId): 200 {} (fastwall differs #1)" 200 "$EMPTY"
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready
check_reply "data-plane-ready again (new invocationId) on an active subject: 200 {}" 200 "$EMPTY"
check_eq "still active after the duplicates" "$(fw_subj u-a state)" active
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-a'
check_reply "GET /policy active: 200 mode/enforcementMode/state/policy" 200 \
	"{\"mode\":\"enforcing\",\"enforcementMode\":\"ebpf\",\"state\":\"active\",\"policy\":$(norm "$POL_A")}"
check_eq "fastwall explain: u-a's rule and its text, as GET /policy has it" \
	"$(fw_cli explain --config "$FW_CFG" 10.42.0.2 198.51.100.66 80/tcp | sed -n 's/^decided:  //p' || true)" \
	"rule 2 of u-a's policy: deny 198.51.100.66 (entry 198.51.100.66/32)"

echo "# SET_BINDING update while active: in place"
fw_act SET_BINDING u-a "${NET_A[@]}" --input "$POL_A2" --gen 2 --inv inv-a-upd-2
check_reply "SET_BINDING update while active: 200 {}" 200 "$EMPTY"
check_eq "update: subject id unchanged" "$(fw_subj u-a id)" "$ID_A"
check_eq "update: still active" "$(fw_subj u-a state)" active
check "update: the new rule works at once (udp -> 203.0.113.10 passes)" udp_ok "$SB_A" 203.0.113.10
check "update: the old rules still work (tcp -> 198.51.100.10)" allowed "$SB_A"
fw_act SET_BINDING u-a "${NET_A[@]}" --input "$POL_A2" --gen 2 --inv inv-a-upd-2
check_reply "retried SET_BINDING (same invocationId): 200 {}" 200 "$EMPTY"
check_eq "retried SET_BINDING: same id, still active" "$(fw_subj u-a id) $(fw_subj u-a state)" "$ID_A active"
check_eq "GET /policy shows the update" "$(policy_of u-a)" "$(norm "$POL_A2")"

echo "# input null: back to denying"
fw_act SET_BINDING u-a "${NET_A[@]}" --input-null --gen 3
check_reply "SET_BINDING input null: 200 {}" 200 "$EMPTY"
check_eq "input null: u-a denying, same id" "$(fw_subj u-a state) $(fw_subj u-a id)" "denying $ID_A"
check_fails "input null: sandbox-a tcp -> 198.51.100.10 dropped" fw_http "$SB_A" http://198.51.100.10/ 1
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready
check_reply "data-plane-ready with no pending policy: 409" 409 "subject u-a has no pending policy"
check_eq "409 left u-a denying" "$(fw_subj u-a state)" denying

echo "# \"\" and \"null\" inputs are default deny"
fw_act SET_BINDING u-a "${NET_A[@]}" --input "" --gen 4
check_reply 'SET_BINDING input "": 200 {}' 200 "$EMPTY"
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready
check_reply 'data-plane-ready after input "": 200 {}' 200 "$EMPTY"
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-a'
check_reply 'input "": active, deny_all, no rules' 200 \
	'{"mode":"deny_all","enforcementMode":"ebpf","state":"active","policy":{"defaultAction":"deny","egress":[]}}'
check 'input "": sandbox-a udp -> 198.51.100.10 dropped' udp_dropped "$SB_A" 198.51.100.10
fw_act SET_BINDING u-a "${NET_A[@]}" --input "null" --gen 5
check_reply 'SET_BINDING input "null" (a string): 200 {}' 200 "$EMPTY"
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-a'
check_reply 'input "null": still active (not the null value), deny_all, no rules' 200 \
	'{"mode":"deny_all","enforcementMode":"ebpf","state":"active","policy":{"defaultAction":"deny","egress":[]}}'
fw_act SET_BINDING u-a "${NET_A[@]}" --input " {} " --gen 6
check_reply 'SET_BINDING input " {} ": 200 {}' 200 "$EMPTY"
fw_act SET_BINDING u-a "${NET_A[@]}" --input "$POL_A2" --gen 7
check_reply "SET_BINDING back to the full policy: 200 {}" 200 "$EMPTY"
check "policy back: sandbox-a tcp -> 198.51.100.10 passes" allowed "$SB_A"
check_eq "u-a kept its id through all of it" "$(fw_subj u-a id)" "$ID_A"

echo "# hooks for unknown subjects, stale hooks"
fw_act LIFECYCLE_HOOK u-nobody --hook data-plane-ready
check_reply "data-plane-ready for an unknown subject: 409" 409 "subject u-nobody is not registered"
fw_act LIFECYCLE_HOOK u-nobody --hook runtime-ready
check_reply "runtime-ready for an unknown subject: 409" 409 "subject u-nobody is not registered"
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook data-plane-ready --att sha256:other
check_reply "data-plane-ready with another attachmentId (stale): 409" 409 \
	"stale hook: fence does not match subject u-a"
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook runtime-ready --rt rt-old
check_reply "runtime-ready with another runtimeInstanceId (stale): 409" 409 \
	"stale hook: fence does not match subject u-a"
check_eq "stale hooks changed nothing" "$(fw_subj u-a id) $(fw_subj u-a state)" "$ID_A active"

echo "# policy pushes"
P1='{"defaultAction":"deny","egress":[{"action":"allow","target":"203.0.113.10"}]}'
for h in "" "X-Fast-Sandbox-Uid;" "X-Fast-Sandbox-Uid:    " \
	"X-Fast-Sandbox-Uid: $(printf 'u%.0s' $(seq 129))" "X-Fast-Sandbox-Uid: a/b" \
	'X-Fast-Sandbox-Uid: a\b'; do
	fw_act_req POST /policy ${h:+-H "$h"} --data-binary "$P1"
	check_reply "policy push, uid header '${h:0:40}': 400" 400 "missing or invalid X-Fast-Sandbox-Uid"
done
fw_act_req POST /credential-vault -H "X-Fast-Sandbox-Uid: a/b" --data-binary '{}'
check_reply "vault push, uid with '/': 400" 400 "missing or invalid X-Fast-Sandbox-Uid"
fw_act_req POST /policy -H "X-Fast-Sandbox-Uid: $(printf 'u%.0s' $(seq 128))" --data-binary "$P1"
check_code "policy push, 128-character uid: accepted (202)" 202
PEND='{"status":"pending","reason":"subject not registered yet; push cached"}'
fw_act_req POST /policy -H "X-Fast-Sandbox-Uid:  u-p  " -H 'X-Fast-Sandbox-Generation: 7' --data-binary "$P1"
check_reply "policy push for an unknown uid (trimmed header): 202 pending" 202 "$PEND"
fw_act_req POST /policy -H "X-Fast-Sandbox-Uid: u-q" -H 'X-Fast-Sandbox-Generation: 7' --data-binary "$P1"
check_reply "policy push for another unknown uid: 202 pending" 202 "$PEND"
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-p'
check_code "GET /policy for an unknown uid: 404" 404
fw_act SET_BINDING u-p --ip 10.42.0.61 --veth sb-p --input "$POL_A" --gen 7
check_reply "SET_BINDING u-p (specGeneration 7 = cached push's): 200 {}" 200 "$EMPTY"
fw_act LIFECYCLE_HOOK u-p --ip 10.42.0.61 --veth sb-p --hook data-plane-ready --gen 7
check_reply "data-plane-ready u-p: 200 {}" 200 "$EMPTY"
check "the cached push met a denying subject: 202, not stored" \
	fw_wait_log 'subject u-p: cached policy push POST not stored: the binding input is authoritative \(202\)'
check_eq "the binding input is what data-plane-ready activated (GET /policy)" \
	"$(policy_of u-p)" "$(norm "$POL_A")"
fw_act SET_BINDING u-q --ip 10.42.0.62 --veth sb-q --input "$POL_A" --gen 8
check_reply "SET_BINDING u-q (specGeneration 8 != cached push's 7): 200 {}" 200 "$EMPTY"
fw_act LIFECYCLE_HOOK u-q --ip 10.42.0.62 --veth sb-q --hook data-plane-ready --gen 8
check_eq "cached push with another generation dropped: the binding input is in force" \
	"$(policy_of u-q)" "$(norm "$POL_A")"

fw_act SET_BINDING u-dn --ip 10.42.0.63 --veth sb-dn --input "$POL_A" --gen 1
fw_act_req POST /policy -H "X-Fast-Sandbox-Uid: u-dn" --data-binary "$P1"
check_reply "policy push for a denying subject: 202" 202 \
	'{"status":"pending","reason":"subject denying; SET_BINDING input is authoritative"}'
fw_act LIFECYCLE_HOOK u-dn --ip 10.42.0.63 --veth sb-dn --hook data-plane-ready
check_eq "push for a denying subject not stored: the binding input is activated" \
	"$(policy_of u-dn)" "$(norm "$POL_A")"

OKP='{"status":"ok","mode":"enforcing","enforcementMode":"ebpf"}'
fw_act_req POST /policy -H "X-Fast-Sandbox-Uid: u-a" --data-binary "$P1"
check_reply "POST /policy on active u-a: 200 ok" 200 "$OKP"
check_eq "POST replaced the policy" "$(policy_of u-a)" "$(norm "$P1")"
check "POST applied to the data plane: udp -> 203.0.113.10 passes" udp_ok "$SB_A" 203.0.113.10
check "POST applied to the data plane: udp -> 198.51.100.10 dropped" udp_dropped "$SB_A" 198.51.100.10
P2='{"defaultAction":"deny","egress":[{"action":"allow","target":"198.51.100.0/24"},{"action":"allow","target":"a.example.com"},{"action":"deny","target":"198.51.100.66"}]}'
fw_act_req PUT /policy -H "X-Fast-Sandbox-Uid: u-a" --data-binary "$P2"
check_reply "PUT /policy: 200 ok" 200 "$OKP"
check_eq "PUT replaced the policy" "$(policy_of u-a)" "$(norm "$P2")"
PATCH='{"defaultAction":"allow","egress":[{"action":"deny","target":"198.51.100.0/24"},{"action":"allow","target":"b.example.com"},{"action":"allow","target":"198.51.100.0/24"}]}'
fw_act_req PATCH /policy -H "X-Fast-Sandbox-Uid: u-a" --data-binary "$PATCH"
check_reply "PATCH /policy: 200 ok" 200 "$OKP"
check_eq "PATCH merged: same target replaced in place (first of the patch wins), new appended, defaultAction kept" \
	"$(policy_of u-a)" \
	'{"defaultAction":"deny","egress":[{"action":"deny","target":"198.51.100.0/24"},{"action":"allow","target":"a.example.com"},{"action":"deny","target":"198.51.100.66"},{"action":"allow","target":"b.example.com"}]}'
check "PATCH applied: udp -> 198.51.100.10 dropped" udp_dropped "$SB_A" 198.51.100.10
fw_act_req DELETE /policy -H "X-Fast-Sandbox-Uid: u-a" --data-binary '["198.51.100.0/24"]'
check_reply "DELETE /policy [targets]: 200 ok" 200 "$OKP"
fw_act_req DELETE /policy -H "X-Fast-Sandbox-Uid: u-a" --data-binary '{"targets":["b.example.com"]}'
check_reply "DELETE /policy {targets}: 200 ok" 200 "$OKP"
WANT_DEL='{"defaultAction":"deny","egress":[{"action":"allow","target":"a.example.com"},{"action":"deny","target":"198.51.100.66"}]}'
check_eq "DELETE removed the targets" "$(policy_of u-a)" "$WANT_DEL"
fw_act_req DELETE /policy -H "X-Fast-Sandbox-Uid: u-a" --data-binary '{"targets":["b.example.com","198.51.100.0/24"]}'
check_reply "DELETE again (idempotent): 200 ok" 200 "$OKP"
check_eq "DELETE again changed nothing" "$(policy_of u-a)" "$WANT_DEL"
fw_act_req PUT /policy -H "X-Fast-Sandbox-Uid: u-a" -H 'X-Fast-Sandbox-Generation: not-a-number' \
	--data-binary "$POL_A2"
check_reply "unparsable X-Fast-Sandbox-Generation ignored: 200 ok" 200 "$OKP"
check_eq "the push with the unparsable generation was applied" "$(policy_of u-a)" "$(norm "$POL_A2")"
check "after the pushes: sandbox-a tcp -> 198.51.100.10 passes" allowed "$SB_A"
check_eq "pushes kept u-a's id" "$(fw_subj u-a id)" "$ID_A"

echo "# credential vault"
SECRET=fw-e2e-SECRET-$FW_ID-$RANDOM$RANDOM
SECRET2=fw-e2e-SECRET2-$FW_ID-$RANDOM$RANDOM
vault_body() { # SECRET HOST
	printf '{"credentials":[{"name":"k1","source":{"type":"inline","value":"%s"}}],"bindings":[{"name":"b1","match":{"hosts":["%s"],"schemes":["https"]},"auth":{"type":"apiKey","name":"X-Api-Key","credential":"k1"}}]}' "$1" "$2"
}
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-a'
check_code "vault GET before any push: 404" 404
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary "$(vault_body "$SECRET" api.example.com)"
check_reply "vault POST: 201" 201 ""
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-a'
check "vault GET: 200 with the binding" eval '[ "$FW_ACT_CODE" = 200 ] && [[ $FW_ACT_BODY == *"\"b1\""* ]] && [[ $FW_ACT_BODY == *"\"k1\""* ]]'
check_fails "vault GET: the secret value is redacted" grep -qF "$SECRET" "$FW_TMP/act.body"
fw_act_req PATCH /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary \
	"{\"credentials\":[{\"name\":\"k2\",\"source\":{\"type\":\"inline\",\"value\":\"$SECRET2\"}}]}"
check_reply "vault PATCH: 200" 200 ""
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-a'
check "vault GET after PATCH: both credentials, none of the values" \
	eval '[ "$FW_ACT_CODE" = 200 ] && [[ $FW_ACT_BODY == *"\"k1\""* ]] && [[ $FW_ACT_BODY == *"\"k2\""* ]] && [[ $FW_ACT_BODY != *SECRET* ]]'
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-a' --data-binary "$(vault_body "$SECRET" evil.example.org)"
check "vault binding for a host outside the policy: 400" \
	eval '[ "$FW_ACT_CODE" = 400 ] && [[ $FW_ACT_BODY == "invalid credential vault: "*"outside the subject'"'"'s policy"* ]]'

echo "# the active vault over the unix socket"
check_eq "vault socket mode 0600" "$(stat -c %a "$FW_ACT_SOCK" 2>&1)" 600
check_eq "vault socket is a socket" "$(stat -c %F "$FW_ACT_SOCK" 2>&1)" socket
av() { # QUERY [CURL ARGS]: sets AV_CODE, AV_BODY, AV_ETAG
	local q=$1
	shift
	: >"$FW_TMP/av.body"
	: >"$FW_TMP/av.hdrs"
	AV_CODE=$(curl -s --unix-socket "$FW_ACT_SOCK" -o "$FW_TMP/av.body" -D "$FW_TMP/av.hdrs" \
		-w '%{http_code}' --max-time 3 "$@" "http://localhost/credential-vault/_active$q" 2>/dev/null)
	AV_BODY=$(cat "$FW_TMP/av.body")
	AV_ETAG=$(tr -d '\r' <"$FW_TMP/av.hdrs" | awk -F': ' 'tolower($1) == "etag" { print $2 }')
}
av '?clientIp=10.42.0.2'
check_eq "active vault for 10.42.0.2: 200" "$AV_CODE" 200
check "active vault: an ETag" test -n "$AV_ETAG"
check "active vault: carries the credential for the proxy" grep -qF "$SECRET" "$FW_TMP/av.body"
ETAG=$AV_ETAG
av '?clientIp=10.42.0.2' -H "If-None-Match: $ETAG"
check_eq "active vault with If-None-Match = ETag: 304" "$AV_CODE" 304
check_eq "304 has no body" "$AV_BODY" ""
av '?clientIp=10.42.0.2' -H 'If-None-Match: "other"'
check_eq "active vault with a stale If-None-Match: 200" "$AV_CODE" 200
av '?clientIp=10.42.0.99'
check_eq "active vault for an unknown IP: 404" "$AV_CODE" 404
av '?clientIp=10.42.0.61'
check_eq "active vault for a subject with no vault: 404" "$AV_CODE" 404
av ''
check_eq "active vault without clientIp: 400" "$AV_CODE $AV_BODY" "400 missing or malformed clientIp"
av '?clientIp='
check_eq "active vault with an empty clientIp: 400" "$AV_CODE $AV_BODY" "400 missing or malformed clientIp"
av '?clientIp=10.42.0.999'
check_eq "active vault with a malformed clientIp: 400" "$AV_CODE $AV_BODY" "400 missing or malformed clientIp"
av '?clientIp=10.42.0.2' -X POST
check_eq "active vault POST: 405" "$AV_CODE" 405
AV_CODE=$(curl -s --unix-socket "$FW_ACT_SOCK" -o /dev/null -w '%{http_code}' --max-time 3 \
	http://localhost/_fastlet/v1/actions/status)
check_eq "the actions endpoints are not served on the unix socket: 404" "$AV_CODE" 404

fw_act_req DELETE /credential-vault -H 'X-Fast-Sandbox-Uid: u-a'
check_reply "vault DELETE: 204" 204 ""
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-a'
check_code "vault GET after DELETE: 404" 404
fw_act_req DELETE /credential-vault -H 'X-Fast-Sandbox-Uid: u-a'
check_code "vault DELETE again: 204 (idempotent)" 204
av '?clientIp=10.42.0.2'
check_eq "active vault after DELETE: 404" "$AV_CODE" 404

fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-vq' --data-binary "$(vault_body "$SECRET" api.example.com)"
check_reply "vault push for an unknown subject: 202, empty body" 202 ""
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-vq'
check_code "vault GET for an unknown subject: 404" 404
fw_act SET_BINDING u-vq --ip 10.42.0.64 --veth sb-vq --input "$POL_A" --gen 1
check_reply "SET_BINDING u-vq: 200 {}" 200 "$EMPTY"
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-vq'
check "cached vault push flushed on SET_BINDING: GET 200 with the binding, redacted" \
	eval '[ "$FW_ACT_CODE" = 200 ] && [[ $FW_ACT_BODY == *"\"b1\""* ]] && [[ $FW_ACT_BODY != *SECRET* ]]'
fw_act REMOVE_BINDING u-vq --ip 10.42.0.64
check_reply "REMOVE_BINDING u-vq: 200 {}" 200 "$EMPTY"
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-vq'
check_code "REMOVE_BINDING dropped the vault: GET 404" 404

# the reference's smoke test 6: a policy push and a vault push cached
# before the binding; the vault is checked against the binding's own input
# (POL_A allows api.example.com, the cached P1 does not) and stored while
# the subject is still denying; the policy push is not stored
fw_act_req POST /policy -H 'X-Fast-Sandbox-Uid: u-s6' --data-binary "$P1"
check_reply "smoke 6: policy push cached" 202 "$PEND"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-s6' --data-binary "$(vault_body "$SECRET" api.example.com)"
check_reply "smoke 6: vault push cached" 202 ""
fw_act SET_BINDING u-s6 --ip 10.42.0.66 --veth sb-s6 --input "$POL_A" --gen 1
check_reply "smoke 6: SET_BINDING 200 {}" 200 "$EMPTY"
check_eq "smoke 6: the subject is denying" "$(fw_subj u-s6 state)" denying
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-s6'
check "smoke 6: the cached vault was flushed against the binding input: GET 200 with b1" \
	eval '[ "$FW_ACT_CODE" = 200 ] && [[ $FW_ACT_BODY == *"\"b1\""* ]] && [[ $FW_ACT_BODY != *SECRET* ]]'
check "smoke 6: log: the vault applied (201), the policy not stored (202)" \
	eval "fw_wait_log 'subject u-s6: cached vault push POST applied \\(201\\)' &&
		fw_wait_log 'subject u-s6: cached policy push POST not stored: the binding input is authoritative \\(202\\)'"
fw_act LIFECYCLE_HOOK u-s6 --ip 10.42.0.66 --veth sb-s6 --hook data-plane-ready --gen 1
check_eq "smoke 6: data-plane-ready activates the binding input" "$(policy_of u-s6)" "$(norm "$POL_A")"
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-s6g' -H 'X-Fast-Sandbox-Generation: 3' \
	--data-binary "$(vault_body "$SECRET" api.example.com)"
fw_act SET_BINDING u-s6g --ip 10.42.0.67 --veth sb-s6g --input "$POL_A" --gen 4
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-s6g'
check_code "a cached vault push of another generation is dropped at the flush: GET 404" 404
fw_act REMOVE_BINDING u-s6 --ip 10.42.0.66
fw_act REMOVE_BINDING u-s6g --ip 10.42.0.67

echo "# fencing: rebind, stale removal, removal"
fw_act SET_BINDING u-b "${NET_B[@]}" --input "$POL_A" --att sha256:b1
fw_act LIFECYCLE_HOOK u-b "${NET_B[@]}" --hook data-plane-ready --att sha256:b1
check_eq "u-b active" "$(fw_subj u-b state)" active
ID_B1=$(fw_subj u-b id)
fw_learned_add "$ID_B1" 203.0.113.10
fw_learned_add "$ID_A" 198.51.100.77
check_eq "learned 203.0.113.10 inserted for u-b" "$(fw_learned "$ID_B1")" 203.0.113.10
check "the learned address is used: sandbox-b udp -> 203.0.113.10 passes" udp_ok "$SB_B" 203.0.113.10
fw_act SET_BINDING u-b "${NET_B[@]}" --input "$POL_A" --att sha256:b2
check_reply "rebind (new attachmentId): 200 {}" 200 "$EMPTY"
ID_B2=$(fw_subj u-b id)
check "rebind: a new subject id ($ID_B1 -> $ID_B2)" test -n "$ID_B2" -a "$ID_B2" != "$ID_B1"
check_eq "rebind: denying" "$(fw_subj u-b state)" denying
check_eq "rebind: dispatch 10.42.0.3 -> the new id" "$(fw_dispatch 10.42.0.3)" "$ID_B2"
# the old id is retired at once; the reaper deletes what it held a second or
# two later, before the id can be handed out again
check "rebind: the old binding's learned addresses reaped within 5 s" fw_eventually 5 fw_no_learned "$ID_B1"
check_eq "rebind: the new id has none" "$(fw_learned "$ID_B2")" ""
check "rebind: sandbox-b udp -> 203.0.113.10 dropped" udp_dropped "$SB_B" 203.0.113.10
check_eq "rebind left u-a's learned address alone" "$(fw_learned "$ID_A")" 198.51.100.77
fw_act LIFECYCLE_HOOK u-b "${NET_B[@]}" --hook data-plane-ready --att sha256:b1
check_reply "data-plane-ready of the old fence after the rebind: 409" 409 \
	"stale hook: fence does not match subject u-b"
fw_act REMOVE_BINDING u-b "${NET_B[@]}" --att sha256:b1
check_reply "stale REMOVE_BINDING (old fence): 200 {}" 200 "$EMPTY"
check_eq "stale REMOVE_BINDING removed nothing" "$(fw_subj u-b id) $(fw_dispatch 10.42.0.3)" "$ID_B2 $ID_B2"
fw_act LIFECYCLE_HOOK u-b "${NET_B[@]}" --hook data-plane-ready --att sha256:b2
check_reply "data-plane-ready of the new fence: 200 {}" 200 "$EMPTY"
check "u-b active again: sandbox-b tcp -> 198.51.100.10 passes" allowed "$SB_B"
fw_learned_add "$ID_B2" 203.0.113.10
fw_act_req POST /credential-vault -H 'X-Fast-Sandbox-Uid: u-b' --data-binary "$(vault_body "$SECRET" api.example.com)"
check_code "vault for u-b: 201" 201
us0=$(fw_counter "drop unknown-source")
fw_act REMOVE_BINDING u-b "${NET_B[@]}" --att sha256:b2 --inv inv-rm-b
check_reply "REMOVE_BINDING: 200 {}" 200 "$EMPTY"
check_eq "removal: no dispatch entry for 10.42.0.3" "$(fw_dispatch 10.42.0.3)" none
check "removal: the learned entries of id $ID_B2 reaped within 5 s" fw_eventually 5 fw_no_learned "$ID_B2"
check_eq "removal: u-b gone from fastwall subjects" "$(fw_subj u-b id)" ""
check_fails "removal: sandbox-b tcp -> 198.51.100.10 dropped" fw_http "$SB_B" http://198.51.100.10/ 1
check_ge "removal: dropped as unknown source" "$(fw_counter "drop unknown-source")" $((us0 + 1))
fw_act_req GET /credential-vault -H 'X-Fast-Sandbox-Uid: u-b'
check_code "removal: u-b's vault gone" 404
av '?clientIp=10.42.0.3'
check_eq "removal: no active vault for 10.42.0.3" "$AV_CODE" 404
fw_act_req GET /policy -H 'X-Fast-Sandbox-Uid: u-b'
check_code "removal: GET /policy u-b 404" 404
check_eq "removal left u-a's learned address (fastwall differs #2)" "$(fw_learned "$ID_A")" 198.51.100.77
check_eq "removal left u-a active with its id" "$(fw_subj u-a id) $(fw_subj u-a state)" "$ID_A active"
check "removal left u-a's traffic alone" allowed "$SB_A"
fw_act REMOVE_BINDING u-b "${NET_B[@]}" --att sha256:b2 --inv inv-rm-b
check_reply "retried REMOVE_BINDING (same invocationId): 200 {}" 200 "$EMPTY"
fw_act REMOVE_BINDING u-never --att sha256:zz
check_reply "REMOVE_BINDING of an unknown subject: 200 {}" 200 "$EMPTY"
fw_act_req POST /policy -H "X-Fast-Sandbox-Uid: u-gone" --data-binary "$P1"
fw_act REMOVE_BINDING u-gone
check_reply "REMOVE_BINDING of an unknown subject with a cached push: 200 {}" 200 "$EMPTY"
fw_act SET_BINDING u-gone --ip 10.42.0.65 --veth sb-gone --input "$POL_A"
fw_act LIFECYCLE_HOOK u-gone --ip 10.42.0.65 --veth sb-gone --hook data-plane-ready
check_eq "the removal dropped the cached push (binding input in force)" "$(policy_of u-gone)" "$(norm "$POL_A")"

echo "# IP takeover (fastwall differs #5)"
fw_act SET_BINDING u-c1 "${NET_C[@]}" --input "$POL_A" --att sha256:c1
fw_act LIFECYCLE_HOOK u-c1 "${NET_C[@]}" --hook data-plane-ready --att sha256:c1
ID_C1=$(fw_subj u-c1 id)
check_eq "u-c1 holds 10.42.0.4" "$(fw_dispatch 10.42.0.4)" "$ID_C1"
fw_act SET_BINDING u-c2 "${NET_C[@]}" --input "$POL_A2" --att sha256:c2
check_reply "u-c2 bound to u-c1's IP: 200 {}" 200 "$EMPTY"
ID_C2=$(fw_subj u-c2 id)
check_eq "takeover: dispatch 10.42.0.4 -> u-c2" "$(fw_dispatch 10.42.0.4)" "$ID_C2"
check_eq "takeover: u-c2 denying" "$(fw_subj u-c2 state)" denying
check "takeover: sandbox-c traffic dropped while u-c2 denies" udp_dropped "$SB_C" 198.51.100.10
fw_act LIFECYCLE_HOOK u-c2 "${NET_C[@]}" --hook data-plane-ready --att sha256:c2
check_reply "takeover: data-plane-ready u-c2: 200 {}" 200 "$EMPTY"
fw_act REMOVE_BINDING u-c1 "${NET_C[@]}" --att sha256:c1
check_reply "takeover: REMOVE_BINDING of the old subject: 200 {}" 200 "$EMPTY"
check_eq "takeover: the new subject's dispatch survives" "$(fw_dispatch 10.42.0.4)" "$ID_C2"
check_eq "takeover: u-c1 gone, u-c2 active" "$(fw_subj u-c1 id)/$(fw_subj u-c2 state)" "/active"
check "takeover: sandbox-c udp -> 203.0.113.10 passes under u-c2's policy" udp_ok "$SB_C" 203.0.113.10
check "takeover: sandbox-c tcp -> 198.51.100.10 passes" allowed "$SB_C"

echo "# IP change under the same fence (fastwall differs #6)"
fw_act SET_BINDING u-d "${NET_D[@]}" --input "$POL_A" --att sha256:d1
fw_act LIFECYCLE_HOOK u-d "${NET_D[@]}" --hook data-plane-ready --att sha256:d1
ID_D=$(fw_subj u-d id)
check "u-d active: sandbox-d udp from 10.42.0.5 passes" udp_ok "$SB_D" 198.51.100.10
ip -n "$SB_D" addr add 10.42.0.6/24 dev eth0
fw_act SET_BINDING u-d --ip 10.42.0.6 --veth sb-d --gw 10.42.0.1 --cidr 10.42.0.0/24 \
	--input "$POL_A" --att sha256:d1 --gen 2
check_reply "SET_BINDING with a new IP, same fence: 200 {}" 200 "$EMPTY"
check_eq "IP change: same id, still active" "$(fw_subj u-d id) $(fw_subj u-d state)" "$ID_D active"
check_eq "IP change: dispatch 10.42.0.6 -> u-d" "$(fw_dispatch 10.42.0.6)" "$ID_D"
check_eq "IP change: dispatch 10.42.0.5 gone" "$(fw_dispatch 10.42.0.5)" none
check "IP change: the new IP passes" fw_udp "$SB_D" 198.51.100.10 9000 1 --src 10.42.0.6
check_fails "IP change: the old IP is dropped" fw_udp "$SB_D" 198.51.100.10 9000 0.5 --src 10.42.0.5

echo "# keep-alive and slow clients"
check "two requests on one connection: curl reuses it" eval \
	'fw_ns "$NS_POD" curl -sv -o /dev/null -o /dev/null --max-time 3 "$FW_ACT_URL/_fastlet/v1/actions/status" "$FW_ACT_URL/_fastlet/v1/actions/status" 2>&1 | grep -q "Re-using existing connection"'
for i in 1 2 3 4 5 6; do
	# half a body, then silence
	fw_bg "$NS_POD" bash -c "(printf 'POST /_fastlet/v1/actions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"apiVer'; sleep 30) | nc 127.0.0.1 $FW_ACT_PORT"
	# half a request line, then silence
	fw_bg "$NS_POD" bash -c "(printf 'GET /_fastlet/v1/actions/sta'; sleep 30) | nc 127.0.0.1 $FW_ACT_PORT"
done
sleep 0.5
t0=$(date +%s%N)
fw_act_req GET /_fastlet/v1/actions/status --max-time 1
t1=$(date +%s%N)
check_code "status answered while 12 slow clients hold connections" 200
check "... within 1 s ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -lt 1000
fw_act LIFECYCLE_HOOK u-a "${NET_A[@]}" --hook runtime-ready
check_reply "an envelope is handled meanwhile too" 200 "$EMPTY"

echo "# concurrency: 20 subjects at once"
N=20
cc_pids=()
for i in $(seq 1 $N); do
	(
		ip=10.42.0.$((100 + i))
		fw_act_env SET_BINDING "u-cc$i" --ip "$ip" --veth "sb-cc$i" --input "$POL_A" >"$FW_TMP/cc$i.sb"
		fw_act_env LIFECYCLE_HOOK "u-cc$i" --ip "$ip" --veth "sb-cc$i" --hook data-plane-ready >"$FW_TMP/cc$i.dpr"
		c1=$(fw_ns "$NS_POD" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
			--data-binary "@$FW_TMP/cc$i.sb" "$FW_ACT_URL/_fastlet/v1/actions")
		c2=$(fw_ns "$NS_POD" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
			--data-binary "@$FW_TMP/cc$i.dpr" "$FW_ACT_URL/_fastlet/v1/actions")
		echo "$c1 $c2" >"$FW_TMP/cc$i.codes"
	) &
	cc_pids+=($!)
done
for pid in "${cc_pids[@]}"; do
	wait "$pid" 2>/dev/null || true
done
codes=$(cat "$FW_TMP"/cc*.codes 2>/dev/null | sort | uniq -c | awk '{ print $1 "x[" $2 " " $3 "]" }')
check_eq "concurrency: every SET_BINDING and data-plane-ready answered 200" "$codes" "${N}x[200 200]"
subs=$(fw_cli subjects)
nact=$(awk '/^[0-9]/ && $2 ~ /^u-cc[0-9]+$/ && $3 == "active"' <<<"$subs" | wc -l)
check_eq "concurrency: all $N subjects active in fastwall subjects" "$nact" "$N"
nids=$(awk '/^[0-9]/ && $2 ~ /^u-cc[0-9]+$/ { print $1 }' <<<"$subs" | sort -u | wc -l)
check_eq "concurrency: $N distinct ids" "$nids" "$N"
check "u-a untouched by the concurrent setup" allowed "$SB_A"

echo "# the daemon's log"
check_fails "no credential value anywhere in the daemon log" grep -qF -e "$SECRET" -e "$SECRET2" "$FW_LOG"
check "the daemon is still running" kill -0 "$FW_DAEMON_PID"
check_fails "no errors in the daemon log" grep -qE 'Z error |AddressSanitizer|runtime error' "$FW_LOG"

fw_stop_daemon
fw_summary
