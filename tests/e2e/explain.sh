#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: fastwall explain against a running fastwalld, checked on
# what the real traffic does: a denied destination (the deny rule's text),
# one allowed by CIDR, one allowed by a name the DNS proxy learned (the
# name shown), a subject not yet active, DNS to the proxy, a sibling; JSON
# output; the exit codes; and that explaining moves no counter.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v dig >/dev/null || fw_die "dig not found (apt-get install bind9-dnsutils)"
command -v dnsmasq >/dev/null || fw_die "dnsmasq not found (apt-get install dnsmasq-base)"

SB_A=$(fw_sb_ns a)
SB_B=$(fw_sb_ns b)
UP4=198.51.100.53

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_serve_internet
ip -n "$NS_INET" addr add 203.0.113.20/32 dev lo
fw_serve "$NS_INET" --http 203.0.113.20:80
fw_resolver $UP4 api.example.com,203.0.113.20,300

# allow_hosts FIRST STEP LAST: egress rules allowing 192.0.2.FIRST..LAST
allow_hosts() {
	local i
	for i in $(seq "$1" "$2" "$3"); do echo "        - { action: allow, target: ${4:-192.0.2}.$i }"; done
}
cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
dns:
  upstreams: [$UP4]
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: deny, target: 198.51.100.66, ports: [80] }
        - { action: allow, target: api.example.com }
$(fw_subject_yaml b 3 v4)
    state: denying
    policy: { defaultAction: allow }
  # 200 single addresses: more than a small set holds (60 entries), so
  # its rules are a range table (nothing sends from it)
  - name: sandbox-c
    addresses: [10.42.0.4]
    policy:
      defaultAction: deny
      egress:
$(allow_hosts 1 1 200)
  # 300: more than a range table holds (256 entries), so its rules go to
  # its slot's trie (nothing sends from it)
  - name: sandbox-e
    addresses: [10.42.0.6]
    policy:
      defaultAction: deny
      egress:
$(allow_hosts 1 1 250)
$(allow_hosts 1 1 50 203.0.113)
  # 24 single addresses: a small set of two chunks (nothing sends from it)
  - name: sandbox-d
    addresses: [10.42.0.5]
    policy:
      defaultAction: deny
      egress:
$(allow_hosts 100 2 146)
EOF
# the socket a fastwalld on the host would have, if there is one
HOST_MON=/run/fastwall/monitor.sock
host_mon=$(stat -c %i "$HOST_MON" 2>/dev/null || echo none)
fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-b' 1 5 || true
check "the test daemon's monitor socket is this run's own" test -S "$FW_MON_SOCK"
check_eq "the host's monitor socket path is left alone" \
	"$(stat -c %i "$HOST_MON" 2>/dev/null || echo none)" "$host_mon"

x() { fw_cli explain --config "$FW_CFG" "$@"; }
# the value of FIELD: in the text output
field() { sed -n "s/^$1: *//p"; }
# json_get EXPR: EXPR of the JSON document on stdin, which is d
json_get() { "$FW_PY" -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
# subject_id NAME: the subject's id as fastwall subjects lists it; 0 (no
# subject has it) when it cannot be read, which fails the checks using it
subject_id() {
	fw_cli -o json subjects | json_get "[s['id'] for s in d['subjects'] if s['name'] == '$1'][0]" ||
		echo 0
}

echo "# denied by a rule (a port exception of 198.51.100.66)"
out=$(x 10.42.0.2 198.51.100.66 80/tcp) && rc=0 || rc=$?
check_eq "exit 7: the packet would drop" "$rc" 7
check_eq "verdict: drop deny-cidr" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "drop deny-cidr"
id_a=$(subject_id sandbox-a)
check_eq "subject line: name, id, state, interface" "$(field subject <<<"$out")" \
	"sandbox-a (id $id_a, active, interface sb-a)"
check "decided: the rule's text as written" grep -q \
	'^decided:  rule 2 of sandbox-a.s policy: deny 198.51.100.66 ports=80 (port 80 of entry 198.51.100.66/32)$' <<<"$out"
check_fails "the data plane agrees: 198.51.100.66:80 does not answer" \
	fw_http "$SB_A" http://198.51.100.66/ 1

echo "# a small policy's rule set reads by field in bpftool"
bpftool -j -p map dump pinned "$BPFFS/fastwall_rule_sets" >"$FW_TMP/sets.txt" 2>&1 || true
# awk reads the whole dump: a head closing the pipe would end the script (pipefail).
awk '/"formatted"/ { p = 1 } p && n < 40 { print "    " $0; n++ }' "$FW_TMP/sets.txt"
check_eq "sandbox-a's rules are one small set (its generation has bit 31)" \
	"$("$FW_PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for e in d if e.get('formatted', e)['key']['subject'] == int(sys.argv[2]) and e.get('formatted', e)['key']['gen'] >= 2**31))" "$FW_TMP/sets.txt" "$id_a")" 1
check "bpftool prints the set's entries by field, actions by name" \
	grep -q '"action": "FW_ACTION_ALLOW"' "$FW_TMP/sets.txt"

echo "# a policy of 25 entries is a set of two chunks, the second keyed by id + 65536"
id_d=$(subject_id sandbox-d)
check_eq "sandbox-d's rules are two chunks of one small set, 20 and 5 entries" \
	"$("$FW_PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(sorted((e.get('formatted', e)['key']['subject'] >> 16, e.get('formatted', e)['value']['n']) for e in d if e.get('formatted', e)['key']['subject'] & 65535 == int(sys.argv[2])))" "$FW_TMP/sets.txt" "$id_d")" \
	"[(0, 20), (1, 5)]"
out=$(x 10.42.0.5 192.0.2.146 80/tcp) && rc=0 || rc=$?
check_eq "explain: an address of the second chunk passes" "$rc" 0
out=$(x 10.42.0.5 192.0.2.147 80/tcp) && rc=0 || rc=$?
check_eq "explain: past the second chunk's last entry, the default drops" "$rc" 7

echo "# a policy of 201 entries is a range table: its element names a slot of the tables"
id_c=$(subject_id sandbox-c)
check "fastwall subjects lists sandbox-c" test "$id_c" != 0
bpftool -j map dump pinned "$BPFFS/fastwall_rule_ranges" >"$FW_TMP/ranges.txt" 2>&1 || true
slot=$("$FW_PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print([e.get('formatted', e)['value'] for e in d if e.get('formatted', e)['key']['subject'] == int(sys.argv[2]) and e.get('formatted', e)['key']['gen'] & 2**30][0])" "$FW_TMP/ranges.txt" "$id_c") ||
	slot=none
check "sandbox-c's element is keyed by its id and a generation with bit 30" test "$slot" != none
bpftool -j map lookup pinned "$BPFFS/fastwall_range_tables" key $((slot & 255)) $(((slot >> 8) & 255)) 0 0 >"$FW_TMP/table.txt" 2>&1 || true
check_eq "bpftool prints the table by field: 201 entries (the default one of them)" \
	"$("$FW_PY" -c "import json,sys; v=json.load(open(sys.argv[1])); v=v.get('formatted', v)['value']; print(v['nrules'], v['rule'][v['at'][0]]['is_default'], v['n'] >= 201)" "$FW_TMP/table.txt")" \
	"201 1 True"
out=$(x 10.42.0.4 192.0.2.57 80/tcp) && rc=0 || rc=$?
check_eq "explain: an address of the table passes" "$rc" 0
check "decided: rule 57 and its entry, read from the table" grep -q \
	'^decided:  rule 57 of sandbox-c.s policy: allow 192.0.2.57 (entry 192.0.2.57/32)$' <<<"$out"
out=$(x 10.42.0.4 192.0.2.201 80/tcp) && rc=0 || rc=$?
check_eq "explain: the address after the last entry falls to the default and drops" "$rc" 7

echo "# a policy past the range tables is in its slot trie, which reads by field in bpftool"
id_e=$(subject_id sandbox-e)
check "fastwall subjects lists sandbox-e" test "$id_e" != 0
key=($((id_e & 255)) $(((id_e >> 8) & 255)) 0 0)
inner=$(bpftool -j map lookup pinned "$BPFFS/fastwall_rules_v2" key "${key[@]}" |
	"$FW_PY" -c "import json,sys; v=json.load(sys.stdin)['value']; print(v if isinstance(v, int) else int.from_bytes(bytes(int(b, 16) for b in v), 'little'))") ||
	inner=none
bpftool map dump id "$inner" >"$FW_TMP/trie.txt" 2>&1 || true
sed 's/^/    /' "$FW_TMP/trie.txt"
check "bpftool prints the trie's keys by field" grep -q '"prefixlen": 160' "$FW_TMP/trie.txt"
check "bpftool prints the entries' actions by name" grep -q '"action": "FW_ACTION_ALLOW"' "$FW_TMP/trie.txt"

echo "# allowed by CIDR"
out=$(x 10.42.0.2 198.51.100.10 80/tcp) && rc=0 || rc=$?
check_eq "exit 0: the packet would pass" "$rc" 0
check_eq "verdict: pass allow-cidr" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "pass allow-cidr"
check "decided: rule 1 and its entry" grep -q \
	'^decided:  rule 1 of sandbox-a.s policy: allow 198.51.100.0/24 (entry 198.51.100.0/24)$' <<<"$out"
check "the data plane agrees: 198.51.100.10 answers" fw_http "$SB_A" http://198.51.100.10/ 2
out=$(x 10.42.0.2 198.51.100.66 9000/udp) || true
check_eq "the same host on another port: allowed by rule 1's entry" \
	"$(field verdict <<<"$out" | cut -d' ' -f1-2)" "pass allow-cidr"

echo "# allowed by a learned name"
out=$(x 10.42.0.2 203.0.113.20 80/tcp) && rc=0 || rc=$?
check_eq "before the name resolves: default deny" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" \
	"drop default-deny"
check "decided: the default" grep -q "^decided:  the default (deny) of sandbox-a" <<<"$out"
fw_ns "$SB_A" dig +short +time=3 +tries=1 @10.42.0.1 api.example.com >"$FW_TMP/dig.out" 2>&1 || true
check "api.example.com resolved through the proxy" grep -qx 203.0.113.20 "$FW_TMP/dig.out"
out=$(x 10.42.0.2 203.0.113.20 80/tcp) && rc=0 || rc=$?
check_eq "after: exit 0" "$rc" 0
check_eq "verdict: pass learned" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "pass learned"
check "decided: the lease and the name that taught it" grep -qE \
	'^decided:  a lease learned from DNS: api\.example\.com, [0-9]+s left$' <<<"$out"
check "the data plane agrees: 203.0.113.20 answers" fw_http "$SB_A" http://203.0.113.20/ 2
leases=$(fw_cli -o json leases) || leases=
check "leases -o json parses" "$FW_PY" -m json.tool <<<"$leases"
check_eq "leases -o json: the lease, its subject and name" "$(json_get "[(l['subject'], l['address'], \
	l['expired'], l['ports'], l['names'], 0 < l['expires_in_s'] <= 400) for l in d['leases']]" \
	<<<"$leases")" "[('sandbox-a', '203.0.113.20', False, None, ['api.example.com'], True)]"
check_eq "JSON: the lease's names" "$(x -o json 10.42.0.2 203.0.113.20 80/tcp |
	json_get "d['lease']['names']")" "['api.example.com']"

echo "# a subject not yet active"
out=$(x 10.42.0.3 198.51.100.10 80/tcp) && rc=0 || rc=$?
check_eq "exit 7" "$rc" 7
check_eq "verdict: drop denying" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "drop denying"
check "subject: sandbox-b, denying" grep -q '^subject:  sandbox-b (id [0-9]*, denying, interface sb-b)' <<<"$out"
check "decided: the state" grep -q '^decided:  the subject is denying, not active' <<<"$out"
check_fails "the data plane agrees: sandbox-b reaches nothing" fw_http "$SB_B" http://198.51.100.10/ 1

echo "# DNS, siblings, strangers, interfaces"
out=$(x 10.42.0.3 10.42.0.1 53/udp) || true
check_eq "a denying subject's DNS still goes to the proxy" \
	"$(field verdict <<<"$out" | cut -d' ' -f1-2)" "pass dns-proxy"
out=$(x 10.42.0.2 10.42.0.3 80/tcp) || true
check_eq "to a sibling" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "drop sibling"
out=$(x 10.42.0.9 198.51.100.10 80/tcp) || true
check_eq "from an address no subject has" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" \
	"drop unknown-source"
out=$(x --iface sb-b 10.42.0.2 198.51.100.10 80/tcp) || true
check_eq "sandbox-a's address on sb-b: spoofed" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" \
	"drop spoofed-source"
out=$(x --iface sb-a 10.42.0.2 198.51.100.10 80/tcp) || true
check_eq "on its own port: allowed" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "pass allow-cidr"
out=$(x 10.42.0.2 198.51.100.10 853/tcp) || true
check_eq "DNS over TLS" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "drop dns-over-tls"
out=$(x 10.42.0.2 198.51.100.10) || true
check_eq "no PORT/PROTO: an echo request" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" \
	"pass allow-cidr"

echo "# the rule text needs the configuration it came from"
out=$(fw_cli explain --config "$FW_TMP/none.yaml" 10.42.0.2 198.51.100.66 80/tcp) || true
check "no configuration: the index alone" grep -q \
	'^decided:  rule 2 of sandbox-a.s policy (overlay rules first) (port 80' <<<"$out"
sed 's/198.51.100.66, ports: \[80\]/198.51.100.67, ports: [80]/' "$FW_CFG" >"$FW_TMP/edited.yaml"
out=$(fw_cli explain --config "$FW_TMP/edited.yaml" 10.42.0.2 198.51.100.66 80/tcp) || true
check "a configuration edited since the load: the index alone, never a wrong text" \
	grep -q '^decided:  rule 2 of sandbox-a.s policy (overlay rules first) (port 80' <<<"$out"

echo "# JSON"
j=$(x -o json 10.42.0.2 198.51.100.66 80/tcp) || true
check "explain -o json parses" "$FW_PY" -m json.tool <<<"$j"
check_eq "JSON fields" "$(json_get "d['verdict'],d['reason'],d['step'],d['subject']['name'],d['rule']['index'],d['rule']['text']" <<<"$j")" \
	"('drop', 'deny-cidr', 'port-rule', 'sandbox-a', 1, 'deny 198.51.100.66 ports=80')"

echo "# explaining disturbs nothing"
# the kernel's own neighbour discovery on the sandbox ports may count
# meanwhile: everything but the neighbour reason must stay as it was
VERDICTS="[v for v in d['verdicts'] if v['reason'] != 'neighbour']"
SUBJECTS="[dict(s, counters={k: n for k, n in s['counters'].items() if k != 'neighbour'}) for s in d['subjects']]"
before=$(fw_cli -o json status | json_get "$VERDICTS") || before=unread
sub_before=$(fw_cli -o json subjects | json_get "$SUBJECTS") || sub_before=unread
for _ in $(seq 20); do x 10.42.0.2 198.51.100.66 80/tcp >/dev/null || true; done
check_eq "no verdict counter moved" "$(fw_cli -o json status | json_get "$VERDICTS")" "$before"
check_eq "no subject counter moved" "$(fw_cli -o json subjects | json_get "$SUBJECTS")" "$sub_before"

echo "# usage and exit codes"
fw_cli explain 10.42.0.2 >/dev/null 2>&1 && rc=0 || rc=$?
check_eq "one operand: usage (2)" "$rc" 2
fw_cli explain 10.42.0.2 198.51.100.10 80/sctp >/dev/null 2>&1 && rc=0 || rc=$?
check_eq "an unknown protocol: usage (2)" "$rc" 2
fw_cli explain 10.42.0.2 fd00:42::9 >/dev/null 2>&1 && rc=0 || rc=$?
check_eq "mixed families: usage (2)" "$rc" 2
fw_cli explain --iface nosuch0 10.42.0.2 198.51.100.10 >/dev/null 2>&1 && rc=0 || rc=$?
check_eq "an unknown interface: usage (2)" "$rc" 2
fw_cli status --iface sb-a >/dev/null 2>&1 && rc=0 || rc=$?
check_eq "an explain option on status: refused (2)" "$rc" 2

echo "# without fastwalld"
fw_stop_daemon
out=$(x 10.42.0.2 198.51.100.66 80/tcp) || true
check_eq "the pins still answer" "$(field verdict <<<"$out" | cut -d' ' -f1-2)" "drop deny-cidr"

fw_summary
