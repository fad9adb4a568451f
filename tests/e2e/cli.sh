#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: what scripts rely on in both binaries. -o json on every
# read command of fastwall (each document parsed by python3 -m json.tool
# and its documented fields checked), the exit-code table of
# user/lib/common/exitcodes.h (each code produced for real, and both man
# pages listing the same table), and options a command would not use
# refused rather than ignored.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

SB_A=$(fw_sb_ns a)

fw_topology
fw_sandbox a 2
fw_sandbox b 3
fw_serve_internet

cat >"$FW_CFG" <<EOF
log_level: info
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
  bridges: [br0]
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
  - name: sandbox-b
    addresses: [10.42.0.3]
    interface: sb-b
    state: denying
    policy: { defaultAction: allow }
EOF

# rc CMD...: the exit status of CMD, its output thrown away
rc() { "$@" >/dev/null 2>&1 && echo 0 || echo $?; }
# json_ok DESC EXPR DOC: DOC parses with json.tool and EXPR (python, the
# document is d) holds. Not at the end of a pipe: the count must stay here.
json_ok() {
	local desc=$1 expr=$2 doc=$3
	if ! "$FW_PY" -m json.tool <<<"$doc" >/dev/null 2>"$FW_TMP/json.err"; then
		fw_not_ok "$desc: not JSON ($(head -1 "$FW_TMP/json.err"))"
		return
	fi
	if "$FW_PY" -c "import json,sys; d=json.loads(sys.stdin.read()); sys.exit(0 if ($expr) else 1)" \
		<<<"$doc" 2>"$FW_TMP/json.err"; then
		fw_ok "$desc"
	else
		fw_not_ok "$desc: $expr does not hold"
		awk 'NR <= 40 { print "#   " $0 }' <<<"$doc"
	fi
}

echo "# the exit-code table, in the header and both man pages"
hdr=$FW_ROOT/user/lib/common/exitcodes.h
codes=$(sed -n 's/^\tFW_EXIT_[A-Z_]* = \([0-9]*\),.*/\1/p' "$hdr" | sort -n | tr '\n' ' ')
check_eq "the header's codes" "$codes" "0 1 2 3 4 5 6 7 125 126 127 "
for page in fastwall.8 fastwalld.8; do
	table=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$FW_ROOT/docs/$page")
	for n in 0 1 2 3 4 5 6 7; do
		check "$page lists exit status $n" grep -qx ".B $n" <<<"$table"
	done
done

echo "# fastwalld: codes and refused options"
check_eq "fastwalld check of a valid file: 0" "$(rc "$FASTWALLD" -c "$FW_CFG" check)" 0
printf 'datapath: { bpffs: %s, nosuchkey: 1 }\n' "$BPFFS" >"$FW_TMP/bad.yaml"
check_eq "fastwalld check of an invalid file: 3" "$(rc "$FASTWALLD" -c "$FW_TMP/bad.yaml" check)" 3
check_eq "fastwalld run with an invalid file: 3" "$(rc fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_TMP/bad.yaml" run)" 3
check_eq "fastwalld with an unknown option: 2" "$(rc "$FASTWALLD" --nosuch check)" 2
check_eq "fastwalld with an unknown command: 2" "$(rc "$FASTWALLD" -c "$FW_CFG" nosuch)" 2
check_eq "fastwalld -b DIR check: refused (2), -b names detach's pins only" \
	"$(rc "$FASTWALLD" -c "$FW_CFG" -b "$FW_TMP/x" check)" 2
check_eq "fastwalld -b DIR run: refused (2)" "$(rc "$FASTWALLD" -c "$FW_CFG" -b "$FW_TMP/x" run)" 2
check_eq "fastwalld run --purge: refused (2)" "$(rc "$FASTWALLD" -c "$FW_CFG" --purge run)" 2
check_eq "fastwalld with a bad log level: 2" "$(rc "$FASTWALLD" -c "$FW_CFG" -l loud check)" 2
check_fails "nothing was pinned by the refused runs" test -e "$BPFFS"
printf 'datapath: { bpffs: /sys/fs/bpf }\n' >"$FW_TMP/root.yaml"
others() { find /sys/fs/bpf -mindepth 1 -maxdepth 1 ! -name 'fastwall-*' -printf '%f\n' | sort; }
roots=$(others)
out=$(fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_TMP/root.yaml" run 2>&1) && r=0 || r=$?
check_eq "fastwalld run with bpffs at the mount point itself (/sys/fs/bpf): refused (4)" "$r" 4
check "... saying why" grep -q "is a bpf filesystem's mount point" <<<"$out"
check_eq "... nothing was pinned among the other tools' pins" "$(others)" "$roots"
printf 'datapath: { bpffs: %s/plain/fw }\n' "$FW_TMP" >"$FW_TMP/plain.yaml"
out=$(fw_ns "$NS_POD" "$FASTWALLD" -c "$FW_TMP/plain.yaml" run 2>&1) && r=0 || r=$?
check_eq "fastwalld run with bpffs on a plain directory: refused (4)" "$r" 4
check "... saying why" grep -q "is not on a bpf filesystem" <<<"$out"

echo "# fastwall: codes before anything is pinned"
check_eq "fastwall status, nothing pinned: 5" "$(rc fw_cli status)" 5
check_eq "fastwall explain, nothing pinned: 5" "$(rc fw_cli explain 10.42.0.2 198.51.100.10)" 5
mkdir -p "$FW_TMP/old"
old=/sys/fs/bpf/fastwall-old-$FW_ID
mkdir -p "$old"
bpftool map create "$old/fastwall_dispatch" type hash key 16 value 80 entries 4 name fastwall_dispat
check_eq "fastwall status on pins of another ABI: 6" "$(rc "$FASTWALL" -b "$old" status)" 6
rm -rf "$old"
check_eq "fastwall with no command: 2" "$(rc "$FASTWALL")" 2
check_eq "fastwall with an unknown command: 2" "$(rc "$FASTWALL" nosuch)" 2
check_eq "fastwall -o yaml: 2" "$(rc "$FASTWALL" -o yaml reasons)" 2
check_eq "fastwall reasons takes no operand: 2" "$(rc "$FASTWALL" reasons extra)" 2
check_eq "fastwall -a reasons: refused (2)" "$(rc "$FASTWALL" -a reasons)" 2
check_eq "fastwall -m status: refused (2)" "$(rc fw_cli -m status)" 2
check_eq "fastwall leases --all: refused (2)" "$(rc fw_cli leases --all)" 2
check_eq "fastwall subjects --cgroup: refused (2)" "$(rc fw_cli subjects --cgroup /x)" 2
check_eq "fastwall -a scope: refused (2)" "$(rc "$FASTWALL" -a scope verify --keys /x y)" 2
check_eq "fastwall -b DIR reasons: refused (2), reasons reads no pins" \
	"$(rc "$FASTWALL" -b "$BPFFS" reasons)" 2
check_eq "fastwall -o json run: refused (2)" "$(rc "$FASTWALL" -o json run -- true)" 2
check_eq "fastwall --version: 0" "$(rc "$FASTWALL" --version)" 0

echo "# every command's own --help, and an unknown option naming the command"
# cmd_help BIN CMD FORM: BIN CMD --help exits 0 with CMD's usage (its first
# line matching FORM), and BIN CMD --no-such-option exits 2 saying so
cmd_help() {
	local bin=$1 c=$2 form=$3 out r
	out=$("$bin" "$c" --help 2>&1) && r=0 || r=$?
	check_eq "$(basename "$bin") $c --help: 0" "$r" 0
	check "$(basename "$bin") $c --help: its own usage" grep -qE "$form" <<<"$(head -1 <<<"$out")"
	out=$("$bin" "$c" --no-such-option 2>&1 >/dev/null) && r=0 || r=$?
	check_eq "$(basename "$bin") $c --no-such-option: 2" "$r" 2
	check "$(basename "$bin") $c --no-such-option: names the command and the option" \
		grep -q "^$(basename "$bin") $c: unknown option '--no-such-option'" <<<"$out"
}
cmds=$("$FASTWALL" --help | awk '/^commands:/ { f = 1; next } f && NF == 0 { exit } f { print $1 }')
check_eq "fastwall --help lists the commands" "$(paste -sd" " <<<"$cmds")" \
	"status subjects leases reasons explain run monitor scope hostname"
for c in $cmds; do
	cmd_help "$FASTWALL" "$c" "^usage: fastwall $c( |\$)"
done
dcmds=$("$FASTWALLD" --help | sed -nE 's/^(usage:)? +fastwalld (\[OPTIONS\] )?\[?([a-z0-9-]+).*/\3/p')
check_eq "fastwalld --help lists the commands" "$(paste -sd" " <<<"$dcmds")" "run check detach l7-conf config-keys"
for c in $dcmds; do
	cmd_help "$FASTWALLD" "$c" "^usage: fastwalld (\[OPTIONS\] )?\[?$c(\]| |\$)"
done

fw_start_daemon || fw_die "fastwalld did not start"
fw_wait_log 'attached to sb-b' 1 5 || true
fw_http "$SB_A" http://198.51.100.10/ 2 || true
fw_http "$SB_A" http://203.0.113.10/ 1 || true

echo "# fastwall -o json, every read command"
json_ok "status" \
	"d['pins'] == '$BPFFS' and d['subjects'] == 2 and d['removed'] == 0 and 'sb-a' in d['attached'] \
	 and d['guard'] == [] and d['passed'] >= 1 and d['dropped'] >= 1 \
	 and any(v['reason'] == 'allow-cidr' and v['verdict'] == 'pass' and v['number'] == 0 \
	         and v['packets'] >= 1 and v['bytes'] > 0 for v in d['verdicts'])" \
	"$(fw_cli -o json status)"
json_ok "status --all: every reason, zero or not" \
	"len(d['verdicts']) >= 30" \
	"$(fw_cli --output json --all status)"
json_ok "subjects" \
	"sorted(s['name'] for s in d['subjects']) == ['sandbox-a', 'sandbox-b'] \
	 and all(set(s) == {'id', 'name', 'state', 'interface', 'addresses', 'cgroup', 'counters'} \
	         for s in d['subjects']) \
	 and sorted([s for s in d['subjects'] if s['name'] == 'sandbox-a'][0]['addresses']) \
	     == ['10.42.0.2', 'fd00:42::2']" \
	"$(fw_cli -o json subjects)"
json_ok "subjects: state, interface, counters" \
	"[(s['state'], s['interface']) for s in sorted(d['subjects'], key=lambda s: s['name'])] \
	 == [('active', 'sb-a'), ('denying', 'sb-b')] \
	 and [s for s in d['subjects'] if s['name'] == 'sandbox-a'][0]['counters']['allow-cidr'] >= 1" \
	"$(fw_cli -o json subjects)"
json_ok "leases (none learned)" \
	"d == {'leases': []}" \
	"$(fw_cli -o json leases)"
json_ok "reasons" \
	"all(set(r) == {'number', 'verdict', 'reason', 'meaning'} for r in d['reasons']) \
	 and d['reasons'][0] == {'number': 0, 'verdict': 'pass', 'reason': 'allow-cidr', \
	 'meaning': 'destination in an allow CIDR'} and len(d['reasons']) >= 36" \
	"$("$FASTWALL" -o json reasons)"
json_ok "explain" \
	"d['verdict'] == 'pass' and d['reason'] == 'allow-cidr' and d['reason_number'] == 0 \
	 and d['step'] == 'rule' and d['subject']['name'] == 'sandbox-a' \
	 and d['subject']['state'] == 'active' and d['subject']['interface'] == 'sb-a' \
	 and d['rule'] == {'number': 1, 'index': 0, 'text': 'allow 198.51.100.0/24', 'list': 'policy', \
	                   'compiled_index': 0} \
	 and d['entry'] == '198.51.100.0/24' and d['default'] == 'deny' and d['lease'] is None \
	 and d['packet'] == {'src': '10.42.0.2', 'dst': '198.51.100.10', 'proto': '80/tcp', \
	                   'cgroup': None}" \
	"$(fw_cli -o json explain --config "$FW_CFG" 10.42.0.2 198.51.100.10 80/tcp)"
json_ok "explain, no subject" \
	"d['verdict'] == 'drop' and d['reason'] == 'unknown-source' and d['subject'] is None \
	 and d['rule'] is None" \
	"$(fw_cli -o json explain 10.42.0.9 198.51.100.10 || true)"
keys=$FW_TMP/keys
printf 'k=%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$keys"
scope=$("$FASTWALL" scope sign --keys "$keys" --key-id k tenant sb 8080)
json_ok "scope sign" \
	"d == {'scope': '$scope'}" \
	"$("$FASTWALL" -o json scope sign --keys "$keys" --key-id k tenant sb 8080)"
json_ok "scope verify" \
	"d == {'valid': True, 'namespace': 'tenant', 'sandbox': 'sb', 'port': 8080}" \
	"$("$FASTWALL" -o json scope verify --keys "$keys" "$scope")"
json_ok "scope verify, -o after the verb" \
	"d['valid'] is True" \
	"$("$FASTWALL" scope verify --keys "$keys" -o json "$scope")"
out=$("$FASTWALL" -o json scope verify --keys "$keys" f1.forged 2>/dev/null) && r=0 || r=$?
check_eq "scope verify refused: 1" "$r" 1
json_ok "scope verify refused: the reason" "d['valid'] is False and len(d['error']) > 0" "$out"
check_eq "text stays the default" "$("$FASTWALL" scope verify --keys "$keys" "$scope")" "tenant sb 8080"

echo "# a global option before a word that does not take it"
out=$("$FASTWALL" -o json hostname hash --gateway g ws sb 2>&1) && r=0 || r=$?
check_eq "fastwall -o json hostname: usage (2)" "$r" 2
check "fastwall -o json hostname: names the command and the option" \
	grep -q "^fastwall hostname: does not take --output" <<<"$out"
out=$("$FASTWALL" -b /nonexistent monitor 2>&1) && r=0 || r=$?
check_eq "fastwall -b DIR monitor: usage (2)" "$r" 2
check "fastwall -b DIR monitor: names the command and the option" \
	grep -q "^fastwall monitor: does not take --bpffs" <<<"$out"
out=$("$FASTWALL" monitor --reason nope --socket "$FW_TMP/none.sock" 2>&1) && r=0 || r=$?
check_eq "fastwall monitor --reason nope: usage (2), before connecting" "$r" 2
check "fastwall monitor --reason nope: says the reason is unknown" \
	grep -q "^fastwall monitor: unknown reason 'nope'" <<<"$out"
for good in default-deny dns-denied-name l7-name; do
	out=$("$FASTWALL" monitor --reason "$good" --socket "$FW_TMP/none.sock" 2>&1) && r=0 || r=$?
	check_eq "fastwall monitor --reason $good: taken (1: no fastwalld at the socket)" "$r" 1
done

echo "# fastwall status from another network namespace"
out=$(fw_ns "$SB_A" "$FASTWALL" --bpffs "$BPFFS" status)
check "says none here and how many fastwalld attached in its own" \
	grep -qx 'attached:    none in this network namespace; fastwalld attached 2' <<<"$out"
json_ok "-o json: attached [] and attached_elsewhere 2" \
	"d['attached'] == [] and d['attached_elsewhere'] == 2" \
	"$(fw_ns "$SB_A" "$FASTWALL" --bpffs "$BPFFS" -o json status)"

echo "# fastwall: codes with pins"
check_eq "fastwall status: 0" "$(rc fw_cli status)" 0
check_eq "explain of a pass: 0" "$(rc fw_cli explain 10.42.0.2 198.51.100.10 80/tcp)" 0
check_eq "explain of a drop: 7" "$(rc fw_cli explain 10.42.0.2 203.0.113.10 80/tcp)" 7
check_eq "explain with a bad address: 2" "$(rc fw_cli explain 10.42.0.2 not-an-address)" 2

fw_summary
