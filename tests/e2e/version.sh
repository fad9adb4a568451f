#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --version of both binaries: "NAME VERSION (map ABI N)", the version
# being `git describe --always --dirty` when built in a git tree and N the
# FW_ABI_VERSION of include/fastwall/abi.h; outside a git tree the build
# says "unknown", or VERSION=... when given. Needs no root.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
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
check_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi; }

for b in fastwalld fastwall; do
	[ -x "$BUILD/$b" ] || { echo "fatal: $BUILD/$b missing: run make all" >&2; exit 1; }
done
ABI=$(sed -n 's/^#define FW_ABI_VERSION \([0-9]*\).*/\1/p' "$ROOT/include/fastwall/abi.h")
BUILT=$(sed -n 's/^#define FW_VERSION "\(.*\)"$/\1/p' "$BUILD/gen/fastwall/version.h")
D=$("$BUILD/fastwalld" --version)
C=$("$BUILD/fastwall" --version)
check_eq "fastwalld --version" "$D" "fastwalld $BUILT (map ABI $ABI)"
check_eq "fastwall --version" "$C" "fastwall $BUILT (map ABI $ABI)"
check_eq "fastwalld --version exits 0" "$("$BUILD/fastwalld" --version >/dev/null; echo $?)" 0
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	# git describe of the commit built: it names a commit of this tree
	# (HEAD's when nothing was committed since the build)
	if git -C "$ROOT" rev-parse -q --verify "${BUILT%-dirty}^{commit}" >/dev/null; then
		ok "the version is git describe's, of a commit of this tree (${BUILT%-dirty})"
	else
		not_ok "the version '$BUILT' names no commit of this tree"
	fi
else
	echo "# not a git tree: the describe is not compared"
fi

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
GIT_DIR=/nonexistent make -s -C "$ROOT" BUILD="$T" "$T/gen/fastwall/version.h" >/dev/null 2>&1
check_eq "outside a git tree: unknown" "$(cat "$T/gen/fastwall/version.h" 2>/dev/null)" \
	'#define FW_VERSION "unknown"'
make -s -C "$ROOT" BUILD="$T" VERSION=1.2.3 "$T/gen/fastwall/version.h" >/dev/null 2>&1
check_eq "VERSION=1.2.3 wins" "$(cat "$T/gen/fastwall/version.h" 2>/dev/null)" '#define FW_VERSION "1.2.3"'
touch -d '2001-01-01' "$T/gen/fastwall/version.h"
make -s -C "$ROOT" BUILD="$T" VERSION=1.2.3 "$T/gen/fastwall/version.h" >/dev/null 2>&1
check_eq "the same version again: the header is not rewritten" \
	"$(date -r "$T/gen/fastwall/version.h" +%Y)" 2001

echo "version: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
