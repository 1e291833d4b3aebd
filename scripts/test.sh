#!/usr/bin/env bash
# Install dependencies, build, and run every test suite:
#   tests/lint   the bats lint, before anything is built (also suite "lint")
#   build/       all suites (unit, cli, e2e, gpu, accuracy, fuzz replay,
#                lint, mutation, ...)
#   build-asan/  suites unit, cli, security, faults and fuzz (the corpora
#                and the bad fixtures replayed) under AddressSanitizer + UBSan
# Keeps going after a failure so one run reports everything; exits non-zero
# when any build or test failed. The closing summary (scripts/test-summary.py)
# lists every known failure and every skip, whole tests and TAP subtests,
# with its reason; the last line is "N passed, N failed" followed by
# ", N skipped" when anything was skipped.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/install-deps.sh --tests
# the speedscope app for the browser suite (npm; skipped, saying so, without it)
./scripts/fetch-speedscope.sh >/dev/null

# Sanitizer findings must fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

# failures outside meson test (a build, the lint before the build)
failed=0
ran=()

# run_tests BUILD_DIR [MESON_TEST_OPTION...]
run_tests() {
	local dir=$1
	shift
	rm -f "$dir/meson-logs/testlog.json" "$dir/meson-logs/testlog.junit.xml"
	meson test -C "$dir" --print-errorlogs "$@" || true
	ran+=("$dir")
}

# The lint needs no build: a bats check that cannot fail is reported even
# when the build breaks. (It runs again as the meson test lint-bats.)
echo "== lint (tests/lint/lint_bats.py)"
if ! python3 tests/lint/lint_bats.py tests; then
	echo "test.sh: bats lint failed" >&2
	failed=$((failed + 1))
fi

echo "== build (all suites)"
if ./scripts/build.sh build; then
	run_tests build
else
	echo "test.sh: build failed" >&2
	failed=$((failed + 1))
fi

echo "== build-asan (unit, cli, security, faults, fuzz under ASan+UBSan)"
if ./scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false; then
	run_tests build-asan --suite unit --suite cli --suite security --suite faults --suite fuzz
else
	echo "test.sh: sanitizer build failed" >&2
	failed=$((failed + 1))
fi

exec python3 scripts/test-summary.py --failed "$failed" "${ran[@]}"
