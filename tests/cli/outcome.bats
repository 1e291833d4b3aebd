#!/usr/bin/env bats
# How the run ended, first (issue 18, deliverable 2): the agent records the
# unhandled exception (EXCEPTION, formats/trace.md §6.1) and the findings'
# `run` section and the report's first line say what the run was before
# any bottleneck.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	PYT=$(torch_python)
}

teardown() {
	rm -rf "$T"
}

@test "an unhandled exception in the main thread is recorded, and Python still prints it" {
	printf 'import os\ndef load():\n    import nosuchmodule_xyz\nload()\n' > "$T/fail.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/fail.py"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"ModuleNotFoundError: No module named 'nosuchmodule_xyz'"* ]]
	run "$MERGE" --dump "$T/t.isc"
	[ "$status" -eq 0 ]
	[ "$(grep -c ' X ' <<< "$output")" -eq 1 ]
	[[ "$output" == *"P1 T1 X ModuleNotFoundError $T/fail.py:3 load: No module named 'nosuchmodule_xyz'"* ]]
}

@test "an unhandled exception in a thread is recorded on that thread; SystemExit is not an exception" {
	printf 'import sys, threading\ndef work():\n    raise ValueError("bad\\nvalue")\nt = threading.Thread(target=work)\nt.start(); t.join()\nsys.exit(3)\n' > "$T/thr.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/thr.py"
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"ValueError: bad"* ]]
	run "$MERGE" --dump "$T/t.isc"
	[ "$(grep -c ' X ' <<< "$output")" -eq 1 ]
	[[ "$output" == *"P1 T2 X ValueError $T/thr.py:3 work: bad value"* ]]
}

@test "an exception's place, function and message are kept whole: a 150-byte path, a 90-byte qualified name, a 315-byte message" {
	# built here: the file's path, the method's qualified name and the message's length are known before the run
	D="$T/$(printf 'd%.0s' $(seq 1 60))/$(printf 'e%.0s' $(seq 1 60))"
	mkdir -p "$D"
	printf 'class AVeryLongClassNameThatKeepsGoingOnAndOn:\n    def a_method_with_a_very_long_name_indeed_to_test_cuts(self):\n        raise RuntimeError("m" * 300 + " end of message")\nAVeryLongClassNameThatKeepsGoingOnAndOn().a_method_with_a_very_long_name_indeed_to_test_cuts()\n' > "$D/long_module_name_for_a_test.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$D/long_module_name_for_a_test.py"
	[ "$status" -eq 1 ]
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	run jq -r '.run.exception.type' "$T/f.json"
	[ "$output" = RuntimeError ]
	run jq -r '.run.exception.file' "$T/f.json"
	[ "$output" = "$D/long_module_name_for_a_test.py" ]
	run jq -r '.run.exception.function' "$T/f.json"
	[ "$output" = "AVeryLongClassNameThatKeepsGoingOnAndOn.a_method_with_a_very_long_name_indeed_to_test_cuts" ]
	run jq -r '.run.exception.line' "$T/f.json"
	[ "$output" = 3 ]
	run jq -r '.run.exception.message | length' "$T/f.json"
	[ "$output" = 315 ]
	run jq -r '.run.exception.message | endswith("m end of message")' "$T/f.json"
	[ "$output" = true ]
	# the dump line of the record, as for the short form
	run "$MERGE" --dump "$T/t.isc"
	[[ "$output" == *"X RuntimeError $D/long_module_name_for_a_test.py:3 AVeryLongClassNameThatKeepsGoingOnAndOn.a_method_with_a_very_long_name_indeed_to_test_cuts: mmm"*"m end of message"* ]]
}

@test "an exception's path longer than 4 kB keeps its end (the file's name) and says how much was left out" {
	# a code object's file name is any string: here 5006 bytes, "/", 4989 p, "/tail_of_path.py";
	# its last 4096 bytes are 4080 p and the 16 bytes of "/tail_of_path.py", 910 bytes left out
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" -c '
name = "/" + "p" * 4989 + "/tail_of_path.py"
exec(compile("def f():\n    raise KeyError(\"k\")\nf()\n", name, "exec"))'
	[ "$status" -eq 1 ]
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	run jq -r '.run.exception.file' "$T/f.json"
	[ "$output" = "[910 bytes left out] $(printf 'p%.0s' $(seq 1 4080))/tail_of_path.py" ]
	run jq -r '.run.exception.function' "$T/f.json"
	[ "$output" = f ]
	run jq -r '.run.exception.line' "$T/f.json"
	[ "$output" = 2 ]
}

@test "a user's own sys.excepthook still runs after ours" {
	printf 'import sys\nsys.excepthook = lambda t, v, tb: print("mine:", t.__name__)\nraise KeyError("k")\n' > "$T/hook.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/hook.py"
	[ "$status" -eq 1 ]
	[[ "$output" == *"mine: KeyError"* ]]
}

@test "a failed run: run.outcome failed with the exception, the report's first line says so" {
	printf 'import os\ndef load():\n    import nosuchmodule_xyz\nload()\n' > "$T/fail.py"
	# iscope-record(1), EXIT STATUS: the workload's (Python's 1 for an uncaught exception)
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/fail.py"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"ModuleNotFoundError: No module named 'nosuchmodule_xyz'"* ]]
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	run jq -r '[.run.outcome, .run.exit_status, .run.exception.type, .run.exception.function, .run.exception.line, .run.exception.main_thread] | @tsv' "$T/f.json"
	[ "$output" = "failed	1	ModuleNotFoundError	load	3	true" ]
	# the confidence is bounded with the reason
	run jq -r '.verdict.limits[0].factor, .verdict.limits[0].reason' "$T/f.json"
	[ "${lines[0]}" = 0.5 ]
	[[ "${lines[1]}" == "the run failed (ModuleNotFoundError: No module named 'nosuchmodule_xyz')"* ]]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	[[ "$(sed -n 3p "$T/r.md")" == '**The run failed: `ModuleNotFoundError` (No module named'* ]]
	# its Python time is the import machinery's: no rewrite of importlib is suggested
	run jq -r '.findings[] | select(.id == "python_bound") | .suggestion | .action + " " + .rationale' "$T/f.json"
	echo "# python_bound suggestion: $output" >&3
	[[ -z "$output" || "$output" == "The Python time is in the standard library's"*"is not code of yours"* || "$output" == *"($T/fail.py:"* ]]
	run grep -c 'FileFinder.find_spec.*batched torch\|batched torch.*_bootstrap' "$T/r.md"
	[ "$output" = 0 ]
}

@test "a killed run: outcome killed, signal, first line" {
	# iscope-record(1), EXIT STATUS: 128 plus the signal that killed the workload
	run "$RECORD" -q -o "$T/t.isc" -- "$PY" -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'
	[ "$status" -eq 143 ]
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	run jq -r '[.run.outcome, .run.signal, .run.exit_status] | @tsv' "$T/f.json"
	[ "$output" = "killed	15	143" ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	[[ "$(sed -n 3p "$T/r.md")" == "**The workload was killed by signal 15 (exit status 143) after "* ]]
}

@test "a completed run: outcome completed, no run line, the headline stays first" {
	printf 'from inferscope import scope\ndef f(i):\n    return sum(range(i))\nfor i in range(8):\n    with scope("step"):\n        f(20000)\n' > "$T/ok.py"
	"$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/ok.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	run jq -r '[.run.outcome, (.run.exception == null), .run.window, (.run.startup_ns > 0)] | @tsv' "$T/f.json"
	[ "$output" = "completed	true	false	true" ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	[[ "$(sed -n 3p "$T/r.md")" != "**The run"* ]]
	grep -q '^Start-up (imports and initialization) took .* before the first iteration, ' "$T/r.md"
}

@test "a worker thread's unhandled exception with exit status 0: the run completed, the exception is listed, not failed" {
	printf 'import threading
def work():
    raise ValueError("worker broke")
t = threading.Thread(target=work, name="worker")
t.start(); t.join()
' > "$T/w0.py"
	run --separate-stderr "$RECORD" -q -o "$T/w0.isc" -- "$PY" "$T/w0.py"
	[ "$status" -eq 0 ]
	"$ANALYZE" -o "$T/w0.json" "$T/w0.isc"
	run jq -r '[.run.outcome, .run.exit_status, .run.exception.type, .run.exception.main_thread] | @tsv' "$T/w0.json"
	[ "$output" = "completed	0	ValueError	false" ]
	"$REPORT" -o "$T/w0.md" "$T/w0.json"
	[[ "$(sed -n 3p "$T/w0.md")" != "**The run failed"* ]]
	grep -q 'An unhandled `ValueError` ended thread `worker`' "$T/w0.md"
}

@test "a flight recording (--ring) is a window, not damage; no warm-up left out; the report says the last N s" {
	printf 'from inferscope import scope\ndef f(i):\n    return i + 1\nfor i in range(400):\n    with scope("step"):\n        for j in range(200):\n            f(j)\n' > "$T/loop.py"
	# exact mode: its call records are what fill the ring (sampling writes far fewer)
	"$RECORD" -q --python=exact --ring=32k -o "$T/t.isc" -- "$PY" "$T/loop.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	run jq -r '[.run.outcome, .run.window, .summary.damaged, (.summary.lost_frames > 0), .iterations.warmup_excluded] | @tsv' "$T/f.json"
	[ "$output" = "window	true	false	true	0" ]
	run jq -r '[.findings[].id] | index("data_loss")' "$T/f.json"
	[ "$output" = null ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	[[ "$(sed -n 3p "$T/r.md")" == "**A flight recording: this report covers the last "*" of the run.**" ]]
	# a hand-edited negative window is no duration: n/a, not "-5 ns"
	jq '.run.window_ns = -5' "$T/f.json" > "$T/neg.json"
	"$REPORT" -o "$T/neg.md" "$T/neg.json"
	[ "$(sed -n 3p "$T/neg.md")" = "**A flight recording: this report covers the last n/a of the run.**" ]
	run "$MERGE" --dump "$T/t.isc"
	[[ "${lines[-1]}" == *" window=1" ]]
	# thread names survive the eviction (the sampler's naming ticks are kept)
	run jq -r '[.processes[].threads[] | select(.name == "" or .name == null)] | length' "$T/f.json"
	[ "$output" = 0 ]
}

@test "a flight recording keeps Python thread names and the recording cost (each thread's head frame is never evicted)" {
	# two named threads and the main thread, 300 steps each: a 32k ring evicts the start
	printf 'import threading\nfrom inferscope import scope\ndef f(i):\n    return i + 1\ndef work(n):\n    for i in range(n):\n        with scope("step"):\n            for j in range(200):\n                f(j)\nts = [threading.Thread(target=work, args=(300,), name="loader-%%d" %% k) for k in range(2)]\nfor t in ts:\n    t.start()\nwork(300)\nfor t in ts:\n    t.join()\n' > "$T/names.py"
	# exact mode: its call records fill the ring, and it has the calibration
	"$RECORD" -q --python=exact --ring=32k -o "$T/t.isc" -- "$PY" "$T/names.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	run jq -r '[.run.window, (.summary.lost_frames > 0)] | @tsv' "$T/f.json"
	[ "$output" = "true	true" ]
	run jq -r '[.processes[0].threads[].name] | sort | join(",")' "$T/f.json"
	[ "$output" = "MainThread,loader-0,loader-1" ]
	# the agent's start CALIBRATION (in the first thread's head) survives
	# too, beside the exit one at the end
	run jq -r '.recording.calibrations | length' "$T/f.json"
	[ "$output" = 2 ]
}

@test "a flight recording leaves out the warm-up of a process that started inside the window, not of one it saw only the end of" {
	# the parent's 400 steps fill the ring; then a child runs 6 steps, its first
	# 50 ms (a warm-up), the others 10 ms: one warm-up left out, the child's
	printf 'import time\nfrom inferscope import scope\nfor i in range(6):\n    with scope("step"):\n        time.sleep(0.01 if i else 0.05)\n' > "$T/child.py"
	printf 'import subprocess, sys\nfrom inferscope import scope\ndef f(i):\n    return i + 1\nfor i in range(400):\n    with scope("step"):\n        for j in range(200):\n            f(j)\nsubprocess.run([sys.executable, sys.argv[1]], check=True)\n' > "$T/parent.py"
	# exact mode: its call records are what fill the ring
	"$RECORD" -q --python=exact --ring=32k -o "$T/t.isc" -- "$PY" "$T/parent.py" "$T/child.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	run jq -r '[.run.window, .summary.processes, .iterations.warmup_excluded] | @tsv' "$T/f.json"
	[ "$output" = "true	2	1" ]
	# the span left out is the child's 50 ms first step; no steady step is that long
	jq -e '.iterations.spans[0] | .[1] - .[0] >= 50000000' "$T/f.json"
	jq -e '.iterations.latency_ns.max < 50000000' "$T/f.json"
}

@test "--sample-hz=0 on a script that only sleeps: no op_compute_bound; the report says what was missing" {
	printf 'import time\nfor i in range(20):\n    time.sleep(0.01)\n' > "$T/sleep.py"
	# exact mode: the Python sampler would see the thread off-CPU by itself
	"$RECORD" -q --python=exact --sample-hz=0 -o "$T/t.isc" -- "$PY" "$T/sleep.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	# time.sleep is a C call: without samples, nothing says the time was on-CPU
	run jq -r '.verdict.class' "$T/f.json"
	[ "$output" = unknown ]
	run jq -r '.verdict.missing[0].how' "$T/f.json"
	[[ "$output" == *"--sample-hz=20"* ]]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q 'Not chosen for want of evidence: `.*` needs thread samples' "$T/r.md"
}

@test "marks in the report: count, sum, per iteration, per second, over time" {
	printf 'import time\nfrom inferscope import scope, mark\nfor i in range(30):\n    with scope("step"):\n        time.sleep(0.002)\n        mark("tokens", n=128)\n' > "$T/marks.py"
	"$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/marks.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	run jq -r '.marks[] | select(.name == "tokens") | [.count, .sum, .per_iteration] | @tsv' "$T/f.json"
	[ "$output" = "30	3840	128" ]
	# per second of the analyzed span, computed here from summary.wall_ns
	want=$(jq -r '3840 / (.summary.wall_ns / 1e9)' "$T/f.json")
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q '^### Marks' "$T/r.md"
	row=$(grep '^| tokens | 30 | 3840 | 128.00 | ' "$T/r.md")
	got=$(awk -F' [|] ' '{ sub("/s", "", $5); print $5 }' <<< "$row")
	awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; exit !(d < 0.06 && d > -0.06) }'
	# 30 steps of 2 ms or more: several 1 ms buckets, drawn as blocks
	[[ "$row" == *"a column) |" ]]
	[[ "$row" =~ [▁▂▃▄▅▆▇█]{2,} ]]
}

@test "start-up outweighing the iterations: the CPU verdict judges the iterations; their short traced time bounds it, and the report says so" {
	# issue 18's case: 0.3 s of busy start-up, then 20 steps of about 100 us
	# of pure Python in work(): 19 steady-state iterations, about 2 ms of
	# traced time in them, all interpreter time in work()
	printf 'import time\nfrom inferscope import scope\ndef work():\n    s = 0\n    for j in range(2000):\n        s += j\n    return s\nt = time.time()\nwhile time.time() - t < 0.3:\n    pass\nfor i in range(20):\n    with scope("step"):\n        work()\n' > "$T/startup.py"
	# exact mode: 2 ms of iterations hold no stack sample at the default 100 Hz
	"$RECORD" -q --python=exact -o "$T/t.isc" -- "$PY" "$T/startup.py"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	jq -e '.cpu.in_iterations.split.traced_ns < 50000000' "$T/f.json"
	jq -e '.run.startup_ns > 250000000' "$T/f.json"
	# judged on the iterations: python_bound in work(), no start-up bound
	run jq -r '.verdict.class' "$T/f.json"
	[ "$output" = python_bound ]
	run jq -r '.findings[] | select(.id == "python_bound") | [.judged_on, .evidence.top[0].name] | @tsv' "$T/f.json"
	[ "$output" = "iterations	work" ]
	run jq -r '[.verdict.limits[] | select(.reason | startswith("start-up"))] | length' "$T/f.json"
	[ "$output" = 0 ]
	# ... whose traced time is too short for the statistics: said, x 0.5
	run jq -r '.run.too_short_reason' "$T/f.json"
	[[ "$output" == *"ms of traced time inside iterations (less than 50 ms"* ]]
	run jq -r '.verdict.limits[] | select(.reason | startswith("too short for the statistics used")) | .factor' "$T/f.json"
	[ "$output" = 0.5 ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	# the headline is made of the numbers the verdict judged: the iterations', work() the hottest
	run sed -n 3p "$T/r.md"
	[[ "$output" == '**Inside the iterations: '*'the hottest function is `work`'* ]]
	grep -q '^Verdict: \*\*python_bound\*\* (.*explains .* of traced time inside iterations' "$T/r.md"
	grep -q '^Start-up (imports and initialization) took .* before the first iteration, ' "$T/r.md"
	grep -q '^Confidence bound: too short for the statistics used: .* inside iterations' "$T/r.md"
	# the terminal summary's CPU line is the iterations' too: work() is pure Python
	run on_tty "$REPORT" "$T/f.json"
	[ "$status" -eq 0 ]
	[[ "$output" =~ "CPU in iterations: Python "(9[0-9]|100)" %" ]]
}
