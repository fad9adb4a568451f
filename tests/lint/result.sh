# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# The counting the lint tests share: result RC DESC [OUTPUT] prints ok or
# FAIL (with OUTPUT indented) and counts it; results ends with the
# "N passed, N failed" line and the status.
passed=0
failed=0
result() {
	if [ "$1" = 0 ]; then
		echo "ok   $2"
		passed=$((passed + 1))
	else
		echo "FAIL $2"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/  /'
		failed=$((failed + 1))
	fi
}

results() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
