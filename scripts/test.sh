#!/usr/bin/env bash
# Install dependencies, build, and run every test suite:
#   build/       all suites (unit, cli, e2e, gpu, accuracy, fuzz replay, ...)
#   build-asan/  suites unit, cli, security and faults under AddressSanitizer + UBSan
# Keeps going after a failure so one run reports everything; exits non-zero
# when any build or test failed. The last line is "N passed, N failed".
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/install-deps.sh --tests

# Sanitizer findings must fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

passed=0
failed=0
skipped=0

# count_results BUILD_DIR: add the results in BUILD_DIR's testlog.json to the
# totals. Expected failures count as passed; a missing log counts as one
# failure (meson test could not run).
count_results() {
	local log=$1/meson-logs/testlog.json ok bad skip
	if [[ ! -s $log ]]; then
		echo "test.sh: $1: no test log (meson test did not run)" >&2
		failed=$((failed + 1))
		return
	fi
	ok=$(jq -s '[.[] | select(.result == "OK" or .result == "EXPECTEDFAIL")] | length' "$log")
	skip=$(jq -s '[.[] | select(.result == "SKIP")] | length' "$log")
	bad=$(jq -s '[.[] | select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP")] | length' "$log")
	passed=$((passed + ok))
	failed=$((failed + bad))
	skipped=$((skipped + skip))
}

# run_tests BUILD_DIR [MESON_TEST_OPTION...]
run_tests() {
	local dir=$1
	shift
	rm -f "$dir/meson-logs/testlog.json"
	meson test -C "$dir" --print-errorlogs "$@" || true
	count_results "$dir"
}

echo "== build (all suites)"
if ./scripts/build.sh build; then
	run_tests build
else
	echo "test.sh: build failed" >&2
	failed=$((failed + 1))
fi

echo "== build-asan (unit, cli, security, faults under ASan+UBSan)"
if ./scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false; then
	run_tests build-asan --suite unit --suite cli --suite security --suite faults
else
	echo "test.sh: sanitizer build failed" >&2
	failed=$((failed + 1))
fi

if ((skipped > 0)); then
	echo "($skipped skipped)"
fi
echo "$passed passed, $failed failed"
((failed == 0))
