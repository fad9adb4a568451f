#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Process sandboxes: commands started with `fastwall run` in the pod
# namespace (standing in for the node, whose network namespace they share)
# against real servers in the simulated internet. Allowed connects pass,
# denied ones fail at once with EPERM (TCP connect, UDP sendto, IPv4 and
# IPv6), raw and packet sockets are refused, children and sub-cgroups are
# held to the sandbox's policy, two runs with different policies at once,
# counters in fastwall status and subjects, and the subject and cgroup go
# after SIGINT of the launcher and after SIGKILL (once the command ends,
# seen through inotify on cgroup.events). Callers other than root: members
# of processes.run_group, in a cgroup fastwalld makes (and moves them
# into) or in one of a subtree delegated to them, and what they may not do.
# The cgroup programs attach to a cgroup of this run only, so nothing
# else on the machine is checked. cgroup2 is mounted with nsdelegate, as
# systemd mounts it (a root run needs it), and the flag put back as found.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require

CG_MNT=/tmp/fastwall-cg-$FW_ID
CG_PARENT=fwtest-$FW_ID
CG=$CG_MNT/$CG_PARENT
RUN_SOCK=$FW_TMP/run.sock
# unprivileged callers: U in the run group (a supplementary one), O not
U=65534
UG=47311
O=65533
PROBE_SOCK="$FW_E2E_DIR/sockprobe.py"

cg_cleanup() {
	set +e
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_cleanup
}
trap cg_cleanup EXIT

fw_topology
fw_serve_internet
# ping sockets for root in the pod namespace (ICMP without a raw socket)
fw_ns "$NS_POD" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
export FW_CG_MNT=$CG_MNT
fw_cg_mount "$CG_MNT"

# the upstream resolver (dnsmasq in the simulated internet) and its names
UP4=198.51.100.53
fw_resolver $UP4 api.example.test,203.0.113.10,30 other.example.test,198.51.100.66,30

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
  run_group: $UG
  run_parent: users
subjects:
  - name: svc-$FW_ID
    cgroup: svc/main
    keep_caps: true # the root shells of in_cg
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

# the proxy address of subject NAME: 127.254.0.0/16 + its id
fw_proxy_alias() {
	local id
	id=$(fw_cli subjects | awk -v n="$1" '$2 == n { print $1; exit }')
	echo "127.254.$((id >> 8)).$((id & 255))"
}

# run NAME [OPTIONS...] -- CMD...: fastwall run in the pod namespace
run() {
	local name=$1
	shift
	fw_ns "$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "$name" "$@"
}
web() { run "web-$FW_ID" --policy "$FW_TMP/web.json" -- "$@"; }
probe() { "$FW_PY" "$PROBE_SOCK" "$@"; }
probe_pod() { fw_ns "$NS_POD" "$FW_PY" "$PROBE_SOCK" "$@"; }

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
# (root's command sees its sandbox as / of its cgroup namespace: the
# path is given)
sub() { # CMD...: a sub-cgroup of run web, then CMD in it
	# shellcheck disable=SC2016 # expanded by the inner sh
	web sh -c 'mkdir -p "$0/sub" && echo $$ >"$0/sub/cgroup.procs" && exec "$@"' \
		"$CG/web-$FW_ID" "$@"
}
check "a sub-cgroup the sandbox makes is held to the policy" \
	sub "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "... and keeps what it allows" \
	sub "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
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
# sockets bound before they send (dig, BIND's and many resolvers'
# libraries): the proxy knows the subject by the address the query
# arrives on, whatever the source
check "DNS on a socket bound to 0.0.0.0:0 before sendto()" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.96 api.example.test --bind --want A=203.0.113.10
check "DNS on a socket bound to 0.0.0.0:0 before connect()" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.95 api.example.test --bind --connect --want A=203.0.113.10
check "DNS over TCP on a socket bound before connect()" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.94 api.example.test --bind --tcp --want A=203.0.113.10
check "DNS to an IPv6 resolver on a socket bound to [::]:0 before connect()" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 2001:db8::98 api.example.test --bind --connect --want A=203.0.113.10
check "DNS over TCP to an IPv6 resolver on a socket bound before connect()" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 2001:db8::98 api.example.test --bind --tcp --want A=203.0.113.10
dig_in() { # CGROUP DIG-ARGS...: dig's answer section (+short), or its status
	local cg=$1
	shift
	in_cg "$cg" dig +time=2 +tries=1 "$@" >"$FW_TMP/dig.out" 2>&1
	if grep -q "status: NOERROR" "$FW_TMP/dig.out"; then
		awk '!/^;/ && $4 == "A" { print $5 }' "$FW_TMP/dig.out"
	else
		sed -n 's/.*status: \([A-Z]*\).*/\1/p;T;q' "$FW_TMP/dig.out"
	fi
}
check_eq "dig @192.0.2.53 (a socket dig binds first) gets the proxy's answer" \
	"$(dig_in "$CG/d-$FW_ID" @192.0.2.53 api.example.test)" 203.0.113.10
check_eq "dig +tcp @192.0.2.53 too" \
	"$(dig_in "$CG/d-$FW_ID" +tcp @192.0.2.53 api.example.test)" 203.0.113.10
# dig's IPv6 sockets are IPv6-only (IPV6_V6ONLY): they can't be sent to
# the proxy's IPv4 address, and go nowhere else
check_eq "dig @2001:db8::53 (an IPv6-only socket) gets no answer at all" \
	"$(dig_in "$CG/d-$FW_ID" @2001:db8::53 api.example.test)" ""
check "... and dig says it could not reach the resolver" \
	grep -qiE "unreachable|timed out|no servers" "$FW_TMP/dig.out"
check_eq "dig @192.0.2.53 for a name run d may not resolve: NXDOMAIN" \
	"$(dig_in "$CG/d-$FW_ID" @192.0.2.53 other.example.test)" NXDOMAIN
# a second sandbox at the same time, with another policy: each learns its
# own. Its policy allows loopback, so only the alias rule keeps it from
# the proxy addresses.
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "e-$FW_ID" \
	--allow other.example.test --allow 127.0.0.0/8 -- sleep 120 &
E=$!
FW_PIDS+=("$E")
fw_eventually 5 test -s "$CG/e-$FW_ID/cgroup.procs"
check_eq "run e (another policy, at the same time): dig @192.0.2.53 gets its own name" \
	"$(dig_in "$CG/e-$FW_ID" @192.0.2.53 other.example.test)" 198.51.100.66
check_eq "run e: dig +tcp for its own name too" \
	"$(dig_in "$CG/e-$FW_ID" +tcp @192.0.2.53 other.example.test)" 198.51.100.66
check "run e: a bound socket's query for run d's name is NXDOMAIN" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" dns 192.0.2.96 api.example.test --bind --want NXDOMAIN
check_eq "run e: dig for run d's name is NXDOMAIN" \
	"$(dig_in "$CG/e-$FW_ID" @192.0.2.53 api.example.test)" NXDOMAIN
check "fastwall leases lists run e's lease of its own name" \
	sh -c "'$FASTWALL' --bpffs '$BPFFS' leases | grep -qE '^e-$FW_ID +198.51.100.66 .*names=other.example.test'"
check "run e learned nothing of run d's name" \
	sh -c "! '$FASTWALL' --bpffs '$BPFFS' leases | grep -qE '^e-$FW_ID +203.0.113.10 '"
check "run d learned nothing of run e's name" \
	sh -c "! '$FASTWALL' --bpffs '$BPFFS' leases | grep -qE '^d-$FW_ID +198.51.100.66 '"
check "run e reaches the address it learned" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.66 80 --want ok
check "run e still may not reach run d's 203.0.113.10" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
# no sandbox addresses a proxy address itself: not another's, not its
# own, though run e's policy allows 127.0.0.0/8
check "run e reaches 127.0.0.1 (its policy allows loopback)" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 127.0.0.1 15353 --want ok
check "run e may not send to run d's proxy address (sendto)" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" udp "$(fw_proxy_alias "d-$FW_ID")" 15353 --want EPERM
check "run e may not connect to run d's proxy address over TCP" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp "$(fw_proxy_alias "d-$FW_ID")" 15353 --want EPERM
check "run e may not connect to its own proxy address itself either" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp "$(fw_proxy_alias "e-$FW_ID")" 15353 --want EPERM
check "run e may not reach run d's proxy address from IPv6 (v4-mapped)" \
	in_cg "$CG/e-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp "::ffff:$(fw_proxy_alias "d-$FW_ID")" 15353 --want EPERM
check "run d may not send to run e's proxy address either" \
	in_cg "$CG/d-$FW_ID" "$FW_PY" "$PROBE_SOCK" udp "$(fw_proxy_alias "e-$FW_ID")" 15353 --want EPERM
check "the refusal names run e and alias-source" \
	fw_wait_log "deny subject=e-$FW_ID reason=alias-source proto=tcp .*dst=$(fw_proxy_alias "d-$FW_ID") dport=15353" 1 2
# the proxy goes by the address a query arrived on, never by its source:
# outside every sandbox, a query to run d's proxy address is run d's, and
# one from run d's address to 127.0.0.1 is nobody's
check "a query to run d's proxy address (from outside any sandbox) is run d's" \
	probe_pod dns "$(fw_proxy_alias "d-$FW_ID")" api.example.test --port 15353 --want A=203.0.113.10
check "a query from run d's proxy address to 127.0.0.1 is no subject's: NXDOMAIN" \
	probe_pod dns 127.0.0.1 api.example.test --port 15353 --src "$(fw_proxy_alias "d-$FW_ID")" --want NXDOMAIN
kill "$(head -1 "$CG/e-$FW_ID/cgroup.procs")"
wait "$E"
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
check_ge "fastwall status counts alias-source" "$(fw_counter "drop alias-source")" 6
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
SLEEP=$(awk 'NR == 1 { print $1 }' "$CG/b-$FW_ID/cgroup.procs")
kill -KILL "$B"
wait "$B" 2>/dev/null
sleep 1.5
check "SIGKILL: run b's subject stays while its command runs" \
	sh -c "'$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +b-$FW_ID '"
check "SIGKILL: its command still may not reach 203.0.113.10" \
	in_cg "$CG/b-$FW_ID" "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
kill "$SLEEP"
check "SIGKILL: once the command ended, subject and cgroup are gone" fw_eventually 5 gone "b-$FW_ID"
check "fastwalld saw run b's cgroup empty through cgroup.events" \
	fw_wait_log "run b-$FW_ID: ended \(cgroup emptied\)" 1 2

# SIGKILL of the launcher and its command at once: gone without waiting
# for a periodic check
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "k-$FW_ID" \
	-- sleep 120 &
K=$!
FW_PIDS+=("$K")
fw_eventually 5 test -s "$CG/k-$FW_ID/cgroup.procs"
SLEEP=$(head -1 "$CG/k-$FW_ID/cgroup.procs")
kill -KILL "$K" "$SLEEP"
wait "$K" 2>/dev/null
check "SIGKILL of launcher and command: subject and cgroup gone within 3 s" \
	fw_eventually 3 gone "k-$FW_ID"
check "... noticed through cgroup.events, not the periodic check" \
	fw_wait_log "run k-$FW_ID: ended \((cgroup emptied|launcher gone)\)" 1 1

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

# callers other than root: the socket is 0660 of the run group; FW_TMP
# opened for the traverse meanwhile
chmod 711 "$FW_TMP"
check "with run_group the socket is 0660 root:$UG" \
	sh -c "[ \"\$(stat -c '%a %u %g' '$RUN_SOCK')\" = '660 0 $UG' ]"
as_u() { # CMD...: as uid U, the run group a supplementary one
	fw_ns "$NS_POD" setpriv --reuid=$U --regid=$U --groups=$UG -- "$@"
}
as_o() { # CMD...: as uid O, outside the group
	fw_ns "$NS_POD" setpriv --reuid=$O --regid=$O --clear-groups -- "$@"
}
urun() { # NAME [OPTIONS...] -- CMD...: fastwall run as U
	local name=$1
	shift
	as_u "$FASTWALL" run --socket "$RUN_SOCK" --name "$name" "$@"
}
check "as uid $U (group $UG): an allowed connect succeeds" \
	urun "u-$FW_ID" --allow 198.51.100.10 -- "$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
check "as uid $U: a default-denied connect fails with EPERM" \
	urun "u-$FW_ID" --allow 198.51.100.10 -- "$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
urun "u-$FW_ID" -- sh -c 'id -u; cat /proc/self/cgroup' >"$FW_TMP/u.out" 2>&1
check "as uid $U: the command runs as $U in a cgroup below run_parent" \
	sh -c "grep -qx '$U' '$FW_TMP/u.out' && grep -qxE '0::/(.*/)?$CG_PARENT/users/u-$FW_ID' '$FW_TMP/u.out'"
check "as uid $U: a sub-cgroup the command makes is held to the policy" \
	urun "u-$FW_ID" --allow 198.51.100.10 -- "$FW_PY" "$PROBE_SOCK" subcgroup 203.0.113.10 80 --want EPERM
mkdir -p "$CG/users/other-$FW_ID"
chown "$U" "$CG/users/other-$FW_ID" "$CG/users/other-$FW_ID/cgroup.procs"
# shellcheck disable=SC2016 # expanded by the inner sh
check "as uid $U: the command can't move itself out (not to the parent, not to a cgroup $U owns)" \
	urun "u-$FW_ID" --allow 198.51.100.10 -- sh -c '
		echo $$ >"$1/cgroup.procs" 2>/dev/null && exit 1
		echo $$ >"$1/users/other-'"$FW_ID"'/cgroup.procs" 2>/dev/null && exit 1
		exec "$2" "$3" tcp 203.0.113.10 80 --want EPERM' sh "$CG" "$FW_PY" "$PROBE_SOCK"
check_fails "as uid $U: a sandboxed command can't start a looser run of its own" \
	urun "u-$FW_ID" --allow 198.51.100.10 -- \
	"$FASTWALL" run --socket "$RUN_SOCK" --name "u2-$FW_ID" --allow 203.0.113.10 -- true
check "... fastwalld said why" fw_wait_log "refused: .*a process in a sandbox may not start another" 1 2
check_fails "as uid $O (not in group $UG): the socket's mode keeps it out" \
	as_o "$FASTWALL" run --socket "$RUN_SOCK" --name "o-$FW_ID" -- true
chmod 666 "$RUN_SOCK"
check_fails "as uid $O with the socket opened to all: fastwalld refuses it" \
	as_o "$FASTWALL" run --socket "$RUN_SOCK" --name "o-$FW_ID" -- true
check "... fastwalld refused the connection of uid $O" \
	fw_wait_log "run: refused a connection from uid $O" 1 2
chmod 660 "$RUN_SOCK"
check "as uid $U: the command has no_new_privs (no set-uid or file capability regains CAP_NET_RAW)" \
	urun "u-$FW_ID" -- grep -qx 'NoNewPrivs:.1' /proc/self/status

# a subtree delegated to U below run_parent (as systemd's user@.service
# is): U owns the directory and its control files, its own processes in
# a cgroup of it
DEL=$CG/users/deleg-$FW_ID
mkdir -p "$DEL/session"
for d in "$DEL" "$DEL/session"; do
	chown "$U" "$d" "$d/cgroup.procs" "$d/cgroup.threads" "$d/cgroup.subtree_control"
done
as_d() { # CMD...: as U in its delegated session cgroup
	in_cg "$DEL/session" setpriv --reuid=$U --regid=$U --groups=$UG -- "$@"
}
drun() {
	as_d "$FASTWALL" run --socket "$RUN_SOCK" "$@"
}
check "delegated: as uid $U with --cgroup in its subtree, an allowed connect succeeds" \
	drun --name "del-$FW_ID" --cgroup "$DEL/r1" --allow 198.51.100.10 -- \
	"$FW_PY" "$PROBE_SOCK" tcp 198.51.100.10 80 --want ok
check "delegated: a default-denied connect fails with EPERM" \
	drun --name "del-$FW_ID" --cgroup "$DEL/r1" --allow 198.51.100.10 -- \
	"$FW_PY" "$PROBE_SOCK" tcp 203.0.113.10 80 --want EPERM
check "delegated: once the run ended, fastwalld removed subject and cgroup" \
	fw_eventually 5 sh -c "[ ! -d '$DEL/r1' ] && ! '$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +del-$FW_ID '"
mkdir -p "$CG/users/notmine-$FW_ID"
check_fails "delegated: uid $U can't register a cgroup it does not own" \
	drun --name "nm-$FW_ID" --cgroup "$CG/users/notmine-$FW_ID" -- true
check "... fastwalld said why" fw_wait_log "refused: .*may not register a cgroup it does not own" 1 2
mkdir -p "$CG/outside-$FW_ID"
chown "$U" "$CG/outside-$FW_ID" "$CG/outside-$FW_ID/cgroup.procs"
check_fails "delegated: uid $U can't register its own cgroup outside run_parent" \
	drun --name "out-$FW_ID" --cgroup "$CG/outside-$FW_ID" -- true
check "... fastwalld said why" fw_wait_log "refused: .*the cgroup is not below $CG/users" 1 2
mkdir -p "$FW_TMP/notcg" && chown "$U" "$FW_TMP/notcg"
check_fails "delegated: a directory that is no cgroup is refused" \
	drun --name "ncg-$FW_ID" --cgroup "$FW_TMP/notcg" -- true
check_fails "delegated: a sandboxed command can't register a sub-cgroup of its own sandbox" \
	drun --name "del-$FW_ID" --cgroup "$DEL/r2" --allow 198.51.100.10 -- \
	"$FASTWALL" run --socket "$RUN_SOCK" --name "in-$FW_ID" --cgroup "$DEL/r2/in" \
	--allow 203.0.113.10 -- true
check "... fastwalld said why" fw_wait_log "refused: .*a process in a sandbox may not start another" 2 2
nsenter --net="/run/netns/$NS_POD" "$FASTWALL" run --socket "$RUN_SOCK" --name "r-$FW_ID" \
	-- sleep 120 &
R=$!
FW_PIDS+=("$R")
fw_eventually 5 test -s "$CG/r-$FW_ID/cgroup.procs"
check "uid $U may not remove root's run" \
	as_u "$FW_PY" "$PROBE_SOCK" request "$RUN_SOCK" "{\"op\":\"remove\",\"name\":\"r-$FW_ID\"}" --want refused
check "uid $U may not join root's run" \
	as_u "$FW_PY" "$PROBE_SOCK" request "$RUN_SOCK" "{\"op\":\"join\",\"name\":\"r-$FW_ID\"}" --want refused
kill "$R"
wait "$R" 2>/dev/null
check "nothing was registered by the refused unprivileged requests" \
	sh -c "! '$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +(u2|o|nm|out|ncg|in)-$FW_ID '"
chmod 700 "$FW_TMP"

# the registration socket: bad requests change nothing, root only
check_fails "fastwall run refuses a bad name" run "../x" -- true
check_fails "fastwall run refuses a bad target" run "bad-$FW_ID" --allow "not a target!" -- true
check "a request with an unknown key is refused" \
	"$FW_PY" "$PROBE_SOCK" request "$RUN_SOCK" '{"op":"add","name":"k","policy":"","extra":1}' --want refused
# the socket is 0660 in a 0700 directory; opened up for a moment, so that
# the refusal is fastwalld's SO_PEERCRED check
chmod 711 "$FW_TMP" && chmod 666 "$RUN_SOCK"
check "a non-root peer outside the run group is refused" \
	"$FW_PY" "$PROBE_SOCK" request "$RUN_SOCK" '{"op":"add","name":"k","policy":""}' --uid 65533 --want refused
chmod 700 "$FW_TMP" && chmod 660 "$RUN_SOCK"
check "nothing was registered by the refused requests" \
	sh -c "! '$FASTWALL' --bpffs '$BPFFS' subjects | grep -qE '^[0-9]+ +(k|bad-$FW_ID) '"

check "fastwall run --help shows the usage" sh -c "'$FASTWALL' run --help | grep -q 'usage: fastwall run'"

# A kept socket: the sendmsg hooks remember, per socket, the subject and
# the last destination's verdict (fastwall_cg_sock). One socket per
# family lives through this whole section, and whatever changes around it
# (policy, state, cgroup, subject, lease) must decide its next datagram as
# a new socket's would.
cp "$FW_CFG" "$FW_TMP/base.yaml"
keep_cfg() { # SUBJECTS-YAML: the base configuration plus these subjects, reloaded
	{
		cat "$FW_TMP/base.yaml"
		printf '%s\n' "$@"
	} >"$FW_CFG"
	fw_reload
}
k_subject() { # NAME CGROUP EGRESS-RULES... (YAML flow maps)
	printf '  - name: %s\n    cgroup: %s\n    keep_caps: true\n    policy:\n      defaultAction: deny\n      egress:\n' \
		"$1-$FW_ID" "$2"
	shift 2
	printf '        - %s\n' "$@"
}
K_ALLOW=$(k_subject keep keep/inner '{ action: allow, target: 198.51.100.0/24 }' \
	'{ action: allow, target: "2001:db8::10" }')
K_STRICT=$(k_subject strict strict '{ action: allow, target: 203.0.113.10 }')
keep_cfg "$K_ALLOW" "$K_STRICT"
fw_eventually 5 test -d "$CG/keep/inner"
fw_eventually 5 test -d "$CG/strict"
mkdir -p "$CG/plain-$FW_ID" # no sandbox's
coproc KEEP { in_cg "$CG/keep/inner" "$FW_PY" "$PROBE_SOCK" keep --want -; }
FW_PIDS+=("$KEEP_PID")
keep() { # COMMAND...: the kept sockets' answer
	local r
	echo "$*" >&"${KEEP[1]}"
	read -r -t 10 r <&"${KEEP[0]}" || r=no-answer
	echo "$r"
}
check_eq "kept socket: sendto an allowed address gets its echo" "$(keep send 198.51.100.10 9000)" ok
check_eq "kept socket: and again" "$(keep send 198.51.100.10 9000)" ok
check_eq "kept IPv6 socket: sendto an allowed address gets its echo" "$(keep send 2001:db8::10 9000)" ok
check_eq "kept IPv6 socket: and again" "$(keep send 2001:db8::10 9000)" ok
check_eq "kept socket: sendto a denied address fails with EPERM" \
	"$(keep send 203.0.113.10 9000)" EPERM
check_eq "kept socket: the allowed one still passes after it" "$(keep send 198.51.100.10 9000)" ok

keep_cfg "$(k_subject keep keep/inner '{ action: allow, target: 198.51.100.0/24 }' \
	'{ action: deny, target: 198.51.100.10 }')" "$K_STRICT"
check_eq "kept socket: a reload that denies the address it just sent to: EPERM" \
	"$(keep send 198.51.100.10 9000)" EPERM
check_eq "kept IPv6 socket: a reload that drops its allow: EPERM" \
	"$(keep send 2001:db8::10 9000)" EPERM
check_eq "kept socket: what the new policy allows passes" "$(keep send 198.51.100.66 9000)" ok
keep_cfg "$K_ALLOW" "$K_STRICT"
check_eq "kept socket: allowed again by the next reload: passes" \
	"$(keep send 198.51.100.10 9000)" ok
keep_cfg "$K_ALLOW
    state: denying" "$K_STRICT"
check_eq "kept socket: its subject set denying: EPERM" "$(keep send 198.51.100.10 9000)" EPERM
keep_cfg "$K_ALLOW" "$K_STRICT"
check_eq "kept socket: active again: passes" "$(keep send 198.51.100.10 9000)" ok

check_eq "kept socket: a child in another sandbox sending on it is held to that one's policy" \
	"$(keep child "$CG/strict" 198.51.100.10 9000)" EPERM
check_eq "... the child may send where its own sandbox allows" \
	"$(keep child "$CG/strict" 203.0.113.10 9000)" ok
check_eq "... and the socket's own process still passes where its sandbox allows" \
	"$(keep send 198.51.100.10 9000)" ok
check_eq "... but not where only the child's allows" "$(keep send 203.0.113.10 9000)" EPERM
keep join "$CG/strict" >/dev/null
check_eq "kept socket: its process moved into another sandbox: held to that one (EPERM)" \
	"$(keep send 198.51.100.10 9000)" EPERM
keep join "$CG/keep/inner" >/dev/null
check_eq "kept socket: moved back: passes" "$(keep send 198.51.100.10 9000)" ok
check_eq "kept socket: DNS to a resolver nowhere, answered by the proxy as from it" \
	"$(keep dns 192.0.2.99 api.example.test)" NXDOMAIN
check_eq "kept socket: then DNS to another resolver: the answer comes from that one" \
	"$(keep dns 192.0.2.98 api.example.test)" NXDOMAIN
check_eq "kept socket: and sendto after DNS still judged as before" "$(keep send 203.0.113.10 9000)" EPERM

keep_cfg "$K_ALLOW" "$K_STRICT" "$(k_subject top keep '{ action: allow, target: 203.0.113.10 }')"
check_eq "kept socket: a sandbox registered above its cgroup holds it: EPERM" \
	"$(keep send 198.51.100.10 9000)" EPERM
keep_cfg "$K_ALLOW" "$K_STRICT"
check_eq "kept socket: that sandbox gone again: passes" "$(keep send 198.51.100.10 9000)" ok
keep_cfg "$K_STRICT" "$(k_subject other keep/inner '{ action: allow, target: 203.0.113.10 }')"
check_eq "kept socket: its cgroup given to another subject: held to that one's policy (EPERM)" \
	"$(keep send 198.51.100.10 9000)" EPERM
check_eq "... and what that one allows passes" "$(keep send 203.0.113.10 9000)" ok

# leases, written into the map as the proxy would
keep_cfg "$K_STRICT" "$(k_subject learn keep/inner '{ action: allow, target: 192.0.2.1 }')"
LID=$(fw_cli subjects | awk -v n="learn-$FW_ID" '$2 == n { print $1; exit }')
lease_key() { # ID IP: the fastwall_learned key, hex bytes
	"$FW_PY" -c 'import ipaddress, sys
a = ipaddress.ip_address(sys.argv[2])
b = int(sys.argv[1]).to_bytes(4, "little") + bytes(4) + (bytes(10) + b"\xff\xff" + a.packed)
print(" ".join("%02x" % x for x in b))' "$1" "$2"
}
check_eq "kept socket: an address nothing taught is denied" "$(keep send 198.51.100.10 9000)" EPERM
"$FW_PY" -S "$FW_ACT_CLIENT" learned-add "$BPFFS" "$LID" 198.51.100.10 --secs 300
check_eq "kept socket: a lease for it: passes" "$(keep send 198.51.100.10 9000)" ok
check_eq "kept socket: and again" "$(keep send 198.51.100.10 9000)" ok
# shellcheck disable=SC2046 # the key's bytes, one word each
bpftool map delete pinned "$BPFFS/fastwall_learned" key hex $(lease_key "$LID" 198.51.100.10)
check_eq "kept socket: the lease revoked: EPERM at once" "$(keep send 198.51.100.10 9000)" EPERM
"$FW_PY" -S "$FW_ACT_CLIENT" learned-add "$BPFFS" "$LID" 198.51.100.10 --secs 2
check_eq "kept socket: a lease of 2 s: passes" "$(keep send 198.51.100.10 9000)" ok
sleep 2.2
check_eq "kept socket: once it expired: EPERM" "$(keep send 198.51.100.10 9000)" EPERM
check_ge "fastwall subjects counts the expiry (lease-expired)" \
	"$(fw_subject_counter "learn-$FW_ID" "drop lease-expired")" 1
eval "exec ${KEEP[1]}>&-"
wait "$KEEP_PID" 2>/dev/null
keep_cfg

# detach takes the cgroup programs off the parent, as it takes the TC filters off
fw_stop_daemon
check "fastwalld detach logs the cgroup programs it removed" \
	sh -c "nsenter --net=/run/netns/$NS_POD '$FASTWALLD' -c '$FW_CFG' detach 2>&1 | grep -q 'detached 14 cgroup programs from $CG'"
check_eq "after detach no fastwall program is on $CG_PARENT" \
	"$(bpftool cgroup show "$CG" 2>/dev/null | grep -c fw_cg_)" 0

fw_summary
