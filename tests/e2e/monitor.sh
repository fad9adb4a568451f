#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: `fastwall monitor` and the logs. Readers with different
# filters at once see the right events for traffic from sandbox
# namespaces (a denied TCP connect, a denied and an allowed DNS query
# through the proxy to a dnsmasq upstream, a sampled allowed packet); JSON
# lines parse and carry their fields; a reader stopped with SIGSTOP does
# not hold up another one and is told what it lost after SIGCONT; a
# non-root reader is refused; log_format json parses line by line; the
# audit trail (denies, subject changes) still appears with log_level:
# error.
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MON_DIR=/run/fastwall-mon-$FW_ID
SOCK=$MON_DIR/monitor.sock
STOPPED=""
mon_cleanup() {
	# a stopped reader would never see the TERM of fw_cleanup
	# shellcheck disable=SC2086 # pids
	[ -n "$STOPPED" ] && kill -CONT $STOPPED 2>/dev/null
	fw_cleanup
	rm -rf "$MON_DIR"
}
trap mon_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v dnsmasq >/dev/null || fw_die "dnsmasq not found (apt-get install dnsmasq-base)"
command -v dig >/dev/null || fw_die "dig not found (apt-get install bind9-dnsutils)"
command -v setpriv >/dev/null || fw_die "setpriv not found (util-linux)"

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
UP4=198.51.100.53
FLOOD=${FLOOD:-20000}

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_serve_internet
fw_resolver $UP4 api.example.com,198.51.100.10,30 bad.example.com,198.51.100.66,30

# write_config LOG_LEVEL B_EXTRA_RULE
write_config() {
	cat >"$FW_CFG" <<EOF
log_level: $1
log_format: json
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 100000, burst: 100000 }
dns:
  upstreams: [$UP4]
  timeout: 1
metrics:
  listen: 127.0.0.1:19464
monitor:
  socket: $SOCK
  reader_queue: 4096
  allow_sample: 1
subjects:
$(fw_subject_yaml a 2 v4)
    policy:
      defaultAction: deny
      egress:
        - { action: deny, target: bad.example.com }
        - { action: allow, target: "*.example.com", ports: [80] }
$(fw_subject_yaml b 3 v4)
    policy:
      defaultAction: deny
      egress:
$2
EOF
}

# reader NAME ARGS...: fastwall monitor in the background, its output in
# $FW_TMP/NAME.out; waits until fastwalld has taken its request
NREADERS=0
reader() {
	local name=$1
	shift
	"$FASTWALL" monitor --socket "$SOCK" "$@" >"$FW_TMP/$name.out" 2>"$FW_TMP/$name.err" &
	FW_PIDS+=($!)
	eval "PID_$name=$!"
	NREADERS=$((NREADERS + 1))
	fw_wait_log 'monitor: a reader connected' "$NREADERS" 5 || fw_die "reader $name did not connect"
}

# jq-like checks in python: q FILE EXPR -> how many JSON lines e makes EXPR true
q() {
	"$FW_PY" - "$1" "$2" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if eval(sys.argv[2], {}, {"e": e}):
        n += 1
print(n)
EOF
}
qge() { [ "$(q "$1" "$2")" -ge "$3" ]; } # FILE EXPR MIN
all_json() { # FILE: every line is a JSON object
	"$FW_PY" - "$1" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines, "no lines"
for i, line in enumerate(lines, 1):
    assert isinstance(json.loads(line), dict), "line %d is no object" % i
EOF
}
metric() { fw_ns "$NS_POD" curl -s "http://127.0.0.1:19464/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

write_config info '        - { action: allow, target: 192.0.2.254/32 }'
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-b' 1 5

echo "# the socket"
check_eq "the monitor socket is mode 0600" "$(stat -c %a "$SOCK")" 600
check_eq "... owned by root" "$(stat -c %u "$SOCK")" 0
check_fails "a reader as nobody is refused" \
	setpriv --reuid nobody --regid nogroup --clear-groups "$FASTWALL" monitor --socket "$SOCK" --count 1
setpriv --reuid nobody --regid nogroup --clear-groups "$FASTWALL" monitor --socket "$SOCK" \
	--count 1 2>"$FW_TMP/nobody.err" || true
check "... with the reason on stderr" grep -q "Permission denied" "$FW_TMP/nobody.err"
# the socket's mode is one guard; fastwalld checks the peer too
chmod 0666 "$SOCK"
setpriv --reuid nobody --regid nogroup --clear-groups "$FASTWALL" monitor --socket "$SOCK" \
	--count 1 2>"$FW_TMP/nobody2.err" || true
chmod 0600 "$SOCK"
check "a non-root reader that gets through a widened mode is refused by fastwalld" \
	grep -q "fastwalld refused: fastwall monitor is for root only" "$FW_TMP/nobody2.err"
check_fails "a bad filter is a usage error" "$FASTWALL" monitor --socket "$SOCK" --addr 10.0.0.0/33
check_fails "an unknown kind is a usage error" "$FASTWALL" monitor --socket "$SOCK" --kind bogus

echo "# two readers with different filters"
reader drops -o json --subject sandbox-b --kind drop
reader dns --json --kind dns
reader text --subject sandbox-b
reader allow -o json --kind allow --subject sandbox-a --addr 198.51.100.10
reader byaddr -o json --addr 198.51.100.66
check_eq "fastwall_monitor_readers counts them" "$(metric fastwall_monitor_readers)" 5

check_fails "sandbox-b's TCP connect to 198.51.100.10:80 is denied" \
	fw_http "$SB_B" http://198.51.100.10/ 1
check_eq "sandbox-a: bad.example.com is NXDOMAIN" \
	"$(fw_ns "$SB_A" dig +time=2 +tries=1 @10.42.0.1 bad.example.com | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')" NXDOMAIN
check_eq "sandbox-a: api.example.com resolves" \
	"$(fw_ns "$SB_A" dig +short +time=2 +tries=1 @10.42.0.1 api.example.com)" 198.51.100.10
check "sandbox-a then connects to 198.51.100.10:80" fw_http "$SB_A" http://198.51.100.10/ 2

D=$FW_TMP/drops.out
N=$FW_TMP/dns.out
check "the drop reader saw sandbox-b's denied connect" fw_eventually 5 \
	qge "$D" 'e["kind"]=="drop" and e["subject"]=="sandbox-b" and e["dst"]=="198.51.100.10" and e["dport"]==80 and e["proto"]=="tcp"' 1
check "... with its reason, source, interface and id" test "$(q "$D" 'e["reason"]=="default-deny" and e["src"]=="10.42.0.3" and e["sport"]>0 and e["if"]=="sb-b" and e["subject_id"]>0 and e["verdict"]=="drop" and e["time"].endswith("Z")')" -ge 1
check_eq "... and nothing but sandbox-b's drops" "$(q "$D" 'e["kind"]!="drop" or e["subject"]!="sandbox-b"')" 0
check "the DNS reader saw the denied query" fw_eventually 5 \
	qge "$N" 'e["kind"]=="dns" and e["query"]=="bad.example.com" and e["verdict"]=="deny" and e["reason"]=="dns-denied-name" and e["rcode"]=="NXDOMAIN" and e["subject"]=="sandbox-a" and e["type"]=="A" and e["src"]=="10.42.0.2" and e["learned"]==[]' 1
check "... and the allowed one with its learned address" fw_eventually 5 \
	qge "$N" 'e["kind"]=="dns" and e["query"]=="api.example.com" and e["verdict"]=="allow" and e["rcode"]=="NOERROR" and "198.51.100.10" in e["learned"]' 1
check_eq "... and no packet events" "$(q "$N" 'e["kind"]!="dns"')" 0
check "both readers' output is JSON lines" all_json "$D"
check "... both" all_json "$N"
check "the text reader shows the drop as one line" fw_eventually 5 \
	grep -qE '^[0-9:.]+ sandbox-b 10\.42\.0\.3:[0-9]+ -> 198\.51\.100\.10:80 tcp DROPPED \(default-deny\) if=sb-b$' "$FW_TMP/text.out"
check_fails "... and nothing of sandbox-a" grep -q sandbox-a "$FW_TMP/text.out"
check "the allow reader saw a sampled allowed packet of sandbox-a" fw_eventually 5 \
	qge "$FW_TMP/allow.out" 'e["kind"]=="allow" and e["subject"]=="sandbox-a" and e["verdict"]=="allow" and e["sample"]==1 and "198.51.100.10" in (e["src"], e["dst"])' 1
check_eq "... only those" "$(q "$FW_TMP/allow.out" 'e["kind"]!="allow" or e["subject"]!="sandbox-a"')" 0
# bad.example.com (198.51.100.66 upstream) was denied, so never answered
check_eq "the address reader left out every event without 198.51.100.66" \
	"$(wc -l <"$FW_TMP/byaddr.out")" 0
fw_http "$SB_B" http://198.51.100.66/ 1 || true
check "the address reader saw sandbox-b's connect to 198.51.100.66" fw_eventually 5 \
	qge "$FW_TMP/byaddr.out" 'e["kind"]=="drop" and e["dst"]=="198.51.100.66"' 1

echo "# a stopped reader"
reader slow -o json --subject sandbox-b --kind drop
reader fast -o json --subject sandbox-b --kind drop
reader slowtext --subject sandbox-b --kind drop
# shellcheck disable=SC2154 # set by reader
kill -STOP "$PID_slow" "$PID_slowtext"
STOPPED="$PID_slow $PID_slowtext"
dropped0=$(metric fastwall_monitor_events_dropped_total)
# denied UDP datagrams from sandbox-b, each one a drop event, in bursts
# a running reader keeps up with on a loaded machine, while the stopped
# one's socket buffer and queue (4096 lines) fill
fw_ns "$SB_B" "$FW_PY" -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range($FLOOD):
    s.sendto(b'x', ('203.0.113.10', 10000 + i % 50000))
    if i % 200 == 199:
        time.sleep(0.01)
"
flood_seen() { q "$FW_TMP/fast.out" 'e["kind"]=="drop" and e["dst"]=="203.0.113.10" and e["proto"]=="udp"'; }
flood_ge() { [ "$(flood_seen)" -ge "$1" ]; }
# On a quiet machine the running reader loses nothing; a loaded one may
# keep it off the CPU long enough to lose some, never most
check "the running reader saw the flood while the other was stopped" fw_eventually 10 \
	flood_ge $((FLOOD / 2))
dropped1=$(metric fastwall_monitor_events_dropped_total)
check "fastwall_monitor_events_dropped_total counts the stopped reader's losses" \
	test "$dropped1" -gt "$dropped0"
kill -CONT "$PID_slow" "$PID_slowtext"
STOPPED=""
total() { # READER: events received + events it was told it lost
	"$FW_PY" - "$FW_TMP/$1.out" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    n += e["lost"] if e["kind"] == "lost" else 1
print(n)
EOF
}
check "after SIGCONT the stopped reader is told it lost events" fw_eventually 10 \
	qge "$FW_TMP/slow.out" 'e["kind"]=="lost" and e["lost"]>0' 1
slow_adds_up() { [ "$(total slow)" -eq "$(total fast)" ]; }
check "... what it got and what it lost add up to what the other got" fw_eventually 5 slow_adds_up
lost_of() { "$FW_PY" -c 'import json, sys; print(sum(json.loads(l).get("lost", 0) for l in open(sys.argv[1])))' "$FW_TMP/$1.out"; }
echo "# lost: the stopped reader $(lost_of slow), the running one $(lost_of fast) of $FLOOD"
check "... and it lost a good part of the flood, far more than the running one" \
	test "$(lost_of slow)" -ge $((FLOOD / 5)) -a "$(lost_of slow)" -gt $((2 * $(lost_of fast)))
check "... and the text reader prints a \"lost N events\" line" fw_eventually 10 \
	grep -qE '^lost [0-9]+ events$' "$FW_TMP/slowtext.out"

echo "# logs"
check "every line of the log is a JSON object (log_format: json)" all_json "$FW_LOG"
check "the audit trail has sandbox-b's deny as a JSON record" test "$(q "$FW_LOG" 'e["level"]=="audit" and e.get("event")=="deny" and e.get("subject")=="sandbox-b" and e.get("reason")=="default-deny" and e.get("dst")=="198.51.100.10" and e.get("dport")=="80"')" -ge 1
check "... and the denied query" test "$(q "$FW_LOG" 'e["level"]=="audit" and e.get("event")=="deny" and e.get("reason")=="dns-denied-name" and e.get("name")=="bad.example.com"')" -ge 1
check "... and the subjects' start" test "$(q "$FW_LOG" 'e["level"]=="audit" and e.get("event")=="subject" and e.get("uid")=="sandbox-b" and e.get("change")=="added" and e.get("policy")!="-"')" -ge 1

# log_level error, and sandbox-b's policy changes: its audit record says so
before=$(wc -l <"$FW_LOG")
write_config error '        - { action: allow, target: 192.0.2.254/32 }
        - { action: allow, target: 198.51.100.66/32 }'
kill -HUP "$FW_DAEMON_PID"
since() { tail -n +"$((before + 1))" "$FW_LOG" | grep -c -- "$1"; }
since_ge() { [ "$(since "$1")" -ge 1 ]; }
check "with log_level: error, the policy change is in the audit trail" fw_eventually 5 \
	since_ge '"event":"subject","uid":"sandbox-b","change":"updated"' 
tail -n +"$((before + 1))" "$FW_LOG" >"$FW_TMP/after.log"
check "... with the old and the new policy digest, which differ" test "$(q "$FW_TMP/after.log" 'e.get("event")=="subject" and e["old_policy"]!=e["policy"] and len(e["policy"])==16 and e["old_id"]==e["id"]')" -ge 1
fw_http "$SB_B" http://198.51.100.10/ 1 || true
check "... and so is a deny" fw_eventually 5 \
	since_ge '"level":"audit","event":"deny","subject":"sandbox-b"' 
tail -n +"$((before + 1))" "$FW_LOG" >"$FW_TMP/after.log"
check_eq "... while no info line is written" "$(q "$FW_TMP/after.log" 'e["level"]=="info"')" 0
check "the change allowed sandbox-b to 198.51.100.66" fw_http "$SB_B" http://198.51.100.66/ 2

fw_stop_daemon
check "the readers are told fastwalld went away" fw_eventually 5 grep -q "fastwalld went away" "$FW_TMP/fast.err"
check_fails "the socket is gone with fastwalld" test -e "$SOCK"
fw_summary
