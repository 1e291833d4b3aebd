#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 60) in a clang
# ASan+UBSan build, growing the corpora under tests/fuzz/corpus/.
# Usage: tests/fuzz/run-fuzzers.sh [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs=${1:-60}
dir=build-fuzz
if [[ ! -d $dir ]]; then
	CC=clang meson setup "$dir" -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
meson compile -C "$dir" >/dev/null
status=0
for t in trace timeline config; do
	echo "== fuzz_$t for ${secs}s"
	mkdir -p "tests/fuzz/corpus/$t"
	"$dir/tests/fuzz_$t" -max_total_time="$secs" -max_len=65536 -timeout=10 \
		"tests/fuzz/corpus/$t" tests/data/bad 2>&1 | tail -n 3 || status=1
done
exit $status
