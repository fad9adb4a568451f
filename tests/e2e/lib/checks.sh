# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh: TAP-like reporting ("ok - ..." / "not ok - ..." per check,
# "N passed, N failed" at the end, what scripts/run-tests.sh tallies).

# TAP-like reporting for the tests.
FW_PASSED=0
FW_FAILED=0

fw_ok() {
	echo "ok - $1"
	FW_PASSED=$((FW_PASSED + 1))
}

fw_not_ok() {
	echo "not ok - $1"
	FW_FAILED=$((FW_FAILED + 1))
}

# check DESC CMD...: ok when CMD succeeds.
# A check's own output is kept out of the way and shown only on failure.
check() {
	local d=$1
	shift
	if "$@" >"$FW_TMP/check.out" 2>&1; then
		fw_ok "$d"
	else
		fw_not_ok "$d"
		sed 's/^/#   /' "$FW_TMP/check.out"
	fi
}

# check_fails DESC CMD...: ok when CMD fails.
check_fails() {
	local d=$1
	shift
	if "$@" >"$FW_TMP/check.out" 2>&1; then
		fw_not_ok "$d"
		sed 's/^/#   /' "$FW_TMP/check.out"
	else
		fw_ok "$d"
	fi
}

# fw_eventually SECONDS CMD...: CMD succeeds within SECONDS (tried every 0.1 s)
fw_eventually() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# check_eq DESC GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then fw_ok "$1"; else fw_not_ok "$1 (got '$2', want '$3')"; fi
}

# check_ge DESC GOT MIN
check_ge() {
	if [ "$2" -ge "$3" ]; then fw_ok "$1"; else fw_not_ok "$1 (got $2, want >= $3)"; fi
}

fw_summary() {
	echo "$FW_PASSED passed, $FW_FAILED failed"
	[ "$FW_FAILED" -eq 0 ]
}
