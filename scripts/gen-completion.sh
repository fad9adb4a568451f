#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Writes the bash completions of fastwall and fastwalld from the binaries'
# own --help and each command's --help (their command tables print them),
# into the
# templates under deploy/bash-completion/. A command added to either table
# is completed by the next build without touching the templates.
# usage: gen-completion.sh FASTWALL FASTWALLD OUTDIR
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 FASTWALL FASTWALLD OUTDIR" >&2; exit 2; }
fastwall=$1
fastwalld=$2
out=$3
tpl=$(cd "$(dirname "$0")/../deploy/bash-completion" && pwd)

# the long options of the "options:" part of a help text
long_opts() { awk '/^options:/ { f = 1; next } f' | grep -oE -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ' | sed 's/ $//'; }

# the case arms of each command's own options, from "PROG CMD --help"
cmd_opts() {
	local prog=$1 c sub o
	shift
	for c in "$@"; do
		sub=$("$prog" "$c" --help 2>&1 || true)
		# its own usage names it on the first line
		case ${sub%%$'\n'*} in "usage: ${prog##*/} "*"$c"*) ;; *) continue ;; esac
		o=$({
			printf '%s\n' "$sub" | grep -oE -- '(^|[ [])--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+'
			echo --help
		} | sort -u | tr '\n' ' ' | sed 's/ $//')
		printf '\t%s) echo "%s" ;;\n' "$c" "$o"
	done
}

help=$("$fastwall" --help)
commands=$(printf '%s\n' "$help" | awk '/^commands:/ { f = 1; next } f && /^$/ { exit } f { print $1 }' | tr '\n' ' ' | sed 's/ $//')
[ -n "$commands" ] || { echo "gen-completion: no commands in '$fastwall --help'" >&2; exit 1; }
options=$(printf '%s\n' "$help" | long_opts)
# shellcheck disable=SC2086 # one word a command
cmdopts=$(cmd_opts "$fastwall" $commands)
t=$(<"$tpl/fastwall.in")
t=${t//@COMMANDS@/$commands}
t=${t//@OPTIONS@/$options}
t=${t//@CMDOPTS@/$cmdopts}
mkdir -p "$out"
printf '%s\n' "$t" >"$out/fastwall.tmp"
mv "$out/fastwall.tmp" "$out/fastwall"

help=$("$fastwalld" --help)
# "usage: fastwalld [OPTIONS] [run] ...", "       fastwalld [OPTIONS] check ..."
commands=$(printf '%s\n' "$help" | sed -nE 's/^(usage:)? +fastwalld (\[OPTIONS\] )?\[?([a-z][a-z0-9-]*).*/\3/p' | tr '\n' ' ' | sed 's/ $//')
[ -n "$commands" ] || { echo "gen-completion: no commands in '$fastwalld --help'" >&2; exit 1; }
options=$(printf '%s\n' "$help" | long_opts)
levels=$(printf '%s\n' "$help" | sed -nE 's/.*--log-level LVL +([a-z, ]+) \(.*/\1/p' | tr -d ',')
[ -n "$levels" ] || { echo "gen-completion: no log levels in '$fastwalld --help'" >&2; exit 1; }
# shellcheck disable=SC2086 # one word a command
cmdopts=$(cmd_opts "$fastwalld" $commands)
t=$(<"$tpl/fastwalld.in")
t=${t//@COMMANDS@/$commands}
t=${t//@OPTIONS@/$options}
t=${t//@LEVELS@/$levels}
t=${t//@CMDOPTS@/$cmdopts}
printf '%s\n' "$t" >"$out/fastwalld.tmp"
mv "$out/fastwalld.tmp" "$out/fastwalld"
