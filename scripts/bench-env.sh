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

# stats_on: the kernel's run-time statistics of BPF programs while a child
# holds the descriptor BPF_ENABLE_STATS returns (they cost every program
# on the machine a clock read: only for a profile pass); its pid in
# STATS_PID. stats_off ends them.
stats_on() {
	python3 -c '
import ctypes, os, signal, sys
nr = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
attr = (ctypes.c_uint32 * 4)(0)  # BPF_STATS_RUN_TIME
if nr is None or ctypes.CDLL(None, use_errno=True).syscall(nr, 32, attr, 16) < 0:
    sys.exit(1)
signal.pause()' &
	STATS_PID=$!
	sleep 0.2
	kill -0 "$STATS_PID" 2>/dev/null
}
stats_off() {
	kill "$STATS_PID" 2>/dev/null || true
	wait "$STATS_PID" 2>/dev/null || true
	STATS_PID=
}
