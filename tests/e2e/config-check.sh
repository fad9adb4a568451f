#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `fastwalld check` on policy typos: unknown keys inside a policy are
# accepted (exit 0, the format ignores them) and each is a warning on
# stderr with file:line, whose policy, which rule and the key it looks
# like; a clean file prints none; a file that attaches to no interface is
# accepted with a warning; an unknown key outside a policy is still an
# error (exit 3). Needs no root.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
FASTWALLD=$BUILD/fastwalld
passed=0
failed=0
ok() {
	echo "ok - $1"
	passed=$((passed + 1))
}
not_ok() {
	echo "not ok - $1"
	failed=$((failed + 1))
}
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
check_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi; }

[ -x "$FASTWALLD" ] || { echo "fatal: $FASTWALLD missing: run make all" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat >"$T/typo.yaml" <<'EOF2'
subjects:
  - name: sandbox-a
    addresses: 10.0.0.2
    policy:
      defaultAction: deny
      egres:
        - { action: allow, target: x.example }
      egress:
        - { action: allow, target: y.example, port: [443] }
datapath:
  bridges: [br0]
EOF2
out=$("$FASTWALLD" -c "$T/typo.yaml" check 2>"$T/err")
check_eq "a file with policy typos: accepted (exit 0)" "$?" 0
check_eq "stdout says ok, with warnings" "$out" "$T/typo.yaml: ok, 1 static subjects (with warnings)"
check_eq "stderr: one warning per unknown key, with file:line and the likely key" "$(cat "$T/err")" \
	"warning: $T/typo.yaml:6: unknown key 'egres' in the policy of subject sandbox-a, ignored (did you mean 'egress'?)
warning: $T/typo.yaml:9: unknown key 'port' in egress rule 1 of subject sandbox-a, ignored (did you mean 'ports'?)"

sed -e 's/egres:/egress:/; s/port:/ports:/' "$T/typo.yaml" | sed '8d' >"$T/clean.yaml"
out=$("$FASTWALLD" -c "$T/clean.yaml" check 2>"$T/err")
check_eq "the file fixed: ok" "$out" "$T/clean.yaml: ok, 1 static subjects"
check_eq "and no warning" "$(cat "$T/err")" ""

# valid, but attaching to nothing: said, still exit 0
sed '/^datapath:/,$d' "$T/clean.yaml" >"$T/nothing.yaml"
out=$("$FASTWALLD" -c "$T/nothing.yaml" check 2>"$T/err")
check_eq "no interfaces, no bridges: accepted (exit 0)" "$?" 0
check_eq "stdout says ok, with warnings" "$out" "$T/nothing.yaml: ok, 1 static subjects (with warnings)"
check_eq "stderr: it attaches to nothing" "$(cat "$T/err")" \
	"warning: $T/nothing.yaml: no datapath.interfaces and no datapath.bridges: fastwalld attaches to no interface, no packet is enforced"
printf 'processes: {}\n' >>"$T/nothing.yaml"
"$FASTWALLD" -c "$T/nothing.yaml" check >/dev/null 2>"$T/err"
check "with process sandboxes: says only they are enforced" grep -q 'only process sandboxes are enforced' "$T/err"

printf 'datapth:\n  bpffs: /sys/fs/bpf/x\n' >"$T/top.yaml"
"$FASTWALLD" -c "$T/top.yaml" check >/dev/null 2>"$T/err"
check_eq "an unknown key outside a policy: still an error (exit 3)" "$?" 3
check_eq "naming the line" "$(cut -d: -f2 "$T/err")" 1

echo "config-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
