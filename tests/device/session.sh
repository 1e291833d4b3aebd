#!/bin/bash
# tests/device/session.sh BUNDLE OUT: one lent GPU session's command (the
# 15-minute device budget: at most 9 minutes of runs), phases of check.sh
# with a time limit each, everything written to OUT as it goes: log.txt
# (the tables), results.tgz (findings, reports, per-run ms/step), and the
# traces one file each when under 16 MiB (what a device tool brings back).
#   BUNDLE: a folder made by tests/device/bundle.sh (root/, lib/)
# Phases (issue 29, item 4: the agent's cost per launch against
# torch.profiler's): 1 every workload once (default mode) but resnet64
# (measured on 2026-11-28: 9250/9250 ops, ours 1.12x, torch.profiler
# 1.72x); 2 tiny and resnet1, REPEAT=3, the default mode (sample: the
# per-launch callback reads the Python line); 3 tiny with --python=exact
# (no callback); 4 tiny and resnet1 without the CUDA agent (--no-cuda); 5
# tiny in the default mode with INFERSCOPE_CUDA_CALLBACKS=empty (the same
# callbacks, returning at once; no Python lines, so its launch-site column
# fails by design); 6 tiny with INFERSCOPE_CUDA_CALLBACKS=off (activity
# records only).  Each prints ms/step plain / ours / torch.profiler and
# the agent's own account per launch (gpu.agent.per_launch_ns: its
# conversion CPU, its callbacks' timed body, CUPTI's OVERHEAD records).
# On tiny: 6 - 4 is the activity records' cost, 5 - 6 CUPTI's callback
# dispatch, 2 - 5 our callback's body (with whatever contention it meets).
# Worst case 540 s of runs (the phases' limits): one command of the
# device tool (600 s at most), about 13 minutes of the 15 with the
# machine's start.
set -u
[[ $# -eq 2 ]] || { echo "usage: session.sh BUNDLE OUT" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "$1" && pwd) || exit 1
out=$(mkdir -p "$2" && cd "$2" && pwd) || exit 1
exec > >(tee -a "$out/log.txt") 2>&1
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | head -3
PY=${PYTHON:-python3}
"$PY" -V
cupti=$(find /opt /usr/local /usr/lib -name 'libcupti.so.13*' 2>/dev/null | head -8)
cdir=$(dirname "$( (echo "$cupti" | grep -m1 site-packages) || echo "$cupti" | head -1)")
export LD_LIBRARY_PATH=$bundle/lib:$cdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
B=$bundle/root/bin
"$B/iscope-record" --version
tmp=$(mktemp -d)
phase() { # phase N LIMIT_S VAR=VALUE...: check.sh with those settings, KEEP=$tmp/kN
	local n=$1 limit=$2
	shift 2
	echo "== phase $n: $* ($(date -u +%T))"
	env KEEP="$tmp/k$n" RUN_TIMEOUT=100 "$@" timeout "$limit" "$here/check.sh" "$B"
	echo "phase $n rc=$?"
}
phase 1 215 WORKLOADS="gemm tiny pageable python resnet1"
phase 2 110 WORKLOADS="tiny resnet1" REPEAT=3 STEPS=15
phase 3 45 WORKLOADS="tiny" REPEAT=3 STEPS=15 ISC_ARGS=--python=exact
phase 4 80 WORKLOADS="tiny resnet1" REPEAT=3 STEPS=15 ISC_ARGS=--no-cuda
phase 5 45 WORKLOADS="tiny" REPEAT=3 STEPS=15 INFERSCOPE_CUDA_CALLBACKS=empty
phase 6 45 WORKLOADS="tiny" REPEAT=3 STEPS=15 INFERSCOPE_CUDA_CALLBACKS=off
date -u +%T
cd "$tmp" || exit 1
tar czf "$out/results.tgz" --exclude='*.dump' --exclude='*.kineto.json' --exclude='*.isc' k* 2>/dev/null
for f in k1/*.isc; do
	[[ -f $f && $(stat -c %s "$f") -lt 16000000 ]] && cp "$f" "$out/${f//\//_}"
done
ls -la "$out"
