#!/bin/bash
# The job view at scale (issue 27): 64 synthetic ranks (tests/dist/job_synth.py,
# KIND steps each, default a straggler at rank 5 and 40 steps) merged and
# analysed as one job, against the 64 ranks analysed one by one (the map step
# of iscope-analyze --job) and the reduce from their findings.  Prints the
# median wall time of REPS repetitions (default 5) of each path, their ratio,
# and the peak RSS of each program.  Not pass/fail; the machine is shared,
# so quote the medians.
#
#   tests/bench/job64.sh [REPS [STEPS [KIND]]]   (build in ./build)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ISC_BUILD:-$here/build}
reps=${1:-5}
steps=${2:-40}
kind=${3:-straggler}
M=$build/tools/iscope-merge/iscope-merge
A=$build/tools/iscope-analyze/iscope-analyze
dir=$(mktemp -d "${TMPDIR:-/tmp}/job64_bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 "$here/tests/dist/job_synth.py" "$kind" 64 "$steps" "$dir/ranks" 5 3000
echo "64 ranks x $steps steps ($kind): $(du -sh "$dir/ranks" | cut -f1) of Kineto JSON (gzip)"
now() { date +%s%N; }
job=() mapred=()
mkdir "$dir/f"
for ((i = 0; i < reps; i++)); do
	t0=$(now)
	"$M" -q -o "$dir/job.istl" "$dir"/ranks/rank*.json.gz
	"$A" -q -o "$dir/job.json" "$dir/job.istl"
	t1=$(now)
	for r in $(seq 0 63); do "$A" -q -o "$dir/f/findings-$r.json" "$dir/ranks/rank$r.json.gz"; done
	"$A" -q --job -o "$dir/reduced.json" "$dir"/f/findings-*.json
	t2=$(now)
	job+=($(((t1 - t0) / 1000000)))
	mapred+=($(((t2 - t1) / 1000000)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mj=$(median "${job[@]}")
mm=$(median "${mapred[@]}")
echo "merge + analyse 64 ranks as a job:      median $mj ms (runs: ${job[*]})"
echo "64 analyses + iscope-analyze --job:     median $mm ms (runs: ${mapred[*]})"
awk -v a="$mj" -v b="$mm" 'BEGIN { printf "ratio job / (64 analyses + reduce): %.2f\n", a / b }'
echo "verdict from traces: $(jq -r .verdict.class "$dir/job.json"); from findings: $(jq -r .verdict.class "$dir/reduced.json")"
/usr/bin/time -f "peak RSS, iscope-merge of 64 ranks: %M KiB" "$M" -q -o "$dir/job.istl" "$dir"/ranks/rank*.json.gz
/usr/bin/time -f "peak RSS, iscope-analyze of the job: %M KiB" "$A" -q "$dir/job.istl" > /dev/null
/usr/bin/time -f "peak RSS, one rank's analysis: %M KiB" "$A" -q "$dir/ranks/rank0.json.gz" > /dev/null
/usr/bin/time -f "peak RSS, iscope-analyze --job of 64 findings: %M KiB" "$A" -q --job "$dir"/f/findings-*.json > /dev/null
echo "findings sizes: job view $(stat -c %s "$dir/job.json") B, one rank's $(stat -c %s "$dir/f/findings-0.json") B"
