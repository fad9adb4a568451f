#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The tables in docs/ that a table in the code generates must be what it
# generates: the verdict reasons of docs/operations.md are
# `fastwall reasons --markdown`, byte for byte; the README names every
# target of `make help`. Needs no root.
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
