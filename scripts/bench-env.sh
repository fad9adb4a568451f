#!/usr/bin/env bash
# Sourced by every benchmark script: bench_env prints the line each report
# carries beside its figures (kernel, CPU model and count, load average),
# so a figure is never read without the machine it came from.
#   . scripts/bench-env.sh; bench_env [LABEL]

bench_env() {
	local model load l1 l5 l15
	model=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')
	read -r l1 l5 l15 _ </proc/loadavg
	load="$l1 $l5 $l15"
	echo "${1:+$1: }kernel $(uname -r), $(nproc) CPUs (${model:-unknown model}), load average $load (1, 5, 15 min), $(date -u +%Y-%m-%dT%H:%MZ)"
}
