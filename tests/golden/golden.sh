#!/usr/bin/env bash
# Golden outputs: findings JSON (default and --hta-compat) and the Markdown
# and HTML reports of every trace in tests/data/real/kineto and of a saved
# recording (tests/data/golden/infer_small.isc), compared byte for byte with
# tests/golden/expected/. Refactors must leave them unchanged; a change of
# output is made on purpose and reviewed with
#
#   tests/golden/golden.sh regen [BUILD_DIR]
#
# which rewrites expected/ from the current build and prints the difference
# (findings pretty-printed so that a changed field shows as one line).
#
#   tests/golden/golden.sh check [BUILD_DIR]   TAP, one test per input and mode,
#                                               and one per input checking the
#                                               golden findings independently
#
# A golden file is the program's own output, so each input also gets a test
# of properties computed apart from the program: the findings validate
# against formats/findings.schema.json (jsonschema), the Markdown report's
# verdict line names the findings' verdict class, and for a Kineto trace
# gpu.launch.kernels equals the trace's kernel events counted here in Python.
set -uo pipefail

cmd=${1:-check}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${2:-${ISC_BUILD:-$src/build}}
exp=$src/tests/golden/expected
kineto=$src/tests/data/real/kineto
analyze=$build/tools/iscope-analyze/iscope-analyze
report=$build/tools/iscope-report/iscope-report
py=/usr/bin/python3

inputs() {
	ls "$kineto"/*.json.gz
	echo "$src/tests/data/golden/infer_small.isc"
}

# stem FILE: the input's name without .pt.trace.json.gz / .json.gz / .isc
stem() {
	local b
	b=$(basename "$1")
	b=${b%.gz}
	b=${b%.json}
	b=${b%.pt.trace}
	echo "${b%.isc}"
}

# produce INPUT MODE DIR: DIR/MODE.findings.json, .md, .html
produce() {
	local in=$1 mode=$2 dir=$3 args=()
	[[ $mode == hta ]] && args=(--hta-compat)
	mkdir -p "$dir"
	"$analyze" -q "${args[@]}" -o "$dir/$mode.findings.json" "$in" &&
		"$report" -o "$dir/$mode.md" "$dir/$mode.findings.json" &&
		"$report" -f html -o "$dir/$mode.html" "$dir/$mode.findings.json"
}

# show_diff OLD NEW: a readable difference (JSON pretty-printed first)
show_diff() {
	if [[ $1 == *.json ]]; then
		diff -u --label "$1" --label "$2" \
			<($py -m json.tool "$1" 2>/dev/null || cat "$1") \
			<($py -m json.tool "$2" 2>/dev/null || cat "$2")
	else
		diff -u "$1" "$2"
	fi
}

# independent INPUT DIR: properties of DIR's outputs computed without the
# program (see the top of this file); prints what it compared.
independent() {
	local in=$1 dir=$2 class
	"$src/tests/lib/validate_findings.py" "$dir/default.findings.json" "$dir/hta.findings.json" || return 1
	class=$(jq -r .verdict.class "$dir/default.findings.json")
	echo "verdict class $class"
	grep -qF "Verdict: **$class**" "$dir/default.md" || { echo "default.md: no 'Verdict: **$class**' line"; return 1; }
	[[ $in == *.json.gz ]] || return 0
	$py - "$in" "$dir/default.findings.json" <<'PY'
import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
want = sum(1 for e in ev if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel")
got = json.load(open(sys.argv[2]))["gpu"]["launch"]["kernels"]
print("kernel events in the trace %d, gpu.launch.kernels %d" % (want, got))
sys.exit(0 if want == got else 1)
PY
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

case $cmd in
check)
	list=$(inputs)
	n=$(($(echo "$list" | wc -l) * 3))
	echo "1..$n"
	i=0
	bad=0
	for in in $list; do
		s=$(stem "$in")
		for mode in default hta; do
			i=$((i + 1))
			if ! produce "$in" "$mode" "$tmp/$s" 2>"$tmp/err"; then
				echo "not ok $i $s $mode: the tools failed"
				sed 's/^/# /' "$tmp/err"
				bad=1
				continue
			fi
			ok=1
			for ext in findings.json md html; do
				if ! cmp -s "$exp/$s/$mode.$ext" "$tmp/$s/$mode.$ext"; then
					[[ $ok == 1 ]] && echo "not ok $i $s $mode: output differs from tests/golden/expected (review, then tests/golden/golden.sh regen)"
					ok=0
					show_diff "$exp/$s/$mode.$ext" "$tmp/$s/$mode.$ext" | head -40 | sed 's/^/# /'
				fi
			done
			[[ $ok == 1 ]] && echo "ok $i $s $mode" || bad=1
		done
		i=$((i + 1))
		if independent "$in" "$tmp/$s" >"$tmp/ind" 2>&1; then
			echo "ok $i $s: properties computed apart from the program hold"
		else
			echo "not ok $i $s: properties computed apart from the program"
			sed 's/^/# /' "$tmp/ind"
			bad=1
		fi
	done
	exit $bad
	;;
regen)
	[[ -d $kineto ]] || { echo "golden.sh: no $kineto" >&2; exit 1; }
	for in in $(inputs); do
		s=$(stem "$in")
		for mode in default hta; do
			produce "$in" "$mode" "$tmp/new/$s" || { echo "golden.sh: $in $mode: the tools failed" >&2; exit 1; }
		done
	done
	changed=0
	for f in $(cd "$tmp/new" && find . -type f | sort); do
		f=${f#./}
		if [[ ! -f $exp/$f ]]; then
			echo "== new: $f"
			changed=1
		elif ! cmp -s "$exp/$f" "$tmp/new/$f"; then
			echo "== changed: $f"
			show_diff "$exp/$f" "$tmp/new/$f"
			changed=1
		fi
	done
	if [[ -d $exp ]]; then
		for f in $(cd "$exp" && find . -type f | sort); do
			f=${f#./}
			[[ -f $tmp/new/$f ]] || { echo "== gone: $f"; changed=1; }
		done
	fi
	rm -rf "$exp"
	mkdir -p "$(dirname "$exp")"
	cp -r "$tmp/new" "$exp"
	[[ $changed == 0 ]] && echo "golden.sh: no change" || echo "golden.sh: expected/ rewritten; review the differences above and commit them with the change that caused them"
	;;
*)
	echo "usage: golden.sh check|regen [BUILD_DIR]" >&2
	exit 2
	;;
esac
