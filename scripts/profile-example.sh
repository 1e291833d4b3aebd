#!/usr/bin/env bash
# Install dependencies, build, profile examples/infer.py through the whole
# pipe, and write the report:
#
#   scripts/profile-example.sh [REPORT]     (default: report.md)
#
# REPORT is relative to the directory this script is run from.
set -euo pipefail

report=$(realpath -m -- "${1:-report.md}")

cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/install-deps.sh
build_log=$(mktemp "${TMPDIR:-/tmp}/iscope-build.XXXXXX")
trap 'rm -f "$build_log"' EXIT
if ! ./scripts/build.sh build >"$build_log" 2>&1; then
	cat "$build_log" >&2
	echo "profile-example: build failed" >&2
	exit 1
fi
PY=$(./scripts/find-python.sh)

b=build/tools
"$b/iscope-record/iscope-record" -- "$PY" examples/infer.py |
	"$b/iscope-merge/iscope-merge" |
	"$b/iscope-analyze/iscope-analyze" |
	"$b/iscope-report/iscope-report" -o "$report"

echo "report written to $report"
