#!/usr/bin/env bats
# Planted truths (README.md): each workload's docstring states its answer;
# each test records it in $ISC_PYTHON_MODE (exact or sample), analyzes it
# and checks the claim the report makes against that answer.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	export MODE=${ISC_PYTHON_MODE:-exact}
	export W=$ISC_SRC/tests/truth
}

# record NAME [OUT [PYTHON [OPTION...]]]: tests/truth/NAME.py recorded (by
# PYTHON, default $PY, with the recorder's OPTIONs) and analyzed into
# $BATS_TEST_TMPDIR/OUT.json (OUT defaults to NAME)
record() {
	local name=$1 out=${2:-$1} py=${3:-$PY}
	shift "$(($# < 3 ? $# : 3))"
	run --separate-stderr "$RECORD" -q --python="$MODE" "$@" -o "$BATS_TEST_TMPDIR/$out.isc" -- "$py" "$W/$name.py"
	[ "$status" -eq 0 ]
	run --separate-stderr "$ANALYZE" -q -o "$BATS_TEST_TMPDIR/$out.json" "$BATS_TEST_TMPDIR/$out.isc"
	[ "$status" -eq 0 ]
	valid_findings "$BATS_TEST_TMPDIR/$out.json"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)): \(.verdict.sentence)"' "$BATS_TEST_TMPDIR/$out.json"
}

# torch_or_skip: the interpreter with torch, or skip saying none is here
torch_or_skip() {
	TPY=$(torch_python) || skip "no CPython with torch on this machine"
}

@test "lock_wait.py: a step waiting for another thread's lock is lock_wait, where it waited named" {
	record lock_wait
	F=$BATS_TEST_TMPDIR/lock_wait.json
	run jq -r .verdict.class "$F"
	[ "$output" = lock_wait ]
	run jq -r '.verdict.finding' "$F"
	[ "$output" = lock_wait ]
	# where it waited: the step loop, in the module of this file (the first row, or its Python caller)
	run jq -r '.findings[] | select(.id == "lock_wait") | .evidence.top[0] | if .kind == "python" then "\(.name) \(.file)" else .detail end' "$F"
	[[ "$output" == *"<module>"*"tests/truth/lock_wait.py"* ]]
}

@test "lock_wait.py: judged on the steps, where the work is" {
	record lock_wait
	# the holder, asleep while it holds the lock, is no work the iterations
	# leave out: of the busy samples (sample mode) or of the traced
	# threads' CPU time (exact mode), the steps hold most
	run jq -r '.findings[] | select(.id == "lock_wait") | .judged_on' "$BATS_TEST_TMPDIR/lock_wait.json"
	[ "$output" = iterations ]
}

@test "pure_python.py: arithmetic loops on ints are the interpreter's: no C time, no op row" {
	record pure_python
	F=$BATS_TEST_TMPDIR/pure_python.json
	# of the on-CPU time in iterations (python_ns + ops_ns: a loaded machine
	# adds off-CPU time), torch ops + other C code below 2 %
	run jq -r '.cpu.in_iterations.split | (.torch_ops_ns + .other_c_ns) < 0.02 * (.python_ns + .ops_ns)' "$F"
	[ "$output" = true ]
	# no op row at 1 % or more of the time in iterations
	run jq -r '[.cpu.top_functions_in_scopes[] | select(.kind == "op" and .self_pct >= 1) | .name] | join(",")' "$F"
	[ "$output" = "" ]
	# the three loop functions (one code object, loop) lead: loop is the top row
	run jq -r '.cpu.top_functions_in_scopes[0] | "\(.kind) \(.name)"' "$F"
	[ "$output" = "python loop" ]
}

@test "matmul_ops.py: six x @ w per step are torch ops (the matrix product named), never python_bound" {
	torch_or_skip
	record matmul_ops matmul_ops "$TPY"
	F=$BATS_TEST_TMPDIR/matmul_ops.json
	# op_compute_bound, or torch ops at least 80 % of the on-CPU time in iterations
	# (python_ns + ops_ns: on a loaded machine the verdict may be the CPU contention)
	run jq -r '.verdict.class == "op_compute_bound" or (.cpu.in_iterations.split | .torch_ops_ns >= 0.8 * (.python_ns + .ops_ns))' "$F"
	[ "$output" = true ]
	# from the first step's start to the last one's end the steps are all the work (the loop between
	# them is microseconds): the iterations hold it, whatever the interpreter's shutdown costs after
	# (sample mode counted the shutdown: 59-70 %, python_bound on the whole run once in CI). Exact
	# mode measures the share from the 20 Hz thread CPU samples, about 3 intervals in these 140 ms
	# of steps (57-67 % for the same work): not asserted there, a known weakness (issue 24's note)
	if [ "$MODE" = sample ]; then
		run jq -r '.cpu.in_iterations.share_pct >= 90' "$F"
		[ "$output" = true ]
	fi
	run jq -r '[.findings[] | select(.id == "python_bound")] | length' "$F"
	[ "$output" = 0 ]
	# the heaviest op row in iterations: the matrix product of a tensor, a torch op
	run jq -r '[.cpu.top_functions_in_scopes[] | select(.kind == "op")][0] | "\(.name) \(.file)"' "$F"
	echo "$output"
	[[ "$output" == *matmul*" torch"* ]]
}

@test "tokenizer_torch.py: a Python tokenizer in a process that imported torch runs no torch op" {
	torch_or_skip
	record tokenizer_torch tokenizer_torch "$TPY"
	F=$BATS_TEST_TMPDIR/tokenizer_torch.json
	# torch ops below 2 % of the on-CPU time in iterations
	run jq -r '.cpu.in_iterations.split | .torch_ops_ns < 0.02 * (.python_ns + .ops_ns)' "$F"
	[ "$output" = true ]
	run jq -r '[.findings[] | select(.id == "op_compute_bound")] | length' "$F"
	[ "$output" = 0 ]
}

@test "aa_linear.py: two identical runs have the same op rows, named by their callee" {
	torch_or_skip
	record aa_linear aa1 "$TPY"
	record aa_linear aa2 "$TPY"
	local r
	for r in aa1 aa2; do
		# the linear calls: a row named as exact mode names the callee
		run jq -r '[.cpu.top_functions_in_scopes[] | select(.kind == "op") | .name] | index("torch._C._nn.linear") != null' "$BATS_TEST_TMPDIR/$r.json"
		[ "$output" = true ]
	done
	# every op row at 5 % or more in one run has a row of the same key in the other
	run jq -rn --slurpfile a "$BATS_TEST_TMPDIR/aa1.json" --slurpfile b "$BATS_TEST_TMPDIR/aa2.json" '
		def keys(d): [d.cpu.top_functions_in_scopes[] | select(.kind == "op") | "\(.name)\t\(.file):\(.line)"];
		def big(d): [d.cpu.top_functions_in_scopes[] | select(.kind == "op" and .self_pct >= 5) | "\(.name)\t\(.file):\(.line)"];
		(big($a[0]) - keys($b[0])) + (big($b[0]) - keys($a[0])) | join(" | ")'
	echo "unmatched: $output"
	[ "$output" = "" ]
	# the comparison of the two: no op row of 5 % of an iteration appears or disappears
	run --separate-stderr "$ANALYZE" -q --baseline "$BATS_TEST_TMPDIR/aa1.json" -o "$BATS_TEST_TMPDIR/cmp.json" "$BATS_TEST_TMPDIR/aa2.json"
	[ "$status" -eq 0 ]
	run jq -r '.comparison as $c | [$c.contributors[] | select(.kind == "op" and .change != "changed"
		and ([.base_ns_per_iter, .ns_per_iter] | max) >= 0.05 * $c.base_ns_per_iter) | "\(.change) \(.name)"] | join(", ")' "$BATS_TEST_TMPDIR/cmp.json"
	echo "$output"
	[ "$output" = "" ]
}

@test "aa_linear.py: an exact run and a sampled run of it compare op row for op row, counts n/a where not counted" {
	torch_or_skip
	local m
	for m in exact sample; do
		run --separate-stderr "$RECORD" -q --python=$m -o "$BATS_TEST_TMPDIR/$m.isc" -- "$TPY" "$W/aa_linear.py"
		[ "$status" -eq 0 ]
		run --separate-stderr "$ANALYZE" -q -o "$BATS_TEST_TMPDIR/$m.json" "$BATS_TEST_TMPDIR/$m.isc"
		[ "$status" -eq 0 ]
	done
	run --separate-stderr "$ANALYZE" -q --baseline "$BATS_TEST_TMPDIR/exact.json" -o "$BATS_TEST_TMPDIR/x.json" "$BATS_TEST_TMPDIR/sample.json"
	[ "$status" -eq 0 ]
	valid_findings "$BATS_TEST_TMPDIR/x.json"
	# the linear calls are one row on both sides (not one appearing, one disappearing)
	run jq -r '[.comparison.contributors[] | select(.kind == "op" and .name == "torch._C._nn.linear") | .change] | join(",")' "$BATS_TEST_TMPDIR/x.json"
	[ "$output" = changed ]
	# exact mode counted its calls (2 a step), sample mode did not: null, never 0
	run jq -r '.comparison.contributors[] | select(.name == "torch._C._nn.linear") | "\(.base_calls_per_iter) \(.calls_per_iter) \(.more_calls_ns_per_iter)"' "$BATS_TEST_TMPDIR/x.json"
	[ "$output" = "2 null null" ]
}

@test "native_memset.py: the C library's memset holds the CPU time, named first and in the headline" {
	"$RECORD" -q --native=on --no-cuda -o "$BATS_TEST_TMPDIR/probe.isc" -- /bin/true 2>/dev/null ||
		skip "MACHINE ASSUMPTION NOT MET: perf_event_open refused here"
	record native_memset native_memset "$PY" --native=on
	F=$BATS_TEST_TMPDIR/native_memset.json
	run jq -r '.native.functions[0] | "\(.name) \(.library)"' "$F"
	[[ "$output" =~ ^__memset[a-z0-9_]*\ .*/libc\.so\.6$ ]]
	# most of the samples: the rest is start-up, the buffer's first touch and the loop's own code
	run jq '.native.functions[0].self_pct >= 70' "$F"
	[ "$output" = true ]
	# under fill (the line MEMSET when the Python sampler saw it; exact mode knows the function only)
	line=$(grep -n '# MEMSET' "$W/native_memset.py" | cut -d: -f1)
	def=$(grep -n '^def fill' "$W/native_memset.py" | cut -d: -f1)
	run jq -r '.native.functions[0].above[0].python | "\(.name) \(.line)"' "$F"
	[[ "$output" == "fill $line" || ( $MODE == exact && "$output" == "fill $def" ) ]]
	# the headline names it, in the rules' words
	name=$(jq -r '.native.functions[0].name' "$F")
	run jq -r --arg n "$name" '[.verdict.headline[] | .code // empty] | index($n) != null' "$F"
	[ "$output" = true ]
	run jq -r '.verdict.sentence' "$F"
	[[ "$output" == *"of the sampled CPU time is in $name (libc.so.6)"* ]]
}

@test "cpu_wait.py: each step's wait for a CPU beside CPU hogs (iterations.cpu_wait_ns) adds up to what the step's own schedstat says" {
	local hogs=() i
	for ((i = 0; i < $(nproc); i++)); do
		"$PY" -c 'while True: pass' >/dev/null 2>&1 3>&- &
		hogs+=($!)
	done
	export CPU_WAIT_OUT=$BATS_TEST_TMPDIR/truth.txt
	record cpu_wait
	kill "${hogs[@]}"
	F=$BATS_TEST_TMPDIR/cpu_wait.json
	# the steady steps (the spans after the warm-up) against the same steps' own figures
	run "$PY" -c 'import json,sys
it = json.load(open(sys.argv[1]))["iterations"]
truth = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
w, k = it["cpu_wait_ns"], it["warmup_spans"]
assert w is not None, "iterations.cpu_wait_ns is null (a span without a sample of its thread after it)"
assert len(w) == len(it["spans"]) == len(truth), (len(w), len(it["spans"]), len(truth))
est, exact, wall = sum(w[k:]), sum(t[1] for t in truth[k:]), sum(t[0] for t in truth[k:])
print("%.0f %.0f %.0f" % (est / 1e6, exact / 1e6, wall / 1e6))' "$F" "$CPU_WAIT_OUT"
	echo "$output"
	[ "$status" -eq 0 ]
	read -r est exact wall <<<"$output"
	echo "estimated $est ms, exact $exact ms of waits in $wall ms of steps"
	# the premise: the hogs kept the steps waiting (else there is nothing to measure)
	if [ "$((exact * 5))" -lt "$wall" ]; then
		skip "MACHINE ASSUMPTION NOT MET: the steps waited $exact ms of $wall (under 20 %)"
	fi
	# within 10 % and a sampling period (10 ms) at each of the two ends
	[ "$((est - exact))" -le "$((exact / 10 + 20))" ]
	[ "$((exact - est))" -le "$((exact / 10 + 20))" ]
}
