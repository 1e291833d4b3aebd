#!/usr/bin/env bash
# Kineto import benchmark (prints figures and ratios; not pass/fail).
#
#   tests/bench/kineto.sh      env: RUNS (default 5), ISC_BUILD (default build),
#                                   BIG_MB (default 0: off) size of a synthetic trace
#
# For each trace of tests/data/real/kineto (largest first), in the same run:
#   - import + analyze: `iscope-analyze TRACE` (imports into a temporary
#     timeline, then analyzes it), median wall time of RUNS;
#   - `python3 -c "import json,gzip; json.load(gzip.open(TRACE))"`, the
#     parse alone, median of RUNS;
#   - MB/s of JSON text (uncompressed bytes / median wall time) for both,
#     the ratio json.load time / import+analyze time (goal >= 5), on wall
#     time and on CPU time (user + system: steadier on a loaded machine).
# Then the peak RSS (/usr/bin/time -v) of `iscope-merge` and `iscope-analyze`
# on the largest trace, against its compressed and JSON sizes, and the same
# for json.load.  With BIG_MB=N, a synthetic trace of about N MB of JSON
# (the largest trace's events repeated, shifted in time) is streamed through
# a pipe into iscope-merge at the default 64 MiB sort memory: its peak RSS
# shows that memory follows the sort buffer, not the file size.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

RUNS=${RUNS:-5}
BUILD=${ISC_BUILD:-build}
BIG_MB=${BIG_MB:-0}
MERGE=$BUILD/tools/iscope-merge/iscope-merge
ANALYZE=$BUILD/tools/iscope-analyze/iscope-analyze
DATA=tests/data/real/kineto
PY=/usr/bin/python3
for t in "$MERGE" "$ANALYZE"; do
	[[ -x $t ]] || { echo "kineto.sh: $t not built (scripts/build.sh)" >&2; exit 1; }
done
[[ -d $DATA ]] || { echo "kineto.sh: no $DATA" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

elapsed_ns() {
	local t0 t1
	t0=$(date +%s%N)
	if ! "$@" >/dev/null 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		echo "kineto.sh: failed: $*" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

# wall_cpu CMD...: "wall_ns cpu_ns" of CMD (cpu = user + system of the child, µs resolution)
wall_cpu() {
	"$PY" -c '
import resource, subprocess, sys, time
t0 = time.monotonic_ns()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
t1 = time.monotonic_ns()
if r.returncode:
    sys.exit("kineto.sh: failed: %s\n%s" % (" ".join(sys.argv[1:]), r.stderr.decode(errors="replace")))
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(t1 - t0, int((u.ru_utime + u.ru_stime) * 1e9))
' "$@"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# peak_rss_kb CMD...: maximum resident set size of CMD in KiB
peak_rss_kb() {
	/usr/bin/time -v "$@" 2>"$tmp/time" >/dev/null || { cat "$tmp/time" >&2; exit 1; }
	awk -F': ' '/Maximum resident set size/ { print $2 }' "$tmp/time"
}

mapfile -t files < <(ls -S "$DATA"/*.json.gz)
printf '%-48s %8s %9s %9s %10s %10s %7s %7s\n' trace "JSON MB" "ours ms" "json ms" "ours MB/s" "json MB/s" wall cpu
for f in "${files[@]}"; do
	bytes=$(gzip -dc "$f" | wc -c)
	: > "$tmp/ours"
	: > "$tmp/theirs"
	for ((i = 0; i < RUNS; i++)); do # interleaved, so drift hits both
		wall_cpu "$ANALYZE" "$f" >> "$tmp/ours"
		wall_cpu "$PY" -c "import json,gzip,sys; json.load(gzip.open(sys.argv[1]))" "$f" >> "$tmp/theirs"
	done
	o=$(cut -d' ' -f1 "$tmp/ours" | median)
	p=$(cut -d' ' -f1 "$tmp/theirs" | median)
	oc=$(cut -d' ' -f2 "$tmp/ours" | median)
	pc=$(cut -d' ' -f2 "$tmp/theirs" | median)
	awk -v n="$(basename "$f")" -v b="$bytes" -v o="$o" -v p="$p" -v oc="$oc" -v pc="$pc" 'BEGIN {
		printf "%-48s %8.1f %9.1f %9.1f %10.1f %10.1f %6.2fx %6.2fx\n", n, b / 1e6, o / 1e6, p / 1e6,
			b / 1e6 / (o / 1e9), b / 1e6 / (p / 1e9), p / o, (oc > 0 ? pc / oc : 0) }'
done
echo "(wall, cpu: json.load time / import+analyze time, medians of $RUNS; both include gzip"
echo " decompression and process start-up; cpu = user + system time, steadier than wall on a busy machine)"

big=${files[0]}
csize=$(stat -c %s "$big")
jsize=$(gzip -dc "$big" | wc -c)
echo
echo "peak RSS on $(basename "$big"): $((csize / 1024)) KiB gzip, $((jsize / 1024)) KiB JSON"
m=$(peak_rss_kb "$MERGE" -o "$tmp/t.istl" "$big")
a=$(peak_rss_kb "$ANALYZE" "$big")
j=$(peak_rss_kb "$PY" -c "import json,gzip,sys; json.load(gzip.open(sys.argv[1]))" "$big")
awk -v m="$m" -v a="$a" -v j="$j" -v js="$jsize" 'BEGIN {
	printf "  iscope-merge   %8d KiB  (%.2f x the JSON size)\n", m, m * 1024 / js
	printf "  iscope-analyze %8d KiB  (%.2f x the JSON size)\n", a, a * 1024 / js
	printf "  json.load      %8d KiB  (%.2f x the JSON size)\n", j, j * 1024 / js }'

if ((BIG_MB > 0)); then
	"$PY" tests/bench/kineto_synth.py "$big" "$BIG_MB" > "$tmp/big.json"
	bsize=$(stat -c %s "$tmp/big.json")
	r=$(peak_rss_kb "$MERGE" -o /dev/null "$tmp/big.json")
	t=$(elapsed_ns "$MERGE" -o /dev/null "$tmp/big.json")
	gzip -1 -c "$tmp/big.json" > "$tmp/big.json.gz"
	rg=$(peak_rss_kb sh -c "cat '$tmp/big.json.gz' | '$MERGE' -o /dev/null")
	awk -v r="$r" -v b="$bsize" -v t="$t" 'BEGIN {
		printf "synthetic %.0f MB JSON: iscope-merge peak RSS %d KiB (%.3f x the JSON size), %.0f MB/s\n",
			b / 1e6, r, r * 1024 / b, b / 1e6 / (t / 1e9) }'
	echo "  the same gzip-compressed, through a pipe: peak RSS $rg KiB"
fi
