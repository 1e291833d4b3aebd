#!/bin/bash
# One job, many ranks, with torchrun on one host: both paths to the job
# view (iscope-analyze(1) DISTRIBUTED JOBS).  infer_dist.py is your
# script; it profiles a few steps with torch.profiler and writes its trace
# as $PROFILE_DIR/rank$RANK.json.gz, for instance:
#
#   prof = torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),
#           on_trace_ready=lambda p: p.export_chrome_trace(f"{os.environ['PROFILE_DIR']}/rank{os.environ['RANK']}.json.gz"))
#
# (torch.profiler records distributedInfo, the rank and world size, in the
# trace; iscope-merge and iscope-analyze read them there).
set -euo pipefail
export PROFILE_DIR=${PROFILE_DIR:-$PWD/profile}
mkdir -p "$PROFILE_DIR"
torchrun --standalone --nproc-per-node=4 infer_dist.py

# map/reduce: each rank's trace analysed alone (anywhere), then the job view from the findings
for t in "$PROFILE_DIR"/rank*.json.gz; do
	r=${t##*/rank}
	iscope-analyze -q -o "$PROFILE_DIR/findings-${r%.json.gz}.json" "$t"
done
iscope-analyze --job "$PROFILE_DIR"/findings-*.json | iscope-report -o job.md

# or from the traces, merged as one job
iscope-merge "$PROFILE_DIR"/rank*.json.gz | iscope-analyze | iscope-report -o job-from-traces.md
