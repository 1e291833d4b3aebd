#!/usr/bin/env bash
# Cost of the Python stack sampler's tick, this build against a baseline
# build of the recorder (before and after a change), in the same run
# (prints numbers and ratios; not a pass/fail test).
#
#   tests/bench/pysampler_cost.sh BASE_BUILD
#        env: ISC_BUILD (default build), ROUNDS (default 5), HZ (default 100),
#             MODE (--python=MODE, default sample; exact: a baseline from
#             before the sampler ran in exact mode has no sampler figures, 0),
#             SCRIPTS (default the matmul, tokenizer and dispatch workloads
#             of tests/bench/workloads), ISC_PYTHON (default the torch one)
#
# Records each workload with --python=$MODE under both recorders, round
# by round, the order alternating, and prints per workload and recorder
# the medians of the sampler's CPU time per tick (recording.sampler:
# per_tick_ns, its own thread's CPU over the ticks taken), of its reads
# (process_vm_readv calls) per stack, and of the workload's wall time, then
# the median of the per-round ratios this/base.  The sampler runs in the
# recorder: the workload's time changes only by what its reads disturb.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BASE=${1:?usage: pysampler_cost.sh BASE_BUILD}
NEW=${ISC_BUILD:-build}
ROUNDS=${ROUNDS:-5}
HZ=${HZ:-100}
MODE=${MODE:-sample}
PY=${ISC_PYTHON:-$(./scripts/find-python.sh)}
read -r -a scripts <<<"${SCRIPTS:-tests/bench/workloads/matmul.py tests/bench/workloads/tokenizer.py tests/bench/workloads/dispatch.py}"
for b in "$BASE" "$NEW"; do
	for t in iscope-record iscope-analyze; do
		[[ -x $b/tools/$t/$t ]] || { echo "pysampler_cost.sh: $b/tools/$t/$t not built" >&2; exit 1; }
	done
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-pysampler.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# one BUILD SCRIPT OUT: a recording of SCRIPT by BUILD's recorder, its
# per-tick CPU, reads per stack and wall time appended to OUT
one() {
	local b=$1 s=$2 out=$3
	"$b/tools/iscope-record/iscope-record" -q --python="$MODE" --python-hz="$HZ" -o "$tmp/t.isc" -- "$PY" "$s" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err" >&2; echo "pysampler_cost.sh: recording $s with $b failed" >&2; exit 1; }
	"$b/tools/iscope-analyze/iscope-analyze" -q -o "$tmp/f.json" "$tmp/t.isc"
	"$PY" - "$tmp/f.json" >>"$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d.get("recording", {}).get("sampler")
if s:
    print(s["per_tick_ns"], s["reads"] / max(1, s["stacks"]), d["summary"]["wall_ns"])
else:  # no sampler in this build's exact mode
    print(0, 0, d["summary"]["wall_ns"])
PY
}

printf '%-12s %-5s %14s %14s %12s\n' workload build "per tick (us)" "reads/stack" "wall (s)"
for s in "${scripts[@]}"; do
	w=$(basename "$s" .py)
	: >"$tmp/base" && : >"$tmp/new"
	one "$NEW" "$s" /dev/null # warm-up: page cache, torch's import
	for r in $(seq "$ROUNDS"); do
		if ((r % 2)); then
			one "$BASE" "$s" "$tmp/base"
			one "$NEW" "$s" "$tmp/new"
		else
			one "$NEW" "$s" "$tmp/new"
			one "$BASE" "$s" "$tmp/base"
		fi
	done
	for k in base new; do
		printf '%-12s %-5s %14.1f %14.2f %12.3f\n' "$w" "$k" \
			"$(cut -d' ' -f1 "$tmp/$k" | median | awk '{ print $1 / 1000 }')" \
			"$(cut -d' ' -f2 "$tmp/$k" | median)" \
			"$(cut -d' ' -f3 "$tmp/$k" | median | awk '{ print $1 / 1e9 }')"
	done
	# per-round ratios this/base of the tick cost and of the wall time
	paste -d' ' "$tmp/new" "$tmp/base" | awk '{ print ($4 > 0 ? $1 / $4 : 0) }' | median | xargs printf '%-12s ratio this/base: per tick %.2fx, ' "$w"
	paste -d' ' "$tmp/new" "$tmp/base" | awk '{ print $3 / $6 }' | median | xargs printf 'wall %.3fx\n'
done
