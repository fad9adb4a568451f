# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh.
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
