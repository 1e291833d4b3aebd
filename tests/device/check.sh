#!/usr/bin/env bash
# The device check (issue 29): on a machine with an NVIDIA GPU, workloads
# whose bottleneck is known by construction (workloads.py) run plain, under
# iscope-record and under torch.profiler; prints a Markdown table of the
# verdict against the truth, the GPU op count (kernels, copies, memsets) and
# GPU time of the steady steps against torch.profiler's trace of the same
# steps (within 2 %), and
# ms per step plain / recorded / profiled.  Needs nothing from the network.
#
#   tests/device/check.sh [BIN_DIR]     BIN_DIR: where iscope-record etc. are
#                                       (an installed tree's bin/), default build/tools/*
#   PYTHON=python3 STEPS=30 WORKLOADS="gemm tiny pageable python resnet1 resnet64"
#
# Exit status: 0 when every judged verdict matched its truth and every
# count was within 2 %, 1 otherwise, 77 without a GPU (nothing is run).
# Under 6 minutes on an H100/H200 (30 steps a run, three runs a workload).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
PY=${PYTHON:-python3}
STEPS=${STEPS:-30}
WORKLOADS=${WORKLOADS:-"gemm tiny pageable python resnet1 resnet64"}
if [[ $# -ge 1 ]]; then
	REC=$1/iscope-record MERGE=$1/iscope-merge ANALYZE=$1/iscope-analyze
else
	REC=$src/build/tools/iscope-record/iscope-record MERGE=$src/build/tools/iscope-merge/iscope-merge
	ANALYZE=$src/build/tools/iscope-analyze/iscope-analyze
fi
for t in "$REC" "$MERGE" "$ANALYZE"; do
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
tmp=$(mktemp -d "${TMPDIR:-/tmp}/isc-device.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
declare -A truth=([gemm]=gpu_compute_bound [tiny]=launch_bound [pageable]=transfer_bound [python]=cpu_bound
	[resnet1]="" [resnet64]="")
bad=0
"$PY" -c 'import torch; print("#", torch.cuda.get_device_name(0), "torch", torch.__version__, "CUDA", torch.version.cuda)'
echo "| workload | truth | ours | torch.profiler's trace | GPU ops ours / tp | GPU time ours / tp | ms/step plain / ours / tp |"
echo "|---|---|---|---|---:|---:|---|"
for w in $WORKLOADS; do
	if [[ $w == resnet* ]] && ! "$PY" -c 'import torchvision' 2>/dev/null; then
		echo "| $w | | (torchvision not installed: not run) | | | | |"
		continue
	fi
	plain=$("$PY" "$here/workloads.py" "$w" --steps "$STEPS" 2>"$tmp/$w.plain.err" | sed -n 's/^ms_per_step //p')
	ours=$("$REC" -q -o "$tmp/$w.isc" -- "$PY" "$here/workloads.py" "$w" --steps "$STEPS" 2>"$tmp/$w.rec.err" |
		sed -n 's/^ms_per_step //p')
	tp=$("$PY" "$here/workloads.py" "$w" --steps "$STEPS" --profile "$tmp/$w.kineto.json" 2>"$tmp/$w.tp.err" |
		sed -n 's/^ms_per_step //p')
	"$ANALYZE" -q -o "$tmp/$w.json" "$tmp/$w.isc" 2>>"$tmp/$w.rec.err"
	"$ANALYZE" -q -o "$tmp/$w.tp.json" "$tmp/$w.kineto.json" 2>>"$tmp/$w.tp.err"
	"$MERGE" --dump-times -o "$tmp/$w.dump" "$tmp/$w.isc" 2>>"$tmp/$w.rec.err"
	# GPU ops (kernels, copies, memsets) of the steady steps (the 6th on): ours from the dump,
	# torch.profiler's from its trace (its active steps are those same steps); a workload with
	# no kernel (pageable) is still compared, on its copies
	read -r ok_count kn_ours kn_tp kt_ours kt_tp < <("$PY" - "$tmp/$w.dump" "$tmp/$w.kineto.json" <<'PY'
import json, re, sys
steps, kern = [], []
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) >= 6 and w[3:6] == ["B", "scope", "step"]:
        steps.append([int(w[0]), None])
    elif len(w) >= 6 and w[3:6] == ["E", "scope", "step"] and steps and steps[-1][1] is None:
        steps[-1][1] = int(w[0])
    m = re.search(r" GPU dev\d+ s\d+ (kernel|memcpy|memset) .* dur=(\d+)", l)
    if m:
        kern.append((int(w[0]), int(m.group(2))))
lo, hi = (steps[5][0], steps[-1][1]) if len(steps) > 5 and steps[-1][1] else (0, 0)
mine = [d for t, d in kern if lo <= t <= hi]
tr = json.load(open(sys.argv[2]))
tk = [e for e in tr.get("traceEvents", [])
      if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
n1, n2 = len(mine), len(tk)
t1, t2 = sum(mine) / 1e6, sum(float(e.get("dur", 0)) for e in tk) / 1e3
ok = n1 > 0 and n2 > 0 and abs(n1 - n2) <= 0.02 * n2 and t2 > 0 and abs(t1 - t2) <= 0.02 * t2
print(int(ok), n1, n2, "%.2f" % t1, "%.2f" % t2)
PY
)
	v_ours=$(jq -r '.verdict.class // "none"' "$tmp/$w.json" 2>/dev/null || echo error)
	v_tp=$(jq -r '.verdict.class // "none"' "$tmp/$w.tp.json" 2>/dev/null || echo error)
	t=${truth[$w]}
	mark=""
	if [[ -n $t && $v_ours != "$t" ]]; then
		mark=" ✗"
		bad=$((bad + 1))
	fi
	[[ ${ok_count:-0} == 1 ]] || { bad=$((bad + 1)); kn_ours="$kn_ours ✗"; }
	echo "| $w | ${t:-(not judged)} | $v_ours$mark | $v_tp | $kn_ours / $kn_tp | $kt_ours / $kt_tp ms | ${plain:-?} / ${ours:-?} / ${tp:-?} |"
done
exit $((bad > 0))
