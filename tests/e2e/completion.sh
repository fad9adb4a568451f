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

# options before the word, with their values, wherever they stand
check "fastwall -o json mon<TAB> offers monitor" fastwall -o json mon monitor
check "fastwall -c FILE -o json ex<TAB> offers explain" fastwall -c /etc/x.yaml -o json ex explain
check "fastwall -o json status --a<TAB> offers --all" fastwall -o json status --a --all
check "fastwalld -o json ch<TAB> offers check" fastwalld -o json ch check
# the values of -o, --reason and --kind
check "fastwall -o <TAB> offers json" fastwall -o "" json
check "fastwall status -o <TAB> offers json" fastwall status -o "" json
check "fastwall monitor -o t<TAB> offers text" fastwall monitor -o t text
check "fastwalld --log-format j<TAB> offers json" fastwalld --log-format j json
for r in $("$BUILD/fastwall" reasons | awk 'NR > 1 { print $3 }') dns-denied-name l7-name; do
	check "fastwall monitor --reason ${r:0:4}<TAB> offers $r" fastwall monitor --reason "${r:0:4}" "$r"
done
check "fastwall monitor -r def<TAB> offers default-deny" fastwall monitor -r def default-deny
for k in drop dns allow l7; do
	check "fastwall monitor --kind <TAB> offers $k" fastwall monitor --kind "" "$k"
done
check "fastwall monitor --kind drop,d<TAB> offers drop,dns" fastwall monitor --kind drop,d drop,dns

# zsh and fish: generated beside the bash ones, each naming every command
# and completing the same values; checked by the shell itself where it is
for f in _fastwall _fastwalld fastwall.fish fastwalld.fish; do
	if [ -s "$T/$f" ]; then ok "$f generated"; else not_ok "$f generated"; fi
done
for c in $cmds; do
	if grep -q "^	$c) echo " "$T/_fastwall" && grep -q "__fish_seen_subcommand_from $c\"" "$T/fastwall.fish"; then
		ok "zsh and fish complete fastwall $c's options"
	else
		not_ok "zsh and fish complete fastwall $c's options"
	fi
done
if grep -q 'default-deny' "$T/_fastwall" && grep -q 'dns-denied-name' "$T/fastwall.fish"; then
	ok "zsh and fish offer the reasons"
else
	not_ok "zsh and fish offer the reasons"
fi
if command -v zsh >/dev/null; then
	for f in _fastwall _fastwalld; do
		if zsh -n "$T/$f"; then ok "zsh -n $f"; else not_ok "zsh -n $f"; fi
	done
fi
if command -v fish >/dev/null; then
	for f in fastwall.fish fastwalld.fish; do
		if fish -n "$T/$f"; then ok "fish -n $f"; else not_ok "fish -n $f"; fi
	done
	# what a user at a fish prompt gets (complete -C runs the completions)
	fc() { fish -c "source '$T/fastwall.fish'; complete -C '$1'" 2>&1 | cut -f1 | tr '\n' ' '; }
	if [ "$(fc 'fastwall -o ')" = "json text " ]; then
		ok "fish: fastwall -o <TAB> offers json and text"
	else
		not_ok "fish: fastwall -o <TAB> offers json and text"
	fi
	case " $(fc 'fastwall ') " in
	*" monitor "*" status "*) ok "fish: fastwall <TAB> offers the commands" ;;
	*) not_ok "fish: fastwall <TAB> offers the commands" ;;
	esac
	case " $(fc 'fastwall monitor --reason l7-') " in
	*" l7-full "*) ok "fish: monitor --reason l7-<TAB> offers l7-full" ;;
	*) not_ok "fish: monitor --reason l7-<TAB> offers l7-full" ;;
	esac
fi

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
