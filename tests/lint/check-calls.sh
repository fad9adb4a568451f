#!/usr/bin/env bash
# Tests scripts/check-calls.sh: on small folders of C files compiled in a
# temporary directory, the check must pass where calls go one way and
# fail, naming both files, where two files call each other directly or
# through a third; then it must pass on the repository's data path (from
# the objects in BUILD, default build/). Prints "N passed, N failed".
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
CHECK=$REPO/scripts/check-calls.sh
BUILD=${BUILD:-build}
CC=${CC:-cc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/lint/result.sh
. "$REPO/tests/lint/result.sh"

# tree NAME FILE:CALLS...: a folder lib/ under $TMP/NAME with one .c file
# per argument, each defining FILE_fn and calling the FILE_fn of every
# file in CALLS (comma-separated), compiled into build/lib/.
tree() {
	local root=$TMP/$1 spec f calls c
	shift
	mkdir -p "$root/lib" "$root/build/lib"
	for spec in "$@"; do
		f=${spec%%:*}
		calls=${spec#*:}
		{
			for c in ${calls//,/ }; do
				printf 'int %s_fn(void);\n' "$c"
			done
			printf 'int %s_fn(void);\nint %s_fn(void)\n{\n\treturn 0' "$f" "$f"
			for c in ${calls//,/ }; do
				printf ' + %s_fn()' "$c"
			done
			printf ';\n}\n'
		} >"$root/lib/$f.c"
		"$CC" -c "$root/lib/$f.c" -o "$root/build/lib/$f.o" || return 1
	done
	echo "$root"
}

# expect_fail DESC TREE WANT...: the check fails and prints every WANT
expect_fail() {
	local desc=$1 root=$2 out rc w missing=""
	shift 2
	out=$(cd "$root" && "$CHECK" build lib 2>&1)
	rc=$?
	for w in "$@"; do
		grep -qF -- "$w" <<<"$out" || missing+=" '$w'"
	done
	if [ "$rc" -ne 0 ] && [ -z "$missing" ]; then
		result 0 "$desc"
	else
		result 1 "$desc" "exit $rc, missing:$missing
$out"
	fi
}

t=$(tree oneway a:b,scan b:scan scan:)
out=$(cd "$t" && "$CHECK" build lib 2>&1)
result $? "calls that go one way, down to a file that calls none, pass" "$out"

t=$(tree twoway a:b,scan b:a,scan scan:)
expect_fail "two files that call each other fail, both named" "$t" \
	"lib: a.c calls b.c, and b.c calls back into a.c" \
	"lib: b.c calls a.c, and a.c calls back into b.c"

t=$(tree circle a:b b:c c:a d:a)
expect_fail "a circle through a third file fails" "$t" \
	"lib: a.c calls b.c, and b.c calls back into a.c" \
	"lib: c.c calls a.c, and a.c calls back into c.c"
out=$(cd "$t" && "$CHECK" build lib 2>&1)
if grep -q "d.c calls" <<<"$out"; then
	result 1 "a file that only calls into a circle is not named" "$out"
else
	result 0 "a file that only calls into a circle is not named"
fi

t=$(tree missing a:b b:)
rm "$t/build/lib/b.o"
expect_fail "a missing object fails" "$t" "build/lib/b.o: no such object"

if [ -d "$BUILD/user/lib/datapath" ]; then
	out=$("$CHECK" "$BUILD" user/lib/datapath 2>&1)
	result $? "the data path's files call each other one way" "$out"
else
	result 1 "the data path's files call each other one way" "no $BUILD/user/lib/datapath: build first"
fi

results
