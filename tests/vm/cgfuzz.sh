#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The process sandboxes' fuzzer (tests/e2e/cgfuzz.sh) in a kernel-matrix
# guest, as the command scripts/vmtest runs instead of tests/vm/run.sh:
#
#   VMTEST_CMD=$PWD/tests/vm/cgfuzz.sh VMTEST_DOCS= KERNELS=6.1 make vmtest
#
# On that kernel: the oracle's own check, the seeds (as nobody and as
# root), then fuzzing for 60 s, or N seconds given on the guest's kernel
# command line (VMTEST_APPEND=vmtest.cgfuzz_seconds=N). Nothing there
# needs python. The guest's disk is a throwaway overlay: a violating
# input is printed (its operations' bytes) rather than kept.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
secs=60
read -r cmdline </proc/cmdline
for w in $cmdline; do
	case $w in vmtest.cgfuzz_seconds=*) secs=${w#*=} ;; esac
done
export BUILD=${VMTEST_BUILD:-$ROOT/build} CGFUZZ_SECONDS=$secs CGFUZZ_CRASHES=/tmp/cgfuzz-crashes
exec bash "$ROOT/tests/e2e/cgfuzz.sh"
