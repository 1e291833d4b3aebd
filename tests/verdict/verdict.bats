#!/usr/bin/env bats
# Verdict tests, CPU classes: purpose-built workloads with real torch
# (tests/verdict/*.py, each stating its ground truth at the top), recorded
# with iscope-record, merged and analyzed; each test asserts verdict.class
# and the top contributor of the finding behind the verdict (contract of
# issue 5: verdict.finding names a findings[] id, whose evidence.top[0] is
# the top contributor), not merely that a report exists.
#
# The measured signals each class rests on are printed with every test
# (visible with --print-errorlogs or bats --verbose-run), so a failure
# shows whether the signal or the rule moved.
#
# Tools come from $ISC_BUILD (default build/, relative to the repository);
# the interpreter is the one scripts/find-python.sh picks.
#
# ISC_PYTHON_MODE=sample records with iscope-record --python=sample (stack
# samples, no call spans; default exact).  The classes and the top
# contributors are asserted in both modes (a C call is named by its callee
# in both: torch.matmul); what needs call spans (off-CPU time
# and memory growth charged to a function, per-call counts) is asserted in
# exact mode and skipped, saying so, in sample mode.

bats_require_minimum_version 1.5.0

setup_file() {
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	ISC_BUILD=${ISC_BUILD:-build}
	[[ $ISC_BUILD == /* ]] || ISC_BUILD=$ROOT/$ISC_BUILD
	ISC_PY=$("$ROOT/scripts/find-python.sh" 2>"$BATS_FILE_TMPDIR/find-python.err") || ISC_PY=
	export ROOT ISC_BUILD ISC_PY
	export MODE=${ISC_PYTHON_MODE:-exact}
	export WL=$ROOT/tests/verdict
	export REC=$ISC_BUILD/tools/iscope-record/iscope-record
	export MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	export ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
}

setup() {
	local t
	for t in "$REC" "$MERGE" "$ANALYZE"; do
		if [[ ! -x $t ]]; then
			echo "missing tool: $t (build first, or set ISC_BUILD)" >&2
			return 1
		fi
	done
	if [[ -z $ISC_PY ]]; then
		cat "$BATS_FILE_TMPDIR/find-python.err" >&2
		return 1
	fi
}

# ---- helpers ---------------------------------------------------------------

# exact_only WHAT: skip, saying why, in sample mode (no call spans).
exact_only() {
	[ "$MODE" = exact ] || skip "--python=sample has no call spans: $1 (exact mode only)"
}

# charged_to NAME: the largest off-CPU reason's top function is NAME
# (exact mode); sample mode charges it to the scope, and says so.
charged_to() {
	if [ "$MODE" = exact ]; then
		[[ $fn == *$1 ]]
	else
		echo "sample mode: the blocked time is charged to the scope ($fn), not to $1"
	fi
}

# op_name OP CALLER: the name an op row has: the op, in both modes (sample
# mode reads the callee from the stack, issue 24; CALLER is its calling
# function, which sample mode gives as the row's caller).
op_name() {
	echo "$1"
}

# workload NAME: record tests/verdict/NAME.py once per file run (a second
# test of the same workload reuses it), merge and analyze it; sets F to the
# findings document.
workload() {
	local d=$BATS_FILE_TMPDIR/$1
	F=$d/findings.json
	[[ -s $F ]] && return 0
	mkdir -p "$d"
	cut -d' ' -f1 /proc/loadavg >"$d/load"
	# the machine around the recording, measured from outside it
	# (tests/lib/runqueue.py: other runnable threads, CPU pressure)
	local st=0 rec
	"$REC" --quiet --python="$MODE" -o "$d/trace.isc" -- "$ISC_PY" "$WL/$1.py" >"$d/out" 2>"$d/err" &
	rec=$!
	"$ROOT/tests/lib/runqueue.py" "$rec" "$d/machine.json"
	wait "$rec" || st=$?
	if [ "$st" -ne 0 ]; then
		echo "iscope-record: status $st"
		cat "$d/err"
		return 1
	fi
	set -o pipefail
	"$MERGE" "$d/trace.isc" | "$ANALYZE" >"$F.tmp"
	"$ROOT/tests/lib/validate_findings.py" "$F.tmp"
	mv "$F.tmp" "$F"
}

# quiet_machine NAME: the machine assumption of a single-threaded CPU class
# (python_bound, op_compute_bound, host_memory_bound): CPUs to spare for the
# workload. Other processes keeping more threads runnable than there are
# CPUs preempt it, and the recording rightly says thread_contention. Then
# the class test skips, saying so; its signal tests still run.  Measured
# by the CPU pressure during the recording (PSI "some") above 20 %, as the
# test read it around the recording (tests/lib/runqueue.py: the machine
# measured by the test, not what the program under test wrote; these
# workloads are single-threaded, so the pressure is others'): these
# workloads alone gave 0.4-1.2 %, beside one CPU hog 3.9-5.2 % (verdicts
# right), beside two 96 % (thread_contention, rightly; 2026-11-26, as
# the recorder read it). Without PSI, the 1-minute load average above the
# CPU count when NAME was recorded (which also counts the suite's previous
# workloads: it skipped three classes in a CI run at 2.2-2.5 on 2 CPUs).
quiet_machine() {
	local load ncpu psi
	psi=$(jq -r '.psi_some_pct // "none"' "$BATS_FILE_TMPDIR/$1/machine.json")
	if [[ $psi != none ]]; then
		if awk -v p="$psi" 'BEGIN { exit !(p > 20) }'; then
			skip "MACHINE ASSUMPTION NOT MET: $1 needs CPUs to spare; CPU pressure $psi % while it was recorded"
		fi
		return 0
	fi
	load=$(<"$BATS_FILE_TMPDIR/$1/load")
	ncpu=$(getconf _NPROCESSORS_ONLN)
	if awk -v l="$load" -v n="$ncpu" 'BEGIN { exit !(l > n) }'; then
		skip "MACHINE ASSUMPTION NOT MET: $1 needs CPUs to spare; load average $load on $ncpu CPUs when it was recorded"
	fi
}

# signals: the measured numbers the CPU classes rest on, one line.
signals() {
	jq -r '"signals: wall \(.summary.wall_ns / 1e9 | .*100|round/100) s; split python \(.cpu.split.python_pct) % ops \(.cpu.split.ops_pct) % off-CPU \(.cpu.split.off_cpu_pct) %; switches voluntary \(.cpu.split.voluntary_switches) involuntary \(.cpu.split.involuntary_switches); runnable mean \(.cpu.runnable_threads_mean // "n/a"); rss peak \(.memory.rss_peak_bytes / 1048576 | round) MiB, slope after warm-up \((.memory.rss_growth_after_warmup_bytes_per_s // 0) / 1048576 | .*10|round/10) MiB/s over \((.memory.after_warmup_span_ns // 0) / 1e9 | .*10|round/10) s; minor faults \(.memory.minor_faults); iterations \(.iterations.count), p50 \((.iterations.latency_ns.p50 // 0) / 1e6 | .*10|round/10) ms"' "$F"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)) finding \(.verdict.finding // "none"): \(.verdict.sentence)"' "$F"
	jq -r '"findings: \([.findings[]?.id] | join(" "))"' "$F"
}

# verdict_class: the class, for [ "$(verdict_class)" = X ].
verdict_class() {
	jq -r '.verdict.class' "$F"
}

# top0: the top contributor of the finding behind the verdict into
# name, kind, file, line, detail (globals); fails, saying why, when the
# verdict names no finding or the finding has no top[].
top0() {
	local row
	row=$(jq -r '.verdict.finding as $id | [.findings[]? | select(.id == $id)][0].evidence.top[0]? // empty
		| [.name, .kind, (.file // ""), (.line // 0 | tostring), (.detail // "")] | join("\u001f")' "$F")
	if [[ -z $row ]]; then
		echo "no top contributor: verdict.finding $(jq -c '.verdict.finding' "$F"), findings $(jq -c '[.findings[]?.id]' "$F")"
		return 1
	fi
	IFS=$'\x1f' read -r name kind file line detail <<<"$row"
	echo "top[0]: $name ($kind) $file:$line${detail:+ [$detail]}"
}

# mentions WORD: WORD occurs in the verdict sentence or in the evidence of
# the finding behind the verdict (a caller named in top[].detail, or as
# another top[] entry).
mentions() {
	jq -e --arg w "$1" '.verdict.finding as $id
		| ([.verdict.sentence] + [.findings[]? | select(.id == $id) | .evidence.top[]? | .name, .detail, .file])
		| map(select(type == "string")) | any(contains($w))' "$F" >/dev/null
}

# scoped_top: "name kind self_pct" of the function with the most self
# time while an iteration scope was open (a measured field: it holds
# whatever the rules decide, so a failure here means the workload lost
# its signal, not that a rule changed).
scoped_top() {
	jq -r '.cpu.top_functions_in_scopes[0] | "\(.name)\t\(.kind)\t\(.self_pct)"' "$F"
}

# def_line FILE FUNC: the line of "def FUNC" in a workload.
def_line() {
	grep -n "^ *def $2(" "$WL/$1" | head -n 1 | cut -d: -f1
}

# ---- python_bound ------------------------------------------------------------

@test "python_bound: per-element Python loop; verdict python_bound, top contributor score_tokens (file:line)" {
	workload python_bound
	quiet_machine python_bound
	signals
	[ "$(verdict_class)" = python_bound ]
	top0
	[[ $name == *score_tokens ]]
	[ "$kind" = python ]
	[[ $file == *python_bound.py ]]
	[ "$line" -eq "$(def_line python_bound.py score_tokens)" ]
}

@test "python_bound: the signal: score_tokens holds most of the step as interpreter time" {
	workload python_bound
	IFS=$'\t' read -r n k pct < <(scoped_top)
	echo "scoped top: $n $k $pct %"
	[ "$n" = score_tokens ]
	[ "$k" = python ]
	jq -e '.cpu.top_functions_in_scopes[0].self_pct > 80' "$F"
}

# ---- op_compute_bound --------------------------------------------------------

@test "op_compute_bound: large matmuls; verdict op_compute_bound, top contributor torch.matmul from forward" {
	workload op_compute_bound
	quiet_machine op_compute_bound
	signals
	[ "$(verdict_class)" = op_compute_bound ]
	top0
	[ "$name" = "$(op_name torch.matmul forward)" ]
	[ "$kind" = op ]
	mentions forward
}

# Start-up apart (issue 18 item 3): importing torch (about 1 s of C time in
# _imp.create_dynamic and Python in importlib on a quiet machine) can outweigh
# the 30 steps (0.7 s); the verdict judges the steps only (cpu.in_iterations),
# and says so.  Ground truth (the workload's docstring): about 99 % of the
# step is torch ops, so over 80 % of the on-CPU time inside iterations is.
@test "op_compute_bound: judged on the iterations, not the start-up: in-iteration split mostly torch ops, no finding names the import machinery" {
	workload op_compute_bound
	signals
	jq -r '"startup \(.run.startup_ns / 1e6 | round) ms; in iterations: torch ops \(.cpu.in_iterations.split.torch_ops_pct) %, python \(.cpu.in_iterations.split.python_pct) %, other C \(.cpu.in_iterations.split.other_c_pct) %"' "$F"
	jq -e '.cpu.in_iterations.scope == "step"' "$F"
	# of the on-CPU time (preemption on a loaded machine adds off-CPU time, not Python)
	jq -e '.cpu.in_iterations.split | .torch_ops_ns > 0.8 * (.python_ns + .torch_ops_ns + .other_c_ns)' "$F"
	if [ "$MODE" = exact ]; then # sample mode: no call spans, no op callers
		jq -e '.cpu.in_iterations.top_op_callers[0].name == "forward"' "$F"
	fi
	# every CPU-class finding says what it judged (op_compute_bound's at least: one or more)
	jq -e '[.findings[] | select(.id | IN("python_bound", "op_compute_bound", "thread_contention", "io_wait", "host_memory_bound", "gil_contention")) | .judged_on == "iterations"] | length > 0 and all' "$F"
	run jq -r '[.findings[] | tostring | select(test("_imp\\.create_dynamic|find_spec|<frozen|_find_and_load"))] | length' "$F"
	[ "$output" -eq 0 ]
	run jq -r '[.verdict.limits[].reason | select(contains("start-up"))] | length' "$F"
	[ "$output" -eq 0 ]
}

@test "op_compute_bound: the signal: torch.matmul holds most of the step, called from forward" {
	workload op_compute_bound
	IFS=$'\t' read -r n k pct < <(scoped_top)
	# the caller inside the iterations (the whole run's top_op_callers
	# holds start-up's imports too): exact mode's call spans, or in sample
	# mode (no call spans) the op row's own calling function
	run jq -r '.cpu.in_iterations.top_op_callers[0].name // .cpu.top_functions_in_scopes[0].caller.name' "$F"
	echo "scoped top: $n $k $pct %; op caller in the iterations: $output"
	[ "$n $k" = "$(op_name torch.matmul forward) op" ]
	jq -e '.cpu.top_functions_in_scopes[0].self_pct > 80' "$F"
	[ "$output" = forward ]
}

# ---- thread_contention -------------------------------------------------------

# Machine assumption of the thread_contention tests: thread_contention.py
# runs 3 x os.cpu_count() compute threads; up to 16 CPUs that is a
# contended but recordable load. Above, the tests skip, saying so.
contention_machine() {
	NCPU=$(python3 -c 'import os; print(os.cpu_count() or 1)')
	((NCPU <= 16)) || skip "MACHINE ASSUMPTION NOT MET: thread_contention needs <= 16 CPUs (3 compute threads per CPU), this machine has $NCPU"
}

# contended_by_others NAME (after workload NAME): the second premise of
# the thread_contention tests: the workload's own threads are what the
# CPUs time-slice. Beside one CPU hog on 2 CPUs the class and the signals
# held (thread_contention.py); beside one per CPU they did not in 4 of 4
# runs (issue 28: the handlers got a fifth of the CPU, and the GIL holder,
# preempted by the hogs, left the others blocked: blocked 24 % of the
# off-CPU time, verdict op_compute_bound). Measured around the recording
# by tests/lib/runqueue.py: the mean number of other runnable threads;
# more than half the CPUs, and the tests skip, saying so.
contended_by_others() {
	local ext
	ext=$(jq -r '.external_runnable_mean // 0' "$BATS_FILE_TMPDIR/$1/machine.json")
	echo "machine: $(cat "$BATS_FILE_TMPDIR/$1/machine.json")"
	if awk -v e="$ext" -v n="$NCPU" 'BEGIN { exit !(e > n / 2) }'; then
		skip "MACHINE ASSUMPTION NOT MET: $1 needs its own threads to be the CPUs' load; $ext other runnable threads on average on $NCPU CPUs while it was recorded (> $NCPU / 2)"
	fi
}

@test "thread_contention: 3 compute threads per core; verdict thread_contention, top contributor the preempted matmul" {
	contention_machine
	workload thread_contention
	contended_by_others thread_contention
	signals
	jq -r '"threads: \([.processes[0].threads[] | select(.traced) | "\(.name) cpu \(.cpu_ns / 1e6 | round) ms off-CPU \(.off_cpu_ns / 1e6 | round) ms"] | join(", "))"' "$F"
	[ "$(verdict_class)" = thread_contention ]
	top0
	# the op that was preempted, or its caller
	[[ $name == torch.matmul || $name == *handle_request ]]
}

@test "thread_contention: the finding names the Python caller of the preempted op, handle_request" {
	contention_machine
	workload thread_contention
	contended_by_others thread_contention
	top0
	[[ $name == *handle_request ]] || mentions handle_request
}

# The thread samples, not the switch counts, tell preempted from blocked:
# the voluntary switches of this workload (GIL hand-offs) range from 26 to
# 360 between runs, against 210-320 involuntary ones.
@test "thread_contention: the signal: off-CPU dominates, more runnable threads than cores, samples rarely blocked" {
	contention_machine
	workload thread_contention
	contended_by_others thread_contention
	signals
	jq -r '"state samples \(.cpu.state_samples), blocked \(.cpu.blocked_ns / 1e6 | round) ms of \(.cpu.split.off_cpu_ns / 1e6 | round) ms off-CPU"' "$F"
	jq -e '.cpu.split.off_cpu_pct > 40' "$F"
	jq -e '.cpu.runnable_threads_mean > .environment.ncpu' "$F"
	jq -e '.cpu.state_samples >= 20' "$F"
	jq -e '.cpu.blocked_ns < 0.2 * .cpu.split.off_cpu_ns' "$F"
	[ "$(jq '[.processes[0].threads[] | select(.traced)] | length' "$F")" -eq $((3 * NCPU)) ]
}

# ---- host_memory_bound -------------------------------------------------------

@test "host_memory_bound: a cache that is never trimmed; verdict host_memory_bound, top contributor cache_activations" {
	exact_only "the growth is charged to the function running when RSS grew"
	workload host_memory_bound
	quiet_machine host_memory_bound
	signals
	[ "$(verdict_class)" = host_memory_bound ]
	top0
	[[ $name == *cache_activations ]]
	[[ $file == *host_memory_bound.py ]]
	# from allocation samples the line that allocated what is kept (the
	# clone appended to the cache); from RSS samples the function's first line
	if [ "$(jq -r '.memory.growth_sites_source // "rss_samples"' "$F")" = allocation_samples ]; then
		[ "$line" -eq "$(grep -n 'cache.append(act\[:KEEP_FLOATS\].clone())' "$WL/host_memory_bound.py" | cut -d: -f1)" ]
	else
		[ "$line" -eq "$(def_line host_memory_bound.py cache_activations)" ]
	fi
}

@test "host_memory_bound: the growth finding is reported whatever the verdict" {
	workload host_memory_bound
	signals
	run jq -r '[.findings[] | select(.id == "rss_growth" or .id == "host_memory_bound") | .id] | first // empty' "$F"
	echo "growth finding: $output"
	[ -n "$output" ]
}

@test "host_memory_bound: the signal: steady growth after warm-up, fresh pages faulted in every step" {
	workload host_memory_bound
	signals
	# 2 MiB kept a step (host_memory_bound.py): the slope times the span
	# after warm-up, per step in it, within 25 %; per second it follows the
	# machine's speed (71 MiB/s at 28 ms a step, 8.6 MiB/s at 231 ms under
	# other jobs' load, issue 28), so only the growth rule's floor, 1 MiB/s
	jq -r '"growth a step after warm-up: \(.memory.rss_growth_after_warmup_bytes_per_s * .memory.after_warmup_span_ns / 1e9 / (.iterations.count - (.iterations.warmup_spans // 1)) / 1048576 * 100 | round / 100) MiB"' "$F"
	jq -e '.memory.rss_growth_after_warmup_bytes_per_s * .memory.after_warmup_span_ns / 1e9 / (.iterations.count - (.iterations.warmup_spans // 1)) | . > 1.5 * 1048576 and . < 2.5 * 1048576' "$F"
	jq -e '.memory.rss_growth_after_warmup_bytes_per_s > 1048576' "$F"
	jq -e '.memory.after_warmup_span_ns >= 5e9' "$F"
	# 48 MiB of fresh pages a step: over 2 million minor faults in 220 steps
	jq -e '.memory.minor_faults > 1000000' "$F"
	IFS=$'\t' read -r n k pct < <(scoped_top)
	echo "scoped top: $n $k $pct %"
	[ "$n" = "$(op_name torch.ones cache_activations)" ]
}

@test "host_memory_bound: growth is attributed to cache_activations (memory.growth_top)" {
	exact_only "memory.growth_top charges RSS growth to the innermost Python function"
	workload host_memory_bound
	run jq -r '.memory.growth_top[0] | [.name, .file, .line, .growth_bytes] | map(tostring) | join("\u001f")' "$F"
	echo "growth_top[0]: $output"
	IFS=$'\x1f' read -r name file line bytes <<<"$output"
	[[ $name == *cache_activations ]]
	[[ $file == *host_memory_bound.py ]]
	[ "$bytes" -gt $((100 << 20)) ]
}

# ---- io_wait -----------------------------------------------------------------

@test "io_wait: step blocked on a pipe read; verdict io_wait, top contributor the read in read_request" {
	workload io_wait
	signals
	[ "$(verdict_class)" = io_wait ]
	top0
	# the blocking call named with its caller, or the caller itself
	if [[ $name == posix.read || $name == os.read ]]; then
		mentions read_request
	else
		[[ $name == *read_request ]]
	fi
}

@test "io_wait: the signal: the step is blocked in os.read" {
	workload io_wait
	signals
	IFS=$'\t' read -r n k pct < <(scoped_top)
	echo "scoped top: $n $k $pct %"
	[ "$n" = "$(op_name posix.read read_request)" ]
	jq -e '.cpu.top_functions_in_scopes[0].self_pct > 60' "$F"
	jq -e '.cpu.split.off_cpu_pct > 40' "$F"
}

@test "io_wait: blocking is attributed to os.read inside read_request (cpu.off_cpu_top)" {
	exact_only "cpu.off_cpu_top charges blocked time to the innermost call"
	workload io_wait
	run jq -r '.cpu.off_cpu_top[0] | [.name, (.python.name // ""), .blocked_ns] | map(tostring) | join("\u001f")' "$F"
	echo "off_cpu_top[0]: $output"
	IFS=$'\x1f' read -r name py blocked <<<"$output"
	[[ $name == posix.read || $name == os.read ]]
	[[ $py == *read_request ]]
	[ "$blocked" -gt 1000000000 ]
}

# ---- why off-CPU: off_cpu_reasons (issue 14) ---------------------------------
# The blocking workloads below are robust to a loaded machine by
# construction: their waits (a pipe, a socket, a sleep, a disk read, a
# pool's barrier, the GIL) last as long whatever the CPUs do, and they
# are the largest share of each step.

# reason_top: "reason pct top_python_function" of the largest off-CPU reason.
reason_top() {
	jq -r '.cpu.off_cpu_reasons[0] | "\(.reason) \(.pct) \(.top[0].name // "-")"' "$F"
}

@test "io_wait (pipe): the blocked time is io_pipe, charged to read_request" {
	workload io_wait
	read -r reason pct fn < <(reason_top)
	echo "largest reason: $reason $pct % ($fn)"
	[ "$reason" = io_pipe ]
	charged_to read_request
	jq -e '.cpu.off_cpu_reasons[0].pct > 80' "$F"
	jq -e '.cpu.off_cpu_top[0].reason == "io_pipe"' "$F"
}

@test "io_socket: step blocked on a loopback socket; verdict io_wait, top contributor socket.recv from fetch_request" {
	workload io_socket
	signals
	[ "$(verdict_class)" = io_wait ]
	top0
	if [[ $name == *recv* ]]; then
		mentions fetch_request
	else
		[[ $name == *fetch_request ]]
	fi
}

@test "io_socket: the blocked time is io_network, charged to fetch_request" {
	workload io_socket
	read -r reason pct fn < <(reason_top)
	echo "largest reason: $reason $pct % ($fn)"
	[ "$reason" = io_network ]
	charged_to fetch_request
	jq -e '.cpu.off_cpu_reasons[0].pct > 80' "$F"
}

@test "sleep_wait: a step that sleeps; verdict io_wait, top contributor time.sleep from throttle" {
	workload sleep_wait
	signals
	[ "$(verdict_class)" = io_wait ]
	top0
	if [ "$name" = time.sleep ]; then
		mentions throttle
	else
		[[ $name == *throttle ]]
	fi
}

@test "sleep_wait: the blocked time is sleep, charged to throttle" {
	workload sleep_wait
	read -r reason pct fn < <(reason_top)
	echo "largest reason: $reason $pct % ($fn)"
	[ "$reason" = sleep ]
	charged_to throttle
	jq -e '.cpu.off_cpu_reasons[0].pct > 80' "$F"
}

@test "pool_contention: callers of oversubscribed intra-op pools; verdict thread_contention, top contributor the linear op" {
	workload pool_contention
	signals
	[ "$(verdict_class)" = thread_contention ]
	top0
	[[ $name == torch._C._nn.linear || $name == *forward ]]
}

@test "pool_contention: the callers wait at their pools' barriers (thread_wait inside torch ops); the untraced pools are named with their size" {
	workload pool_contention
	read -r reason pct fn < <(reason_top)
	echo "largest reason: $reason $pct % ($fn); pools: $(jq -c '[.cpu.thread_pools[] | [.name, .traced, .threads, .futex]]' "$F")"
	[ "$reason" = thread_wait ]
	jq -e '.cpu.off_cpu_reasons[0].in_torch_ops_ns > 0.8 * .cpu.off_cpu_reasons[0].ns' "$F"
	jq -e '.cpu.runnable_threads_mean > .environment.ncpu' "$F"
	# torch.set_num_threads(8): each caller's OpenMP team has 7 workers, untraced, parked on one futex
	jq -e '[.cpu.thread_pools[] | select(.traced == false and .futex != null and .threads == 7)] | length >= 2' "$F"
	jq -e '[.findings[] | select(.id == "io_wait")] | length == 0' "$F"
	jq -e '.findings[] | select(.id == "thread_contention") | .evidence.metrics.pool_threads == 7' "$F"
}

@test "gil_contention: threads of pure Python; verdict gil_contention, top contributor tokenize" {
	workload gil_contention
	signals
	[ "$(verdict_class)" = gil_contention ]
	top0
	[[ $name == *tokenize ]]
	[ "$kind" = python ]
	[ "$line" -eq "$(def_line gil_contention.py tokenize)" ]
}

@test "gil_contention: the blocked time is gil, in every tokenizer thread" {
	workload gil_contention
	read -r reason pct fn < <(reason_top)
	echo "largest reason: $reason $pct % ($fn)"
	[ "$reason" = gil ]
	charged_to tokenize
	# every tokenizer thread (7 or more: 4 x CPUs in all, the main thread included, which may
	# finish its few steps within one 0.2 s turn and so is not required)
	jq -e '[.processes[0].threads[] | select(.name | startswith("tokenizer-"))] | length >= 7' "$F"
	jq -e '[.processes[0].threads[] | select(.name | startswith("tokenizer-")) | .gil_wait_ns > 0] | length >= 7 and all' "$F"
	# What else is blocked time, by construction: the main thread's waits in
	# Thread.start() for each new thread to take the GIL, a lock's
	# (thread_wait, rightly: charged to Condition.wait). So gil holds more
	# than 80 % of the blocked time: 82.6-90.8 % in 14 runs, both modes, on
	# this machine under other sessions' load (2026-11-27; thread_wait
	# 9-17 %, nearly all of it Condition.wait's). This was a skipped KNOWN
	# FAILURE (79.35 % once in exact mode, 2026-11-25: GIL waits at the end
	# of a C call count as thread_wait until the GIL's futex word is
	# learned, iscope-analyze(1)); it no longer reproduces, so it is an
	# ordinary check: a failure is a failure (issue 28).
	jq -e '.cpu.off_cpu_reasons[0].pct > 80' "$F"
	jq -e '.cpu.off_cpu_reasons[] | select(.reason == "thread_wait") | .top[0].name == "Condition.wait"' "$F"
}

@test "page_in: a memory-mapped file read page by page; verdict host_memory_bound, top contributor load_weights" {
	workload page_in
	signals
	[ "$(verdict_class)" = host_memory_bound ]
	top0
	[[ $name == *load_weights ]]
	[[ $file == *page_in.py ]]
}

@test "page_in: the thread waits in page faults (page_in), charged to load_weights" {
	workload page_in
	# the premise, measured by the workload itself (wall minus thread CPU
	# time of load_weights): locally 1.66-1.68 s of 3.1 s; a CI machine
	# once served every fault from memory (48544 major faults, no blocked
	# thread sample at all), and waits nobody saw cannot be charged
	local blocked
	blocked=$(sed -n 's/.*load_weights blocked \([0-9.]*\) s of.*/\1/p' "$BATS_FILE_TMPDIR/page_in/out")
	echo "load_weights blocked ${blocked:-?} s (the workload's own measure)"
	[ -n "$blocked" ]
	if awk -v b="$blocked" 'BEGIN { exit !(b < 0.5) }'; then
		skip "MACHINE ASSUMPTION NOT MET: the page faults kept load_weights off CPU $blocked s (< 0.5 s, 10 thread samples at 20 Hz): the disk served them without waiting"
	fi
	jq -r '"reasons: \([.cpu.off_cpu_reasons[] | "\(.reason) \(.pct)"] | join(", ")); major faults \(.memory.major_faults)"' "$F"
	run jq -r '.cpu.off_cpu_reasons[] | select(.reason == "page_in") | .top[0].name' "$F"
	fn=$output
	charged_to load_weights
	jq -e '.memory.major_faults > 10000' "$F"
}
