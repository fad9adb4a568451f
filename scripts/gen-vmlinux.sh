#!/usr/bin/env bash
# Regenerates vmlinux/<arch>/vmlinux.h from the running kernel's BTF.
# The header is committed; CO-RE relocations make one build run on every
# supported kernel, so regenerate only to pick up new type definitions.
set -euo pipefail
arch=${1:-x86}
out="$(dirname "$0")/../vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(wc -l < "$out") lines) from $(uname -r)"
