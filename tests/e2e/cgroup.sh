#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Process sandboxes: commands started with `fastwall run` in the pod
# namespace (standing in for the node, whose network namespace they share)
# against real servers in the simulated internet. Allowed connects pass,
# denied ones fail at once with EPERM (TCP connect, UDP sendto, IPv4 and
# IPv6), raw and packet sockets are refused, children and sub-cgroups are
# held to the sandbox's policy, two runs with different policies at once,
# counters in fastwall status and subjects, and the subject and cgroup go
# after SIGINT of the launcher and after SIGKILL (once the command ends).
# The cgroup programs attach to a cgroup of this run only, so nothing
# else on the machine is checked.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require

CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
PROBE_SOCK="$FW_E2E_DIR/sockprobe.py"

cg_cleanup() {
	set +e
	[ -w "$CG/cgroup.kill" ] && echo 1 >"$CG/cgroup.kill"
	fw_stop_daemon
	[ -f "$FW_CFG" ] && fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_CFG" detach >/dev/null 2>&1
	if [ -d "$CG" ]; then
		for _ in $(seq 50); do
			[ "$(awk '/populated/ { print $2 }' "$CG/cgroup.events")" = 0 ] && break
			sleep 0.1
		done
		find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	mountpoint -q "$CG_MNT" && umount "$CG_MNT"
	rmdir "$CG_MNT" 2>/dev/null
	fw_cleanup
}
trap cg_cleanup EXIT

fw_topology
fw_serve_internet
# ping sockets for root in the pod namespace (ICMP without a raw socket)
fw_ns "$NS_POD" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
export FW_CG_MNT=$CG_MNT
mkdir -p "$CG_MNT"
mount -t cgroup2 none "$CG_MNT" || fw_die "can't mount cgroup2 at $CG_MNT"

# the upstream resolver (dnsmasq in the simulated internet) and its names
UP4=198.51.100.53
ip -n "$NS_INET" addr add $UP4/32 dev lo
cat >"$FW_TMP/dnsmasq.conf" <<EOF
no-resolv
no-hosts
no-poll
bind-interfaces
listen-address=$UP4
port=53
user=root
pid-file=
address=/#/
host-record=api.example.test,203.0.113.10,30
host-record=other.example.test,198.51.100.66,30
EOF
nsenter --net="/run/netns/$NS_INET" dnsmasq -k -C "$FW_TMP/dnsmasq.conf" \
	--log-facility="$FW_TMP/dnsmasq.log" &
FW_PIDS+=($!)
for _ in $(seq 100); do
	fw_ns "$NS_INET" dig +short +time=1 +tries=1 @$UP4 api.example.test 2>/dev/null |
		grep -q 203.0.113.10 && break
	sleep 0.05
done

cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: true, port: 15353, upstreams: [$UP4] }
datapath:
  bpffs: $BPFFS
  events: { rate: 1000, burst: 1000 }
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
  socket: $RUN_SOCK
subjects:
  - name: svc-$FW_ID
    cgroup: svc/main
    policy:
      egress:
        - { action: allow, target: 203.0.113.10 }
  - name: frozen-$FW_ID
    cgroup: frozen
    state: denying
    policy: { defaultAction: allow }
EOF
cat >"$FW_TMP/web.json" <<EOF
{"defaultAction": "deny", "egress": [
  {"action": "allow", "target": "198.51.100.0/24"},
  {"action": "deny", "target": "198.51.100.66"},
  {"action": "allow", "target": "2001:db8::10"}]}
EOF

fw_start_daemon || exit 1
check "fastwalld attached the cgroup programs to $CG_PARENT" \
	fw_wait_log "process sandboxes: cgroup programs on $CG" 1 2

# run NAME [OPTIONS...] -- CMD...: fastwall run in the pod namespace
run() {
	local name=$1
	shift
	fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "$name" "$@"
}
web() { run "web-$FW_ID" --policy "$FW_TMP/web.json" -- "$@"; }
probe() { "$FW_PY" "$PROBE_SOCK" "$@"; }

# a static subject with a cgroup: fastwalld made it, and holds it to its policy
in_cg() { # CGROUP CMD...: a process joins CGROUP, as fastwall run's child does
	local cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
check "static subject: fastwalld created its cgroup svc/main" test -d "$CG/svc/main"
check "static subject: reaches 203.0.113.10" \
	in_cg "$CG/svc/main" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
check "static subject: may not reach 198.51.100.10" \
	in_cg "$CG/svc/main" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want EPERM
check "static subject: fastwall subjects shows its cgroup" \
	sh -c "'$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +svc-$FW_ID +active .*cgroup:/.*/$CG_PARENT/svc/main\$'"
# fastwall explain --cgroup says the same as the connects above
xcg() { "$FASTWALL" --bpffs "$BPFFS" explain --cgroup "$@" | sed -n 's/^verdict:  \([a-z]* [a-z-]*\).*/\1/p'; }
check_eq "explain --cgroup: the static subject reaches 203.0.113.10" \
	"$(xcg "$CG/svc/main" 203.0.113.10 80/tcp)" "pass allow-cidr"
check_eq "explain --cgroup: and not 198.51.100.10" \
	"$(xcg "$CG/svc/main" 198.51.100.10 80/tcp || true)" "drop default-deny"
check_eq "explain --cgroup: its DNS goes to the proxy" "$(xcg "$CG/svc/main" 198.51.100.53 53/udp)" \
	"pass dns-proxy"
check_eq "explain --cgroup: a denying subject" "$(xcg "$CG/frozen" 198.51.100.10 80/tcp || true)" \
	"drop denying"
check_eq "explain --cgroup: a cgroup of no sandbox passes" \
	"$("$FASTWALL" --bpffs "$BPFFS" explain --cgroup "$CG_MNT" 198.51.100.10 80/tcp)" \
	"verdict:  pass (no process sandbox: $CG_MNT is in none)"
check "a denying subject's connect fails with EPERM, whatever its policy allows" \
	in_cg "$CG/frozen" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want EPERM
check "a denying subject's sendto fails with EPERM" \
	in_cg "$CG/frozen" "$FW_PY" "$PROBE_SOCK" udp 198.51.100.10 9000 --want EPERM
check_ge "fastwall subjects counts its denying verdicts" \
	"$(fw_subject_counter "frozen-$FW_ID" "drop denying")" 2
printf 'processes: {}\nsubjects:\n  - { name: x, cgroup: a, addresses: [192.0.2.9] }\n' >"$FW_TMP/bad1.yaml"
check_fails "fastwalld check refuses a subject with a cgroup and addresses" \
	"$FASTWALLD" -c "$FW_TMP/bad1.yaml" check
printf 'subjects:\n  - { name: x, cgroup: a }\n' >"$FW_TMP/bad2.yaml"
check_fails "fastwalld check refuses a cgroup subject without the processes section" \
	"$FASTWALLD" -c "$FW_TMP/bad2.yaml" check
printf 'processes: {}\nsubjects:\n  - { name: x, cgroup: ../a }\n' >"$FW_TMP/bad3.yaml"
check_fails "fastwalld check refuses a cgroup path with .." \
	"$FASTWALLD" -c "$FW_TMP/bad3.yaml" check

# what fastwall run passes on: the command's exit status
web true
check_eq "fastwall run passes exit status 0" "$?" 0
web sh -c 'exit 7'
check_eq "fastwall run passes exit status 7" "$?" 7

check "allowed TCP connect to 198.51.100.10:80 succeeds" \
	web "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
check "denied TCP connect to 198.51.100.66:80 fails with EPERM" \
	web "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.66 80 --want EPERM
check "default-denied TCP connect to 203.0.113.10:80 fails with EPERM" \
	web "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "allowed UDP sendto 198.51.100.10:9000 gets its echo" \
	web "$FW_PY" "$PROBE_SOCK" udp 198.51.100.10 9000 --want ok
check "denied UDP sendto 203.0.113.10:9000 fails with EPERM" \
	web "$FW_PY" "$PROBE_SOCK" udp 203.0.113.10 9000 --want EPERM
check "allowed IPv6 TCP connect to [2001:db8::10]:80 succeeds" \
	web "$FW_PY" "$PROBE_SOCK" tcp 2001:db8::10 80 --want ok
check "denied IPv6 TCP connect to [2001:db8::66]:80 fails with EPERM" \
	web "$FW_PY" "$PROBE_SOCK" tcp 2001:db8::66 80 --want EPERM
check "denied IPv6 UDP sendto [2001:db8::66]:9000 fails with EPERM" \
	web "$FW_PY" "$PROBE_SOCK" udp 2001:db8::66 9000 --want EPERM
check "an IPv6 socket's v4-mapped ::ffff:203.0.113.10 is denied as IPv4" \
	web "$FW_PY" "$PROBE_SOCK" tcp ::ffff:203.0.113.10 80 --want EPERM
check "a raw socket is refused with EPERM" \
	web "$FW_PY" "$PROBE_SOCK" raw --want EPERM
check "a packet socket is refused with EPERM (fastwall run drops CAP_NET_RAW)" \
	web "$FW_PY" "$PROBE_SOCK" packet --want EPERM
check "fastwall run's command has no CAP_NET_RAW, bounding set included" \
	web sh -c "! grep -E '^Cap(Eff|Bnd):' /proc/self/status | awk '{ print \$2 }' | \
		while read -r m; do [ \$(( 0x\$m >> 13 & 1 )) = 1 ] && echo has; done | grep -q has"
check "ICMP echo (ping socket) to a denied destination is dropped" \
	web "$FW_PY" "$PROBE_SOCK" ping 203.0.113.10 --want EPERM
check "ICMP echo to an allowed destination gets its reply" \
	web "$FW_PY" "$PROBE_SOCK" ping 198.51.100.10 --want ok
check "a child process is held to the policy" \
	web sh -c "sh -c '$FW_PY $PROBE_SOCK tcp 203.0.113.10 80 --want EPERM'"
check "a sub-cgroup the sandbox makes is held to the policy" \
	web "$FW_PY" "$PROBE_SOCK" subcgroup 203.0.113.10 80 --want EPERM
check "... and keeps what it allows" \
	web "$FW_PY" "$PROBE_SOCK" subcgroup 198.51.100.10 80 --want ok
check "outside any sandbox the pod namespace reaches 203.0.113.10" \
	fw_ns "$NS_POD" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok

# two runs at once, each with its own policy
# nsenter execs fastwall run: $! is the launcher, signals reach it
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "a-$FW_ID" \
	--allow 203.0.113.10 -- sleep 120 &
A=$!
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "b-$FW_ID" \
	--allow 198.51.100.10 -- sleep 120 &
B=$!
FW_PIDS+=("$A" "$B")
fw_eventually 5 test -d "$CG/a-$FW_ID" && fw_eventually 5 test -d "$CG/b-$FW_ID"
check "run a reaches 203.0.113.10" in_cg "$CG/a-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
check "run a may not reach 198.51.100.10" in_cg "$CG/a-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want EPERM
check "run b reaches 198.51.100.10" in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
check "run b may not reach 203.0.113.10" in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "a process that joins run b with CAP_NET_RAW: its raw socket is refused (sock_create)" \
	in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" raw --want EPERM
fw_cli subjects >"$FW_TMP/subjects.out"
check "fastwall subjects shows run a's cgroup" \
	sh -c "grep -E '^[0-9]+ +a-$FW_ID +active .*cgroup:/.*/$CG_PARENT/a-$FW_ID\$' '$FW_TMP/subjects.out'"
check_ge "fastwall subjects counts run b's deny-cidr/default-deny" \
	"$(fw_subject_counter "b-$FW_ID" "drop default-deny")" 1
check_ge "fastwall status counts default-deny" "$(fw_counter "drop default-deny")" 1
check_ge "fastwall status counts socket-type" "$(fw_counter "drop socket-type")" 1
check "a deny event names the subject" \
	fw_wait_log "deny subject=b-$FW_ID reason=default-deny proto=tcp .*dst=203.0.113.10 dport=80" 1 2

# DNS: to fastwalld's proxy whatever resolver the process asks, the answer
# from that resolver, what it learns for this sandbox alone
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "d-$FW_ID" \
	--allow api.example.test -- sleep 120 &
D=$!
FW_PIDS+=("$D")
fw_eventually 5 test -s "$CG/d-$FW_ID/cgroup.procs"
check "run b may not reach 203.0.113.10 before anyone resolved it" \
	in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "run d may not reach 203.0.113.10 before resolving it" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "DNS (sendto a resolver nowhere) goes to the proxy; the answer comes from that resolver" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.99 api.example.test --want A=203.0.113.10
check "DNS with connect() and send() too" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.98 api.example.test --connect --want A=203.0.113.10
check "DNS over TCP too" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.97 api.example.test --tcp --want A=203.0.113.10
check "DNS to an IPv6 resolver with connect(), the answer from it" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 2001:db8::99 api.example.test --connect --want A=203.0.113.10
check "DNS over TCP to an IPv6 resolver" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 2001:db8::99 api.example.test --tcp --want A=203.0.113.10
check "DNS sendto() an IPv6 resolver is refused (it can't go to the proxy)" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 2001:db8::99 api.example.test --want EPERM
check "run d reaches the address it learned" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want ok
check "a name run d's policy does not allow is NXDOMAIN" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.99 other.example.test --want NXDOMAIN
check "run d still may not reach 198.51.100.66" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.66 80 --want EPERM
check "fastwall leases lists run d's lease" \
	sh -c "'$FASTWALL' --bpffs '$BPFFS' leases | grep -qE '^d-$FW_ID +203.0.113.10 .*names=api.example.test'"
check "what run d learned is its own: run b still may not reach 203.0.113.10" \
	in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "run b's own query for a name it may not resolve is NXDOMAIN" \
	in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.99 api.example.test --want NXDOMAIN
check "a sandbox may not bind another's DNS source address" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" bind 127.254.255.254 --want EPERM
check "a sandbox may not send from another's DNS source address (IP_PKTINFO)" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" pktinfo 127.254.255.254 127.0.0.1 15353 --want EPERM
check_ge "fastwall status counts alias-source" "$(fw_counter "drop alias-source")" 2
check_ge "fastwall subjects counts run d's dns-proxy" "$(fw_subject_counter "d-$FW_ID" "pass dns-proxy")" 2
kill "$(head -1 "$CG/d-$FW_ID/cgroup.procs")"
wait "$D"

# SIGINT to the launcher: the command ends, subject and cgroup go
kill -INT "$A"
wait "$A"
check_eq "SIGINT: the launcher ends with the command's status (130)" "$?" 130
gone() { # NAME
	! fw_cli subjects | grep -qE "^[0-9]+ +$1 " && [ ! -d "$CG/$1" ]
}
check "SIGINT: subject and cgroup of run a are gone" fw_eventually 5 gone "a-$FW_ID"

# SIGKILL: the command goes on under its policy until it ends, then
# fastwalld notices the empty cgroup
SLEEP=$(awk '{ print $1 }' "$CG/b-$FW_ID/cgroup.procs" | head -1)
kill -KILL "$B"
wait "$B" 2>/dev/null
sleep 1.5
check "SIGKILL: run b's subject stays while its command runs" \
	sh -c "'$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +b-$FW_ID '"
check "SIGKILL: its command still may not reach 203.0.113.10" \
	in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
kill "$SLEEP"
check "SIGKILL: once the command ended, subject and cgroup are gone" fw_eventually 5 gone "b-$FW_ID"
check "fastwalld logged the end of run b" fw_wait_log "run b-$FW_ID: ended" 1 2

# a restart of fastwalld: the sandbox keeps its policy while it is away,
# the new one adopts the subject and replaces its own programs (no second
# copy), and the launcher's remove reaches it on a new connection
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "c-$FW_ID" \
	--allow 198.51.100.10 -- sleep 120 &
C=$!
FW_PIDS+=("$C")
fw_eventually 5 test -s "$CG/c-$FW_ID/cgroup.procs"
fw_stop_daemon
check "fastwalld stopped: run c still may not reach 203.0.113.10" \
	in_cg "$CG/c-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "fastwalld stopped: run c still reaches 198.51.100.10" \
	in_cg "$CG/c-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
fw_start_daemon || exit 1
check "restarted: run c still may not reach 203.0.113.10" \
	in_cg "$CG/c-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "restarted: run c's subject was adopted" \
	sh -c "'$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +c-$FW_ID +active'"
n_connect4=$(bpftool cgroup show "$CG" 2>/dev/null | grep -c 'cgroup_inet4_connect\|connect4')
check_eq "restarted: one connect4 program on $CG_PARENT, not two" "$n_connect4" 1
SLEEP=$(head -1 "$CG/c-$FW_ID/cgroup.procs")
kill "$SLEEP"
wait "$C"
check_eq "restarted: the launcher ends with its command's status (143)" "$?" 143
check "restarted: subject and cgroup of run c are gone" fw_eventually 5 gone "c-$FW_ID"

# the registration socket: bad requests change nothing, root only
check_fails "fastwall run refuses a bad name" run "../x" -- true
check_fails "fastwall run refuses a bad target" run "bad-$FW_ID" --allow "not a target!" -- true
check "a request with an unknown key is refused" \
	"$FW_PY" "$PROBE_SOCK" request "$RUN_SOCK" '{"op":"add","name":"k","policy":"","extra":1}' --want refused
# the socket is 0600 in a 0700 directory; opened up for a moment, so that
# the refusal is fastwalld's SO_PEERCRED check
chmod 711 "$FW_TMP" && chmod 666 "$RUN_SOCK"
check "a non-root peer is refused" \
	"$FW_PY" "$PROBE_SOCK" request "$RUN_SOCK" '{"op":"add","name":"k","policy":""}' --uid 65534 --want refused
chmod 700 "$FW_TMP" && chmod 600 "$RUN_SOCK"
check "nothing was registered by the refused requests" \
	sh -c "! '$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +(k|bad-$FW_ID) '"

check "fastwall run --help shows the usage" sh -c "'$FASTWALL' run --help | grep -q 'usage: fastwall run'"

# detach takes the cgroup programs off the parent, as it takes the TC filters off
fw_stop_daemon
check "fastwalld detach logs the cgroup programs it removed" \
	sh -c "nsenter --net=/run/netns/$NS_POD '$FASTWALLD' -c '$FW_CFG' detach 2>&1 | grep -q 'detached 12 cgroup programs from $CG'"
check_eq "after detach no fastwall program is on $CG_PARENT" \
	"$(bpftool cgroup show "$CG" 2>/dev/null | grep -c fw_cg_)" 0

fw_summary
