#!/bin/bash
# Cost of the job view (issue 27): merging and analysing the 8 DLRM rank
# files of tests/data/real/kineto-ranks as one job, against analysing each
# rank file alone (8 analyses), in the same run; the job both ways: the
# pipeline (iscope-merge -o job.istl, then iscope-analyze job.istl) and
# the rank files given to iscope-analyze (merged in memory, the same
# findings).  Prints the median wall time of REPS repetitions (default 7)
# of each, their ratios (the goal: 1.0 or less), and the peak RSS of the
# job's analysis and of one rank's.
# Not pass/fail; the machine is shared, so quote the medians.  With
# valgrind installed it also prints the ratio of instructions executed
# (callgrind's Ir: merge + job analysis, and the in-memory job analysis,
# against the 8 analyses), which the machine's load does not move.
#
#   tests/bench/job.sh [REPS]   (build in ./build)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ISC_BUILD:-$here/build}
reps=${1:-7}
M=$build/tools/iscope-merge/iscope-merge
A=$build/tools/iscope-analyze/iscope-analyze
D=$here/tests/data/real/kineto-ranks/dlrm_v100_8rank
dir=$(mktemp -d "${TMPDIR:-/tmp}/job_bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
now() { date +%s%N; }
job=() single=() direct=()
for ((i = 0; i < reps; i++)); do
	t0=$(now)
	"$M" -q -o "$dir/job.istl" "$D"/rank*.json.gz
	"$A" -q "$dir/job.istl" > /dev/null
	t1=$(now)
	for f in "$D"/rank*.json.gz; do "$A" -q "$f" > /dev/null; done
	t2=$(now)
	"$A" -q "$D"/rank*.json.gz > /dev/null
	t3=$(now)
	job+=($(((t1 - t0) / 1000000)))
	single+=($(((t2 - t1) / 1000000)))
	direct+=($(((t3 - t2) / 1000000)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mj=$(median "${job[@]}")
ms=$(median "${single[@]}")
md=$(median "${direct[@]}")
echo "merge + analyse 8 ranks as a job: median $mj ms (runs: ${job[*]})"
echo "analyse the 8 rank files as a job: median $md ms (runs: ${direct[*]})"
echo "analyse 8 rank files alone:       median $ms ms (runs: ${single[*]})"
awk -v a="$mj" -v b="$ms" 'BEGIN { printf "ratio job / 8 singles: %.2f (goal <= 1.00)\n", a / b }'
awk -v a="$md" -v b="$ms" 'BEGIN { printf "ratio job in iscope-analyze / 8 singles: %.2f (goal <= 1.00)\n", a / b }'
/usr/bin/time -f "peak RSS, the job's analysis: %M KiB" "$A" -q "$dir/job.istl" > /dev/null
/usr/bin/time -f "peak RSS, the job's analysis from the rank files: %M KiB" "$A" -q "$D"/rank*.json.gz > /dev/null
/usr/bin/time -f "peak RSS, one rank's analysis: %M KiB" "$A" -q "$D/rank0.json.gz" > /dev/null
if command -v valgrind > /dev/null; then
	ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 > /dev/null | awk '/Collected :/ { print $NF }'; }
	jm=$(ir "$M" -q -o "$dir/job.istl" "$D"/rank*.json.gz)
	ja=$(ir "$A" -q "$dir/job.istl")
	jd=$(ir "$A" -q "$D"/rank*.json.gz)
	si=0
	for f in "$D"/rank*.json.gz; do si=$((si + $(ir "$A" -q "$f"))); done
	awk -v m="$jm" -v a="$ja" -v s="$si" 'BEGIN { printf "instructions: merge %d + job analysis %d against 8 analyses %d: ratio %.3f (goal <= 1.000)\n", m, a, s, (m + a) / s }'
	awk -v d="$jd" -v s="$si" 'BEGIN { printf "instructions: the rank files analysed as a job %d against 8 analyses %d: ratio %.3f (goal <= 1.000)\n", d, s, d / s }'
fi
