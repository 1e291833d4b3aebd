#!/bin/bash
# tests/device/session.sh BUNDLE OUT: one lent GPU session's command (the
# 15-minute device budget: about 8 minutes of runs), phases of check.sh
# with a time limit each, everything written to OUT as it goes: log.txt
# (the tables), results.tgz (findings, reports, per-run ms/step), and the
# traces one file each when under 16 MiB (what a device tool brings back).
#   BUNDLE: a folder made by tests/device/bundle.sh (root/, lib/)
# Phases: 1 every workload once (default mode); 2 the agent's cost on the
# launch-heavy workloads, REPEAT=3, in the default mode, 3 the same with
# --python=exact (no per-launch callback), 4 the same without the CUDA
# agent (--no-cuda): ms/step of each against plain and torch.profiler.
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
phase 1 270
phase 2 110 WORKLOADS="tiny resnet1" REPEAT=3 STEPS=15
phase 3 80 WORKLOADS="tiny resnet1" REPEAT=3 STEPS=15 ISC_ARGS=--python=exact
phase 4 80 WORKLOADS="tiny resnet1" REPEAT=3 STEPS=15 ISC_ARGS=--no-cuda
date -u +%T
cd "$tmp" || exit 1
tar czf "$out/results.tgz" --exclude='*.dump' --exclude='*.kineto.json' --exclude='*.isc' k* 2>/dev/null
for f in k1/*.isc; do
	[[ -f $f && $(stat -c %s "$f") -lt 16000000 ]] && cp "$f" "$out/${f//\//_}"
done
ls -la "$out"
