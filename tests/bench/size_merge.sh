#!/usr/bin/env bash
# Trace size and merge throughput benchmark (prints figures; not pass/fail).
#
#   tests/bench/size_merge.sh      env: RUNS (default 5), ISC_BUILD (default build)
#
# Records examples/infer.py once, then prints:
#   - bytes per event: trace bytes / summary.events from iscope-analyze
#     (goal <= 4);
#   - merge throughput: events / median time of `iscope-merge TRACE`,
#     beside the median time of `zstd -dc TRACE`, the decompression floor,
#     on the same trace.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

RUNS=${RUNS:-5}
BUILD=${ISC_BUILD:-build}
REC=$BUILD/tools/iscope-record/iscope-record
MERGE=$BUILD/tools/iscope-merge/iscope-merge
ANALYZE=$BUILD/tools/iscope-analyze/iscope-analyze
for t in "$REC" "$MERGE" "$ANALYZE"; do
	[[ -x $t ]] || { echo "size_merge.sh: $t not built (scripts/build.sh)" >&2; exit 1; }
done
PY=$(./scripts/find-python.sh)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trace=$tmp/trace.isc

elapsed_ns() {
	local t0 t1
	t0=$(date +%s%N)
	if ! "$@" >/dev/null 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		echo "size_merge.sh: failed: $*" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

"$REC" --quiet -o "$trace" -- "$PY" examples/infer.py >/dev/null
"$MERGE" "$trace" | "$ANALYZE" >"$tmp/findings.json"
events=$(jq -r '.summary.events' "$tmp/findings.json")
dropped=$(jq -r '.summary.dropped_events' "$tmp/findings.json")
bytes=$(stat -c %s "$trace")
raw=$(zstd -dc "$trace" | wc -c)
((events > 0)) || { echo "size_merge.sh: no events in the trace" >&2; exit 1; }

: >"$tmp/merge"
: >"$tmp/zstd"
for ((r = 0; r < RUNS; r++)); do
	elapsed_ns "$MERGE" "$trace" >>"$tmp/merge"
	elapsed_ns zstd -dc "$trace" >>"$tmp/zstd"
done
merge_ns=$(median <"$tmp/merge")
zstd_ns=$(median <"$tmp/zstd")

awk -v ev="$events" -v dr="$dropped" -v b="$bytes" -v raw="$raw" \
	-v m="$merge_ns" -v z="$zstd_ns" -v n="$RUNS" 'BEGIN {
	printf "trace: examples/infer.py, %d events (%d dropped), %d bytes (%d decompressed)\n", ev, dr, b, raw
	printf "bytes/event:       %.2f (decompressed %.2f)\n", b / ev, raw / ev
	printf "iscope-merge:      %.3f s  %.2f M events/s   (median of %d)\n", m / 1e9, ev / (m / 1e9) / 1e6, n
	printf "zstd -dc:          %.3f s  %.2f M events/s   (median of %d)\n", z / 1e9, ev / (z / 1e9) / 1e6, n
	printf "merge / zstd -dc:  %.2f x the time\n", m / z
}'
