#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The tables in docs/ that a table in the code generates must be what it
# generates: the verdict reasons of docs/operations.md are
# `fastwall reasons --markdown`, byte for byte; the hand-kept key tables
# of docs/config.md (overlay, subjects, policy, rules) name the keys of
# the JSON Schema scripts/gen-schema.py writes; docs/config.md's scalar
# tables are fastwalld config-keys --doc (a unit test holds it too); the
# README names every target of `make help`. Needs no root.
# shellcheck disable=SC2016 # backquotes of Markdown headings, awk and python in single quotes
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
FASTWALL=$BUILD/fastwall
passed=0
failed=0

[ -x "$FASTWALL" ] || { echo "fatal: $FASTWALL missing: run make all" >&2; exit 1; }

# The table under the heading $2 of file $1: its lines starting with '|'.
doc_table() {
	awk -v h="$2" '$0 == h { f = 1; next } f && /^## / { exit } f && /^\|/ { print }' "$1"
}

check_table() {
	local what=$1 file=$2 heading=$3
	shift 3
	local want got
	want=$(doc_table "$ROOT/$file" "$heading")
	got=$("$@")
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		echo "ok   $what"
		passed=$((passed + 1))
	else
		echo "FAIL $what: $file ('$heading') differs from '$*' (< docs, > generated):"
		diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | sed 's/^/     /'
		failed=$((failed + 1))
	fi
}

check_table "verdict reasons" docs/operations.md "## Verdict reasons" \
	"$FASTWALL" reasons --markdown

# docs/config.md's key tables (with their reload column) are what
# config-keys generates from the key tables, byte for byte
if "$BUILD/fastwalld" config-keys --doc "$ROOT/docs/config.md" | cmp -s - "$ROOT/docs/config.md"; then
	echo "ok   config.md key tables are fastwalld config-keys --doc"
	passed=$((passed + 1))
else
	echo "FAIL config.md key tables differ from fastwalld config-keys --doc (< docs, > generated):"
	diff "$ROOT/docs/config.md" <("$BUILD/fastwalld" config-keys --doc "$ROOT/docs/config.md") |
		sed 's/^/     /'
	failed=$((failed + 1))
fi

# The key tables config-keys does not generate (overlay, subjects[], the
# policy and its rules) name exactly the keys of the JSON Schema, which
# tests/e2e/schema.sh holds to what fastwalld accepts.
# The keys of table $3 (1: the first) under the heading $2 of file $1,
# up to the next heading of any level.
sub_table_keys() {
	awk -v h="$2" -v n="$3" '$0 == h { f = 1; next } f && /^#/ { exit }
		f && /^\|/ { if (!in_t) { t++; in_t = 1 } if (t == n) print; next }
		{ in_t = 0 }' "$1" | sed -n 's/^| `\([A-Za-z0-9_]*\)` |.*/\1/p' | sort
}

keys_check() {
	local what=$1 heading=$2 def=$3 want got
	want=$(sub_table_keys "$ROOT/docs/config.md" "$heading" "${5:-1}")
	got=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
d = s["$defs"][sys.argv[2]] if sys.argv[2] in s.get("$defs", {}) else s["properties"][sys.argv[2]]
print("\n".join(sorted(d["properties"])))' "$SCHEMA_DIR/$4" "$def")
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		echo "ok   config.md $what names the schema's keys"
		passed=$((passed + 1))
	else
		echo "FAIL config.md $what differs from the schema's keys (< docs, > schema):"
		diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | sed 's/^/     /'
		failed=$((failed + 1))
	fi
}
SCHEMA_DIR=$(mktemp -d)
trap 'rm -rf "$SCHEMA_DIR"' EXIT
if python3 "$ROOT/scripts/gen-schema.py" "$BUILD/fastwalld" "$SCHEMA_DIR" >/dev/null; then
	keys_check "overlay" '### `overlay`' overlay fastwalld-config.schema.json
	keys_check "subjects[]" '### `subjects[]`' subject fastwalld-config.schema.json
	keys_check "subjects[].policy" '### `subjects[].policy`' policy fastwalld-config.schema.json
	keys_check "subjects[].policy rules" '### `subjects[].policy`' rule fastwalld-config.schema.json 2
else
	echo "FAIL scripts/gen-schema.py"
	failed=$((failed + 1))
fi

# Every target `make help` lists has its `make TARGET` in the README
# (the opening commands or the target table).
missing=""
for t in $(make -s -C "$ROOT" --no-print-directory help | awk '{ print $1 }'); do
	grep -qF "\`make $t\`" "$ROOT/README.md" || grep -qE "^make $t( |\$)" "$ROOT/README.md" ||
		missing="$missing $t"
done
if [ -z "$missing" ]; then
	echo "ok   README lists every make help target"
	passed=$((passed + 1))
else
	echo "FAIL README lacks the make help targets:$missing"
	failed=$((failed + 1))
fi

echo "docs-tables: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
