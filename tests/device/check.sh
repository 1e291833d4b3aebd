#!/usr/bin/env bash
# The device check (issue 29): on a machine with an NVIDIA GPU, workloads
# whose bottleneck is known by construction (workloads.py) run plain, under
# iscope-record and under torch.profiler; prints a Markdown table of the
# verdict against the truth, the Python line our findings give as the
# launch site of the GPU work against the line workloads.py marks
# (`# launch site: NAME`), the GPU op count (kernels, copies, memsets) and
# GPU time of the steady steps against torch.profiler's trace of the same
# steps (within 2 %), ms per step plain / recorded / profiled (medians of
# REPEAT runs each, interleaved), and the CUDA agent's own cost per launch
# as the findings state it (gpu.agent.per_launch_ns).  Needs nothing from
# the network, nor jq.
#
#   tests/device/check.sh [BIN_DIR]     BIN_DIR: where iscope-record etc. are
#                                       (an installed tree's bin/), default build/tools/*
#   PYTHON=python3 STEPS=30 WORKLOADS="gemm tiny pageable python resnet1 resnet64"
#   REPEAT=1          runs of each kind per workload (ms/step: their median)
#   ISC_ARGS=         more iscope-record options (--python=exact, ...)
#   KEEP=DIR          keep each workload's trace, findings, report and logs there
#   RUN_TIMEOUT=180   seconds one run may take (then it counts as failed)
#
# Exit status: 0 when every judged verdict and launch site matched its truth
# and every count was within 2 %, 1 otherwise, 77 without a GPU (nothing is
# run).  Under 6 minutes on an H100/H200 (30 steps a run, three runs a
# workload).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
PY=${PYTHON:-python3}
STEPS=${STEPS:-30}
WORKLOADS=${WORKLOADS:-"gemm tiny pageable python resnet1 resnet64"}
REPEAT=${REPEAT:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}
read -r -a isc_args <<<"${ISC_ARGS:-}"
if [[ $# -ge 1 ]]; then
	REC=$1/iscope-record MERGE=$1/iscope-merge ANALYZE=$1/iscope-analyze REPORT=$1/iscope-report
else
	REC=$src/build/tools/iscope-record/iscope-record MERGE=$src/build/tools/iscope-merge/iscope-merge
	ANALYZE=$src/build/tools/iscope-analyze/iscope-analyze REPORT=$src/build/tools/iscope-report/iscope-report
fi
for t in "$REC" "$MERGE" "$ANALYZE" "$REPORT"; do
	[[ -x $t ]] || { echo "check.sh: $t not found" >&2; exit 1; }
done
if ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "check.sh: $PY cannot import torch (set PYTHON): nothing run" >&2
	exit 77
fi
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "check.sh: no CUDA GPU visible to $PY (torch.cuda.is_available() is false): nothing run" >&2
	exit 77
fi
if [[ -n ${KEEP:-} ]]; then
	mkdir -p "$KEEP" && tmp=$(cd "$KEEP" && pwd) || exit 1
else
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/isc-device.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
fi
declare -A truth=([gemm]=gpu_compute_bound [tiny]=launch_bound [pageable]=transfer_bound [python]=cpu_bound
	[resnet1]="" [resnet64]="")
bad=0
"$PY" -c 'import torch; print("#", torch.cuda.get_device_name(0), "torch", torch.__version__, "CUDA", torch.version.cuda)'
echo "| workload | truth | ours | torch.profiler's trace | launch site ours / truth | GPU ops ours / tp | GPU time ours / tp | ms/step plain / ours / tp | agent ns per launch (launches,conv=its conversion,cb=its callbacks' body ns a launch,cbs/l=callbacks,rec/l=records a launch) |"
echo "|---|---|---|---|---|---:|---:|---|---:|"
# ms: one run's ms_per_step line (empty when it failed or timed out)
ms() { sed -n 's/^ms_per_step //p' "$1"; }
median() { printf '%s\n' "$@" | grep . | sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
for w in $WORKLOADS; do
	if [[ $w == resnet* ]] && ! "$PY" -c 'import torchvision' 2>/dev/null; then
		echo "| $w | | (torchvision not installed: not run) | | | | | | |"
		continue
	fi
	plain=() ours=() tp=()
	for ((r = 1; r <= REPEAT; r++)); do
		timeout "$RUN_TIMEOUT" "$PY" "$here/workloads.py" "$w" --steps "$STEPS" >"$tmp/$w.plain.$r.out" 2>>"$tmp/$w.plain.err"
		plain+=("$(ms "$tmp/$w.plain.$r.out")")
		# the first recorded run is the one analysed
		out=$tmp/$w.isc
		((r > 1)) && out=$tmp/$w.$r.isc
		timeout "$RUN_TIMEOUT" "$REC" -q "${isc_args[@]}" -o "$out" -- "$PY" "$here/workloads.py" "$w" --steps "$STEPS" \
			>"$tmp/$w.rec.$r.out" 2>>"$tmp/$w.rec.err"
		ours+=("$(ms "$tmp/$w.rec.$r.out")")
		((r > 1)) && rm -f "$out"
		timeout "$RUN_TIMEOUT" "$PY" "$here/workloads.py" "$w" --steps "$STEPS" --profile "$tmp/$w.kineto.json" \
			>"$tmp/$w.tp.$r.out" 2>>"$tmp/$w.tp.err"
		tp+=("$(ms "$tmp/$w.tp.$r.out")")
	done
	"$ANALYZE" -q -o "$tmp/$w.json" "$tmp/$w.isc" 2>>"$tmp/$w.rec.err"
	"$REPORT" -o "$tmp/$w.md" "$tmp/$w.json" 2>>"$tmp/$w.rec.err"
	"$ANALYZE" -q -o "$tmp/$w.tp.json" "$tmp/$w.kineto.json" 2>>"$tmp/$w.tp.err"
	"$MERGE" --dump-times -o "$tmp/$w.dump" "$tmp/$w.isc" 2>>"$tmp/$w.rec.err"
	# GPU ops (kernels, copies, memsets) of the steady steps (the 6th on): ours from the dump,
	# torch.profiler's from its trace (its active steps are those same steps); a workload with
	# no kernel (pageable) is still compared, on its copies.  Then the findings' fields.
	read -r ok_count kn_ours kn_tp kt_ours kt_tp v_ours v_tp site per_launch launches < <("$PY" - "$tmp/$w.dump" \
		"$tmp/$w.kineto.json" "$tmp/$w.json" "$tmp/$w.tp.json" <<'PY'
import json, os, re, sys
steps, kern = [], []
try:
    for l in open(sys.argv[1], errors="replace"):
        w = l.split()
        if len(w) >= 6 and w[3:6] == ["B", "scope", "step"]:
            steps.append([int(w[0]), None])
        elif len(w) >= 6 and w[3:6] == ["E", "scope", "step"] and steps and steps[-1][1] is None:
            steps[-1][1] = int(w[0])
        m = re.search(r" GPU dev\d+ s\d+ (kernel|memcpy|memset) .* dur=(\d+)", l)
        if m:
            kern.append((int(w[0]), int(m.group(2))))
except OSError:
    pass
lo, hi = (steps[5][0], steps[-1][1]) if len(steps) > 5 and steps[-1][1] else (0, 0)
mine = [d for t, d in kern if lo <= t <= hi]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return {}
tr = load(sys.argv[2])
tk = [e for e in tr.get("traceEvents", [])
      if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
n1, n2 = len(mine), len(tk)
t1, t2 = sum(mine) / 1e6, sum(float(e.get("dur", 0)) for e in tk) / 1e3
ok = n1 > 0 and n2 > 0 and abs(n1 - n2) <= 0.02 * n2 and t2 > 0 and abs(t1 - t2) <= 0.02 * t2
f, ft = load(sys.argv[3]), load(sys.argv[4])
verdict = lambda d: ((d.get("verdict") or {}).get("class") or "none") if d else "error"
g = f.get("gpu") or {}
# the launch site: of the kernels (most kernel time), else of the copies (most bytes)
py = None
for cs in ((g.get("launch") or {}).get("call_sites") or []):
    py = cs.get("python")
    break
if py is None:
    for row in g.get("memcpy") or []:
        py = (row.get("top_call_site") or {}).get("python")
        if py:
            break
site = "%s:%d" % (os.path.basename(py["file"]), py["line"]) if py else "none"
ag = g.get("agent") or {}
pl = ag.get("per_launch_ns")
# the agent's parts a launch: its conversion CPU, its callbacks' timed body; its callbacks and records a launch
nl = ag.get("launches") or 0
part = lambda k: "%d" % round(ag[k] / nl) if nl and ag.get(k) is not None else "?"
ratio = lambda k: "%.2f" % (ag[k] / nl) if nl and ag.get(k) is not None else "?"
print(int(ok), n1, n2, "%.2f" % t1, "%.2f" % t2, verdict(f), verdict(ft), site,
      "?" if pl is None else pl, "%s,conv=%s,cb=%s,cbs/l=%s,rec/l=%s" % (ag.get("launches", "?"), part("agent_cpu_ns"),
      part("callback_ns"), ratio("callbacks"), ratio("records")))
PY
)
	t=${truth[$w]}
	# the truth of the launch site: the line workloads.py marks for this workload
	line=$(grep -n "# launch site: $w\$" "$here/workloads.py" | cut -d: -f1)
	site_truth=${line:+workloads.py:$line}
	mark=""
	if [[ -n $t && $v_ours != "$t" ]]; then
		mark=" ✗"
		bad=$((bad + 1))
	fi
	smark=""
	if [[ -n $site_truth && $site != "$site_truth" ]]; then
		smark=" ✗"
		bad=$((bad + 1))
	fi
	[[ ${ok_count:-0} == 1 ]] || { bad=$((bad + 1)); kn_ours="$kn_ours ✗"; }
	echo "| $w | ${t:-(not judged)} | $v_ours$mark | $v_tp | $site$smark / ${site_truth:-(not judged)} | $kn_ours / $kn_tp |" \
		"$kt_ours / $kt_tp ms | $(median "${plain[@]}") / $(median "${ours[@]}") / $(median "${tp[@]}") | $per_launch ($launches) |"
done
exit $((bad > 0))
