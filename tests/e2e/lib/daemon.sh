# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh: fastwalld started and stopped in the pod namespace, its
# log, reloads, the CLI against this run's pins and its counters, and the
# YAML of a sandbox subject for $FW_CFG.

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

# fw_subject_yaml LETTER N [v4]: the start of the sandbox fw_sandbox LETTER
# N made, as an item of $FW_CFG's subjects list: its name sandbox-LETTER,
# its addresses (10.42.0.N and fd00:42::N; v4: 10.42.0.N only), its port
# sb-LETTER, and the bridge's gateway and private CIDR of the same
# families. The caller goes on with the item's other keys (state, policy)
# indented by four spaces.
fw_subject_yaml() {
	local l=$1 n=$2
	if [ "${3:-}" = v4 ]; then
		cat <<EOF
  - name: sandbox-$l
    addresses: [10.42.0.$n]
    interface: sb-$l
    gateway: 10.42.0.1
    private_cidr: 10.42.0.0/24
EOF
	else
		cat <<EOF
  - name: sandbox-$l
    addresses: [10.42.0.$n, "fd00:42::$n"]
    interface: sb-$l
    gateway: [10.42.0.1, "fd00:42::1"]
    private_cidr: [10.42.0.0/24, "fd00:42::/64"]
EOF
	fi
}
