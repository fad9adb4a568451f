#!/usr/bin/env bash
# Checks that every quoted include in userspace points down the layer
# order, or stays inside its own folder. Usage: check-layers.sh [ROOT]
# (ROOT defaults to the repository). Prints file:line and the rule each
# bad include breaks; exits 1 when there is one, 0 when there is none.
set -euo pipefail

# The layer order, lowest first. A folder may include its own headers and
# those of any folder on a lower line; folders on the same line are
# siblings and may not include each other. This table is the one place the
# order lives (docs quote it); a new folder must be given a line here.
LAYERS='
common
policy gateway l7
datapath
subjects
dns protocol
config
daemon cli
'
# The shared ABI headers ("fastwall/...", include/) sit under every layer:
# both the BPF programs and userspace compile them, and they include
# nothing of ours. The generated skeleton ("egress.skel.h") is the loaded
# programs' interface: only the data path and the layers above it see it.
ABI_FROM=common
SKEL_FROM=datapath

ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT"

declare -A rank=()
r=0
while read -r line; do
	[ -n "$line" ] || continue
	for f in $line; do
		rank[$f]=$r
	done
	r=$((r + 1))
done <<<"$LAYERS"

bad=0
report() {
	printf '%s\n' "$1"
	bad=$((bad + 1))
}

# the folders that hold code, each with its layer name
folders=()
for d in user/lib/*/ user/daemon/ user/cli/; do
	[ -d "$d" ] || continue
	folders+=("${d%/}")
done

for dir in "${folders[@]}"; do
	name=${dir##*/}
	if [ -z "${rank[$name]+set}" ]; then
		report "$dir: folder '$name' is not in the layer table (scripts/check-layers.sh)"
		continue
	fi
	from=${rank[$name]}
	for file in "$dir"/*.[ch]; do
		[ -e "$file" ] || continue
		while IFS=: read -r lineno target; do
			case $target in
			fastwall/*)
				if [ "$from" -lt "${rank[$ABI_FROM]}" ]; then
					report "$file:$lineno: \"$target\": $name may not include the ABI headers (allowed from $ABI_FROM up)"
				fi
				continue
				;;
			*.skel.h)
				if [ "$from" -lt "${rank[$SKEL_FROM]}" ]; then
					report "$file:$lineno: \"$target\": $name may not include the BPF skeleton (allowed from $SKEL_FROM up)"
				fi
				continue
				;;
			*/*) ;;
			*)
				# a header next to the file (user/daemon/http.h)
				if [ ! -e "$dir/$target" ]; then
					report "$file:$lineno: \"$target\": not in $dir; write the include with its folder"
				fi
				continue
				;;
			esac
			to=${target%%/*}
			if [ "$to" = "$name" ]; then
				continue
			fi
			if [ -z "${rank[$to]+set}" ]; then
				report "$file:$lineno: \"$target\": folder '$to' is not in the layer table"
			elif [ "${rank[$to]}" -gt "$from" ]; then
				report "$file:$lineno: \"$target\": upward include ($name may not include $to, a higher layer)"
			elif [ "${rank[$to]}" -eq "$from" ]; then
				report "$file:$lineno: \"$target\": sideways include ($name and $to are siblings)"
			fi
		done < <(awk '/^[ \t]*#[ \t]*include[ \t]*"/ {
			s = $0; sub(/^[^"]*"/, "", s); sub(/".*/, "", s); print FNR ":" s }' "$file")
	done
done

if [ "$bad" -ne 0 ]; then
	echo "check-layers: $bad include(s) break the layer order" >&2
	exit 1
fi
echo "check-layers: ok"
