#!/usr/bin/env bash
# Runs the whole suite against the binaries in $1 (build/ or build-san/):
# Criterion units, the BPF verdict table (in order, then shuffled), the
# pinned-map ABI, the verdict tables and the ABI's swaps again with every
# policy in the slot tries, the tests of the lint, then every end-to-end
# script.
# Prints each part's own output and ends with one line, "N passed, N
# failed, N skipped": a part that exits 77 (the automake convention: it
# can't run here, e.g. without root or an optional package) is skipped,
# not failed.
set -uo pipefail

BUILD=${1:-build}
export BUILD
cd "$(dirname "$0")/.." || exit 1

passed=0
failed=0
skipped=0
skipped_parts=()
failed_parts=()
failed_logs=() # kept for the recap at the end

# Adds the counts a part printed; a part that printed none but failed
# counts as one failure, so a crash is never silent.
tally() {
	local name=$1 rc=$2 log=$3 p f line
	if [ "$rc" -eq 77 ]; then
		skipped=$((skipped + 1))
		skipped_parts+=("$name")
		printf '>>> %s: skipped (exit 77)\n\n' "$name"
		return
	fi
	line=$(grep -E '^[[:alnum:] _-]*:? ?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')
		f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')
	else
		line=$(grep -E 'Synthesis: Tested' "$log" | tail -n 1)
		if [ -n "$line" ]; then
			p=$(grep -oE 'Passing: [0-9]+' <<<"$line" | grep -oE '[0-9]+')
			f=$(( $(grep -oE 'Failing: [0-9]+' <<<"$line" | grep -oE '[0-9]+') + \
			      $(grep -oE 'Crashing: [0-9]+' <<<"$line" | grep -oE '[0-9]+') ))
		else
			p=0
			f=0
		fi
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	[ "$f" -ne 0 ] && failed_parts+=("$name")
	printf '>>> %s: %d passed, %d failed (exit %d)\n\n' "$name" "$p" "$f" "$rc"
}

run_part() {
	local name=$1
	shift
	local log
	log=$(mktemp)
	printf '>>> %s\n' "$name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	tally "$name" "$rc" "$log"
	if [ "${#failed_parts[@]}" -ne 0 ] && [ "${failed_parts[-1]}" = "$name" ]; then
		failed_logs+=("$log")
	else
		rm -f "$log"
	fi
}

# sanitizer builds: Criterion's own leak at exit is not fastwall's
export LSAN_OPTIONS="suppressions=$PWD/tests/unit/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
run_part unit "$BUILD/tests/unit_tests" --jobs 2
run_part unit-fake "$BUILD/tests/unit_fake" --jobs 2
run_part bpf-verdicts "$BUILD/tests/bpf_verdicts"
# the table again in another order: no row may lean on the rows before it
# (the seed is printed; SHUFFLE_SEED=N repeats a run)
run_part bpf-verdicts-shuffled "$BUILD/tests/bpf_verdicts" --shuffle "${SHUFFLE_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
run_part bpf-cgroup-verdicts "$BUILD/tests/bpf_cgroup_verdicts"
run_part abi-migrate "$BUILD/tests/abi_migrate"
# the same with every policy in range tables (no small sets), then in
# the slot tries: all three rule forms are what the programs read
run_part bpf-verdicts-ranges env FASTWALL_RULE_SET_MAX=0 "$BUILD/tests/bpf_verdicts"
run_part bpf-cgroup-verdicts-ranges env FASTWALL_RULE_SET_MAX=0 "$BUILD/tests/bpf_cgroup_verdicts"
run_part abi-migrate-ranges env FASTWALL_RULE_SET_MAX=0 "$BUILD/tests/abi_migrate"
TRIES=(FASTWALL_RULE_SET_MAX=0 FASTWALL_RULE_RANGE_MAX=0)
run_part bpf-verdicts-tries env "${TRIES[@]}" "$BUILD/tests/bpf_verdicts"
run_part bpf-cgroup-verdicts-tries env "${TRIES[@]}" "$BUILD/tests/bpf_cgroup_verdicts"
run_part abi-migrate-tries env "${TRIES[@]}" "$BUILD/tests/abi_migrate"
run_part lint bash tests/lint/check-layers.sh
run_part lint-calls env BUILD="$BUILD" bash tests/lint/check-calls.sh
for t in tests/e2e/*.sh; do
	[ -e "$t" ] || continue
	case $t in */lib.sh) continue ;; esac
	run_part "e2e/$(basename "$t" .sh)" bash "$t"
done

if [ "${#failed_parts[@]}" -ne 0 ]; then
	# a long run's log is read from its end: repeat there what failed
	for i in "${!failed_parts[@]}"; do
		echo "--- ${failed_parts[$i]}: its failed checks, then its last lines"
		grep -E '^not ok|^fatal|^\[FAIL\]|Assertion|ERROR' "${failed_logs[$i]}" | head -n 20 || true
		echo "  ..."
		tail -n 15 "${failed_logs[$i]}"
		rm -f "${failed_logs[$i]}"
	done
	echo "failed parts: ${failed_parts[*]}"
fi
[ "${#skipped_parts[@]}" -ne 0 ] && echo "skipped parts: ${skipped_parts[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
