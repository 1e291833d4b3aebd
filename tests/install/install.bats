#!/usr/bin/env bats
# Installed as a user would: `meson install` into a temporary DESTDIR, then
# the installed tools (not the build tree's) record a real torch workload,
# finding their Python agent relative to their own prefix.  Without the
# agent, iscope-record says so once and the report shows it.

bats_require_minimum_version 1.5.0

setup_file() {
	ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
	export STAGE=$BATS_FILE_TMPDIR/stage
	meson install -C "$ISC_BUILD" --no-rebuild --destdir "$STAGE" >"$BATS_FILE_TMPDIR/install.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/install.log"; return 1; }
	set -o pipefail # a failed meson introspect fails the assignment
	PREFIX=$(meson introspect "$ISC_BUILD" --buildoptions | jq -r '.[] | select(.name == "prefix") | .value')
	LIBDIR=$(meson introspect "$ISC_BUILD" --buildoptions | jq -r '.[] | select(.name == "libdir") | .value')
	CUPTI=$(meson introspect "$ISC_BUILD" --targets | jq -r '[.[] | select(.name == "iscope-cuda")] | length')
	export P=$STAGE$PREFIX LIBDIR CUPTI
}

setup() {
	ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	unset INFERSCOPE_AGENT_DIR INFERSCOPE_CUDA_AGENT PYTHONPATH
	T=$BATS_TEST_TMPDIR
	cd "$T"
}

@test "meson install puts the tools, man pages, the Python agent and (when built) the CUDA agent under the prefix" {
	for t in iscope-record iscope-merge iscope-analyze iscope-report inferscope; do
		[ -x "$P/bin/$t" ]
	done
	for m in man1/iscope-record.1 man1/iscope-merge.1 man1/iscope-analyze.1 man1/iscope-report.1 man1/inferscope.1 \
		man5/iscope-trace.5 man5/iscope-timeline.5; do
		[ -s "$P/share/man/$m" ]
	done
	[ -f "$P/$LIBDIR/inferscope/python/_agent.abi3.so" ]
	[ -f "$P/$LIBDIR/inferscope/python/sitecustomize.py" ]
	[ -f "$P/$LIBDIR/inferscope/python/inferscope/__init__.py" ]
	if [ "$CUPTI" -gt 0 ]; then
		[ -f "$P/$LIBDIR/inferscope/libiscope-cuda.so" ]
	fi
}

@test "the installed pipeline records a torch workload with Python events, finding its agent beside its prefix" {
	run --separate-stderr "$P/bin/iscope-record" -o t.isc -- /usr/bin/python3 "$ISC_SRC/tests/e2e/workloads/hot_function.py" 3
	[ "$status" -eq 0 ]
	[[ $stderr != *"Python agent"* ]]
	"$P/bin/iscope-merge" -o t.istl t.isc
	"$P/bin/iscope-analyze" -q -o f.json t.istl
	"$P/bin/iscope-report" -o r.md f.json
	# the workload's own Python function and a torch op, from the agent
	[ "$(jq -r '[.cpu.top_functions[] | select(.kind == "python" and .name == "crunch")] | length' f.json)" -eq 1 ]
	[ "$(jq -r '[.cpu.top_functions[] | select(.kind == "op")] | length' f.json)" -gt 0 ]
	# the installed inferscope package's scope("step") ran 3 times
	[ "$(jq -r '.iterations.name' f.json)" = step ]
	grep -q 'crunch' r.md
	[ "$(jq -r '[.summary.warnings[] | select(.kind == "no_python_agent")] | length' f.json)" -eq 0 ]
}

@test "without its Python agent, the installed recorder says so once, records a WARNING, and the report shows it" {
	cp -a "$P" moved
	rm -rf "moved/$LIBDIR/inferscope/python"
	# exact mode: without the agent no call is counted (its stack sampler,
	# which needs no agent, may still catch a frame: a row with calls null)
	run --separate-stderr moved/bin/iscope-record --python=exact -o t.isc -- /usr/bin/python3 -c 'print(sum(range(10)))'
	[ "$status" -eq 0 ]
	[ "$output" = 45 ]
	[ "$(grep -c 'no Python agent' <<<"$stderr")" -eq 1 ]
	moved/bin/iscope-analyze -q -o f.json t.isc
	[ "$(jq -r '[.summary.warnings[] | select(.kind == "no_python_agent")] | length' f.json)" -eq 1 ]
	[ "$(jq -r '[.cpu.top_functions[] | select(.kind == "python" and .calls != null)] | length' f.json)" -eq 0 ]
	moved/bin/iscope-report f.json > r.md
	grep -A3 '^Recording notes' r.md | grep -q 'no Python agent'
}

@test "a Python agent the workload cannot load (PYTHONPATH replaced, python -E) is reported; a non-Python workload is not" {
	run --separate-stderr "$P/bin/iscope-record" -o e.isc -- /usr/bin/python3 -E -c pass
	[ "$status" -eq 0 ]
	[ "$(grep -c 'Python agent .* was not loaded' <<<"$stderr")" -eq 1 ]
	run --separate-stderr "$P/bin/iscope-record" -o p.isc -- env PYTHONPATH=/nowhere /usr/bin/python3 -c pass
	[ "$status" -eq 0 ]
	[ "$(grep -c 'was not loaded' <<<"$stderr")" -eq 1 ]
	"$P/bin/iscope-analyze" -q -o f.json p.isc
	[ "$(jq -r '[.summary.warnings[] | select(.kind == "no_python_agent")] | length' f.json)" -eq 1 ]
	run --separate-stderr "$P/bin/iscope-record" -o s.isc -- sh -c true
	[ "$status" -eq 0 ]
	[[ $stderr != *"Python agent"* ]]
	"$P/bin/iscope-analyze" -q -o g.json s.isc
	[ "$(jq -r '[.summary.warnings[] | select(.kind == "no_python_agent")] | length' g.json)" -eq 0 ]
}
