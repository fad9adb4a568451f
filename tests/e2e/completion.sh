#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The bash completions of fastwall and fastwalld, generated from the
# binaries as the build does (scripts/gen-completion.sh), complete every
# command and long option each binary's --help lists, each command's own
# options (from its --help), log levels, and the command after
# `fastwall run --`.
# The commands expected are read from --help here, independently of the
# generator. Needs no root and no bash-completion package.
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
for b in fastwall fastwalld; do
	[ -x "$BUILD/$b" ] || { echo "fatal: $BUILD/$b missing: run make all" >&2; exit 1; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$ROOT/scripts/gen-completion.sh" "$BUILD/fastwall" "$BUILD/fastwalld" "$T" ||
	{ echo "fatal: gen-completion.sh failed" >&2; exit 1; }
# shellcheck source=/dev/null
. "$T/fastwall"
# shellcheck source=/dev/null
. "$T/fastwalld"

# completes WORD... WANT: the completion of the command line WORD...
# (the last word being completed) offers WANT
completes() {
	local want=${*: -1} fn
	local -a words=("${@:1:$#-1}")
	COMP_WORDS=("${words[@]}")
	COMP_CWORD=$((${#words[@]} - 1))
	COMPREPLY=()
	fn=$(complete -p "${words[0]}" | sed -E 's/.*-F ([^ ]+) .*/\1/')
	"$fn" "${words[0]}" "${words[-1]}" "${words[-2]:-}"
	local w
	for w in "${COMPREPLY[@]}"; do
		[ "$w" = "$want" ] && return 0
	done
	return 1
}

check() {
	local d=$1
	shift
	if completes "$@"; then ok "$d"; else not_ok "$d (offered: ${COMPREPLY[*]})"; fi
}

help=$("$BUILD/fastwall" --help)
cmds=$(printf '%s\n' "$help" | awk '/^commands:/ { f = 1; next } f && NF == 0 { exit } f { print $1 }')
[ -n "$cmds" ] || not_ok "fastwall --help lists commands"
for c in $cmds; do
	check "fastwall <TAB> offers $c" fastwall "" "$c"
	check "fastwall ${c:0:2}<TAB> offers $c" fastwall "${c:0:2}" "$c"
	check "fastwall --bpffs DIR ${c:0:2}<TAB> offers $c" fastwall --bpffs /tmp "${c:0:2}" "$c"
done
for o in $(printf '%s\n' "$help" | awk '/^options:/ { f = 1; next } f' | grep -oE -- '--[a-z][a-z-]*'); do
	check "fastwall ${o:0:4}<TAB> offers $o" fastwall "${o:0:4}" "$o"
done
for o in $("$BUILD/fastwall" run --help | grep -oE -- '^  --[a-z-]+'); do
	check "fastwall run ${o:0:4}<TAB> offers $o" fastwall run "${o:0:4}" "$o"
done
check "fastwall run -- ba<TAB> offers bash" fastwall run --allow 192.0.2.1 -- ba bash
# after its word, each command's own options, as its --help lists them
for c in $cmds; do
	for o in $("$BUILD/fastwall" "$c" --help | grep -oE -- '(^|[ [])--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+' | sort -u); do
		check "fastwall $c ${o:0:4}<TAB> offers $o" fastwall "$c" "${o:0:4}" "$o"
	done
done

dhelp=$("$BUILD/fastwalld" --help)
dcmds=$(printf '%s\n' "$dhelp" | awk '$1 == "usage:" { $1 = "" } $1 == "fastwalld" {
	w = ($2 == "[OPTIONS]") ? $3 : $2; gsub(/[][]/, "", w); print w }')
[ -n "$dcmds" ] || not_ok "fastwalld --help lists commands"
for c in $dcmds; do
	check "fastwalld <TAB> offers $c" fastwalld "" "$c"
	check "fastwalld -c FILE ${c:0:2}<TAB> offers $c" fastwalld -c /etc/x.yaml "${c:0:2}" "$c"
done
for o in $(printf '%s\n' "$dhelp" | awk '/^options:/ { f = 1; next } f' | grep -oE -- '--[a-z][a-z-]*'); do
	check "fastwalld ${o:0:4}<TAB> offers $o" fastwalld "${o:0:4}" "$o"
done
for l in error warn info debug; do
	check "fastwalld --log-level <TAB> offers $l" fastwalld --log-level "" "$l"
done
check "fastwalld detach --p<TAB> offers --purge" fastwalld detach --p --purge
for c in $dcmds; do
	for o in $("$BUILD/fastwalld" "$c" --help | grep -oE -- '(^|[ [])--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+' | sort -u); do
		check "fastwalld $c ${o:0:4}<TAB> offers $o" fastwalld "$c" "${o:0:4}" "$o"
	done
done
check "fastwalld config-keys --s<TAB> offers --schema" fastwalld config-keys --s --schema

if command -v shellcheck >/dev/null; then
	if shellcheck -s bash "$T/fastwall" "$T/fastwalld" >"$T/sc.out" 2>&1; then
		ok "the generated completions pass shellcheck"
	else
		not_ok "the generated completions pass shellcheck"
		sed 's/^/#   /' "$T/sc.out"
	fi
fi

echo "completion: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
