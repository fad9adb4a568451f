#!/usr/bin/env bash
# Checks that the files of a folder call each other one way only: from
# the objects the build made of FOLDER's .c files, it reads with nm what
# each defines and what it calls from outside, and fails on any circle of
# calls between files (A calls B and B calls A, or longer), printing it.
# Usage: check-calls.sh BUILD FOLDER... (FOLDER as in the tree:
# user/lib/datapath); exits 1 on a circle or a missing object, else 0.
# With -g it prints the call graph (caller -> callee) instead.
set -euo pipefail

graph=0
if [ "${1:-}" = -g ]; then
	graph=1
	shift
fi
if [ $# -lt 2 ]; then
	echo "usage: check-calls.sh [-g] BUILD FOLDER..." >&2
	exit 2
fi
build=$1
shift

bad=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for folder in "$@"; do
	declare -A owner=()
	declare -A edges=()
	objs=()
	for src in "$folder"/*.c; do
		[ -e "$src" ] || continue
		obj=$build/${src%.c}.o
		if [ ! -e "$obj" ]; then
			echo "check-calls: $obj: no such object (build first)" >&2
			exit 1
		fi
		objs+=("$obj")
		while read -r sym; do
			owner[$sym]=${src##*/}
		done < <(nm --defined-only -g --format=posix "$obj" | awk '$2 ~ /^[TDBRVW]$/ {print $1}')
	done
	for obj in "${objs[@]}"; do
		from=${obj##*/}
		from=${from%.o}.c
		while read -r sym; do
			to=${owner[$sym]:-}
			if [ -n "$to" ] && [ "$to" != "$from" ]; then
				edges["$from $to"]=1
			fi
		done < <(nm -u --format=posix "$obj" | awk '{print $1}')
	done
	if [ "$graph" = 1 ]; then
		for e in "${!edges[@]}"; do
			echo "$folder: ${e% *} -> ${e#* }"
		done | sort
		unset owner edges
		continue
	fi
	# an edge a -> b is on a circle when b reaches a again
	declare -A reach=()
	for e in "${!edges[@]}"; do
		a=${e% *}
		[ -n "${reach[$a]+set}" ] && continue
		seen=" $a "
		todo=("$a")
		while [ ${#todo[@]} -gt 0 ]; do
			f=${todo[0]}
			todo=("${todo[@]:1}")
			for e2 in "${!edges[@]}"; do
				if [ "${e2% *}" = "$f" ] && [[ $seen != *" ${e2#* } "* ]]; then
					seen+="${e2#* } "
					todo+=("${e2#* }")
				fi
			done
		done
		reach[$a]=$seen
	done
	for e in "${!edges[@]}"; do
		a=${e% *}
		b=${e#* }
		if [[ ${reach[$b]:-} == *" $a "* ]]; then
			echo "$folder: $a calls $b, and $b calls back into $a (directly or through others)"
		fi
	done | sort >"$tmp"
	if [ -s "$tmp" ]; then
		cat "$tmp"
		bad=$((bad + $(wc -l <"$tmp")))
	fi
	unset owner edges reach
done
if [ "$bad" -gt 0 ]; then
	echo "check-calls: files that call each other in a circle (split out what both need into a file lower down)" >&2
	exit 1
fi
echo "check-calls: ok"
