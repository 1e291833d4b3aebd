#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 60) in a clang
# ASan+UBSan build (build-fuzz/), one after the other.
#
#   tests/fuzz/run-fuzzers.sh [SECONDS] [TARGET...]     targets: trace timeline config findings kineto native job
#
# Each target starts from its seed corpus (tests/fuzz/corpus/TARGET, plus
# every file of tests/data/bad) and grows a working corpus in
# build-fuzz/corpus/TARGET, kept between runs (the seed corpora in git stay
# small: add a new input there by hand when it is worth replaying in every
# test run).  A crash, leak, timeout or UBSan report stops that target and
# leaves the input in build-fuzz/artifacts/TARGET/; the script then exits 1.
# The last lines of each run (execs, coverage, corpus size) are printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(trace timeline config findings kineto native job)
dir=build-fuzz
if [[ ! -d $dir ]]; then
	CC=clang meson setup "$dir" -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
meson compile -C "$dir" >/dev/null
# UBSan only reports by default: make every report a failure with a stack.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
status=0
for t in "${targets[@]}"; do
	echo "== fuzz_$t for ${secs}s"
	mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
	log=$dir/fuzz_$t.log
	if ! "$dir/tests/fuzz_$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$dir/artifacts/$t/" \
		"$dir/corpus/$t" "tests/fuzz/corpus/$t" tests/data/bad >"$log" 2>&1; then
		status=1
		echo "fuzz_$t FAILED: see $log and $dir/artifacts/$t/"
		grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -n 5 || true
	fi
	grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE' "$log" || tail -n 3 "$log"
done
exit $status
