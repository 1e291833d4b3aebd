#!/usr/bin/env bats
# iscope-record --python=sample: Python stacks read from outside the
# process (lib/record/pysample.c), on every CPython 3.9-3.13 found here.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	# a() spins 50 %, b() 30 %, c() 20 % of the wall time of each round
	cat > "$T/shares.py" <<'PY'
import sys, time
def spin(sec):
    end = time.perf_counter() + sec
    while time.perf_counter() < end:
        pass
def a(): spin(0.25)
def b(): spin(0.15)
def c(): spin(0.10)
for i in range(int(sys.argv[1])):
    a(); b(); c()
PY
}

teardown() {
	rm -rf "$T"
}

# Every CPython 3.9 to 3.13 on this machine: pyenv's versions and the
# system's, one interpreter per minor version (none hard-coded).
pythons() {
	local root seen=" " p v
	root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
	for p in /usr/bin/python3 "$root"/versions/3.*/bin/python3; do
		[[ -x $p ]] || continue
		v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
		case $v in 3.9 | 3.1[0-3]) ;; *) continue ;; esac
		[[ $seen == *" $p "* ]] && continue
		seen+="$p "
		echo "$p"
	done
}

# share_ok N K P: K of N samples estimate a share P within four binomial
# standard errors (sqrt(P(1-P)/N)); prints the comparison.
share_ok() {
	awk -v n="$1" -v k="$2" -v p="$3" 'BEGIN {
		se = sqrt(p * (1 - p) / n); d = k / n - p; if (d < 0) d = -d
		printf "  %d/%d = %.3f, expected %.2f +- %.3f\n", k, n, k / n, p, 4 * se
		exit !(n >= 100 && d <= 4 * se) }'
}

@test "static stack depths (lib/record/pycode.c) as each CPython 3.9-3.13 found computes them, on ~2000 standard-library code objects" {
	local p n=0
	while read -r p; do
		echo "# $p"
		run "$p" "$ISC_SRC/tests/unit/check-pycode.py" "$ISC_BUILD/tests/pycode_tool"
		echo "$output"
		[ "$status" -eq 0 ]
		n=$((n + 1))
	done < <(pythons)
	[ "$n" -ge 1 ]
}

@test "--python rejects an unknown mode and --python-hz out of range (usage, exit 2)" {
	run --separate-stderr "$RECORD" --python=fast -o "$T/x.isc" -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"invalid value 'fast' for --python (from command line): expected auto, exact or sample"* ]]
	run --separate-stderr "$RECORD" --python=sample --python-hz=0 -o "$T/x.isc" -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--python-hz must be 1..1000"* ]]
}

@test "known shares 50/30/20 % on every CPython 3.9-3.13 found, within 4 standard errors" {
	local n=0 p
	while read -r p; do
		echo "# $p"
		run --separate-stderr "$RECORD" -q --python=sample -o "$T/s.isc" -- "$p" "$T/shares.py" 4
		[ "$status" -eq 0 ]
		[[ "$stderr" != *"not sampled"* ]]
		"$MERGE" --dump-times "$T/s.isc" > "$T/dump"
		# no per-call hook: no Python call spans in sample mode
		run grep -c " B python " "$T/dump"
		[ "$output" -eq 0 ]
		local na nb nc total
		na=$(grep -c "py_sample R [0-9]* spin [^ ]*shares.py:2:[0-9]* a " "$T/dump" || true)
		nb=$(grep -c "py_sample R [0-9]* spin [^ ]*shares.py:2:[0-9]* b " "$T/dump" || true)
		nc=$(grep -c "py_sample R [0-9]* spin [^ ]*shares.py:2:[0-9]* c " "$T/dump" || true)
		total=$((na + nb + nc))
		share_ok "$total" "$na" 0.5
		share_ok "$total" "$nb" 0.3
		share_ok "$total" "$nc" 0.2
		# the spinning line is 4 or 5 (the while, the pass) and a() calls from line 6
		run grep -c "spin [^ ]*shares.py:2:[45] a [^ ]*shares.py:6:6 <module> [^ ]*shares.py:1:10" "$T/dump"
		[ "$output" -eq "$na" ]
		n=$((n + 1))
	done < <(pythons)
	echo "# $n interpreters"
	[ "$n" -ge 1 ]
}

@test "sampler survives threads that come and go and a workload that exits mid-stack" {
	cat > "$T/churn.py" <<'PY'
import os, threading, time
def work(n):
    s = 0
    for i in range(n):
        s += i
def deep(k):
    if k == 0:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.3:
            pass
        os._exit(7)  # leaves with 60 frames on the stack, no cleanup
    deep(k - 1)
for round in range(40):
    ts = [threading.Thread(target=work, args=(20000,)) for _ in range(5)]
    for t in ts: t.start()
    for t in ts: t.join()
deep(60)
PY
	run --separate-stderr "$RECORD" -q --python=sample --python-hz=500 -o "$T/c.isc" -- "$PY" "$T/churn.py"
	[ "$status" -eq 7 ]
	run "$MERGE" --dump-times "$T/c.isc"
	[ "$status" -eq 0 ]
	# the 60-deep recursion was seen, and threads other than the main one
	[[ "$output" == *"py_sample R "*" deep "*"deep"*"deep"* ]]
	"$MERGE" --dump-times "$T/c.isc" > "$T/dump"
	run bash -c "grep ' py_sample .* work ' '$T/dump' | awk '{ print \$3 }' | sort -u | wc -l"
	[ "$output" -ge 2 ]
}

@test "sampler follows a forked child: its stacks under its own process" {
	cat > "$T/fork.py" <<'PY'
import os, time
def child_spin():
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        pass
def parent_wait(pid):
    os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    child_spin()
    os._exit(0)
parent_wait(pid)
PY
	run --separate-stderr "$RECORD" -q --python=sample -o "$T/f.isc" -- "$PY" "$T/fork.py"
	[ "$status" -eq 0 ]
	"$MERGE" --dump-times "$T/f.isc" > "$T/dump"
	run grep -c "^[0-9]* P2 T[0-9]* py_sample R [0-9]* child_spin" "$T/dump"
	[ "$output" -ge 20 ]
	run grep -c "^[0-9]* P1 T[0-9]* py_sample [SD] [0-9]* parent_wait" "$T/dump"
	[ "$output" -ge 20 ]
}

@test "a CPython without a verified layout: one warning, a WARNING record, no stacks, the workload unharmed" {
	local root p
	root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
	p=$(ls "$root"/versions/3.8*/bin/python3 2>/dev/null | head -1)
	[[ -n $p ]] || skip "no CPython 3.8 on this machine"
	run --separate-stderr "$RECORD" --python=sample -o "$T/o.isc" -- "$p" -c 'import time; time.sleep(0.3); print("done")'
	[ "$status" -eq 0 ]
	[[ "$output" == "done" ]]
	[[ "$stderr" == *"CPython 3.8."*"no verified layout"*"not sampled (--python=exact records them)"* ]]
	run grep -c "not sampled" <<<"$stderr"
	[ "$output" -eq 1 ]
	run "$MERGE" --dump-times "$T/o.isc"
	[[ "$output" == *"WARNING 11 pid "*"CPython 3.8."* ]]
	[[ "$output" != *" py_sample "* ]]
}

@test "analyze: python.samples shares, Wilson intervals, schema and the report in sample mode" {
	run --separate-stderr "$RECORD" -q --python=sample -o "$T/s.isc" -- "$PY" "$T/shares.py" 4
	[ "$status" -eq 0 ]
	set -o pipefail
	"$MERGE" "$T/s.isc" | "$ANALYZE" > "$T/f.json"
	run python3 "$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	[ "$status" -eq 0 ]
	# shares of a, b, c from the analyzer's total samples (4 standard errors),
	# and every interval is the Wilson one of its counts (computed here)
	run python3 - "$T/f.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
s = d["python"]["samples"]
fn = {f["name"]: f for f in s["functions"]}
k = {x: fn[x]["total_samples"] for x in "abc"}
n = sum(k.values())
bad = []
for x, p in (("a", .5), ("b", .3), ("c", .2)):
    if abs(k[x] / n - p) > 4 * math.sqrt(p * (1 - p) / n):
        bad.append("%s: %d/%d" % (x, k[x], n))
def wilson(k, n, z=1.96):
    p = k / n; d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d; h = z / d * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0, c - h), min(1, c + h)
N, per = s["samples"], s["period_ns"]
for f in s["functions"]:
    lo, hi = wilson(f["total_samples"], N)
    if abs(f["total_ns_low"] - lo * N * per) > 1 or abs(f["total_ns_high"] - hi * N * per) > 1:
        bad.append("interval of " + f["name"])
    if f["total_ns"] != f["total_samples"] * per:
        bad.append("estimate of " + f["name"])
# the CPU classes depend on a quiet machine (tests/verdict runs them in both modes)
print(" ".join(bad) or "ok", d["recording"]["python_mode"], d["recording"]["sampler"]["hz"])
PY
	echo "$output"
	[[ "$output" == "ok sample 100" ]]
	run "$REPORT" "$T/f.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"### Python samples"* ]]
	[[ "$output" == *"| spin | "*"shares.py:2 | "* ]]
	[[ "$output" == *"Recording (sampled Python mode, 100 Hz): the workload ran no extra code"* ]]
}

@test "the independent decoder (tests/decoder/isctrace.py) accepts a sample-mode trace and its timeline" {
	local dpy=/usr/bin/python3
	"$dpy" -c 'import zstandard' 2>/dev/null || skip "no python3-zstandard for the decoder"
	cat > "$T/two.py" <<'PY'
import threading, time
def work():
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.4:
        pass
t = threading.Thread(target=work)
t.start()
work()
t.join()
PY
	run --separate-stderr "$RECORD" -q --python=sample -o "$T/d.isc" -- "$PY" "$T/two.py"
	[ "$status" -eq 0 ]
	"$MERGE" -o "$T/d.istl" "$T/d.isc"
	run "$dpy" "$ISC_SRC/tests/decoder/isctrace.py" "$T/d.isc"
	[ "$status" -eq 0 ]
	echo "$output" > "$T/trace.json"
	run "$dpy" "$ISC_SRC/tests/decoder/isctrace.py" "$T/d.istl"
	[ "$status" -eq 0 ]
	echo "$output" > "$T/tl.json"
	run python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
print(a["errors"], b["errors"], a["py_samples"], b["py_samples"], a["undefined_refs"], b["undefined_refs"])' "$T/trace.json" "$T/tl.json"
	echo "$output"
	[[ "$output" =~ ^\[\]\ \[\]\ ([0-9]+)\ ([0-9]+)\ 0\ 0$ ]]
	[ "${BASH_REMATCH[1]}" -eq "${BASH_REMATCH[2]}" ]
	[ "${BASH_REMATCH[1]}" -ge 40 ]
	# 1.9: every sample carries its thread's schedstat (this kernel has /proc/PID/task/TID/schedstat), in both files
	run python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
print(a["py_sched"] == a["py_samples"], b["py_sched"] == b["py_samples"])' "$T/trace.json" "$T/tl.json"
	[ "$output" = "True True" ]
}

@test "C calls from two lines of one function are one row of the CPU tables, named by the callee, its caller given" {
	# work() calls builtins.sum from two lines; exact mode has one row per
	# op, so sample mode has one "builtins.sum" row (module builtins, line
	# 0, calls not counted), whose caller is work; the C time per (callee,
	# caller) is one native_calls row too
	cat > "$T/two_lines.py" <<'PY'
import sys
def work():
    a = sum(range(6000000))
    b = sum(range(3000000))
    return a + b
for _ in range(int(sys.argv[1])):
    work()
PY
	"$RECORD" -q --python=sample --python-hz=200 -o "$T/t.isc" -- "$(torch_python)" "$T/two_lines.py" 8
	"$ANALYZE" -q -o "$T/t.json" "$T/t.isc"
	run "$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["cpu"]["top_functions"] if r["kind"] == "op" and r["name"] == "builtins.sum"]
nc = [r for r in d["python"]["samples"]["native_calls"] if r["name"] == "builtins.sum"]
print(len(rows), rows[0]["file"], rows[0]["line"], rows[0]["calls"], rows[0]["caller"]["name"], len(nc), nc[0]["caller"]["name"], nc[0]["callee_kind"])' "$T/t.json"
	[ "$output" = "1 builtins 0 None work 1 work function" ]
}

@test "sample mode imports threading only when the workload does; threads are still named and their exceptions recorded, on every CPython 3.9-3.13 found" {
	printf 'import threading\ndef w():\n    raise ValueError("boom")\nt = threading.Thread(target=w, name="worker-x")\nt.start()\nt.join()\n' > "$T/th.py"
	local py plain n=0
	for py in $(pythons); do
		n=$((n + 1))
		# what the interpreter does by itself (a site .pth may import threading)
		plain=$("$py" -c 'import sys; print("threading" in sys.modules)')
		run -0 "$RECORD" -q --python=sample -o "$T/x.isc" -- "$py" -c 'import sys; print("threading" in sys.modules)'
		echo "$py: plain $plain, recorded $output"
		[ "$output" = "$plain" ]
		"$RECORD" -q --python=sample -o "$T/th.isc" -- "$py" "$T/th.py" 2> "$T/err"
		grep -q '^ValueError: boom' "$T/err"
		run -0 "$MERGE" --dump "$T/th.isc"
		[[ "$output" == *"P1 T2 TB worker-x"* ]]
		[[ "$output" == *"P1 T2 X ValueError $T/th.py:3 w: boom"* ]]
		# and the workload's own loader is still there for inspect and friends
		run -0 "$RECORD" -q --python=sample -o "$T/x.isc" -- "$py" -c 'import threading, inspect; print(len(inspect.getsource(threading)) > 1000)'
		[ "$output" = True ]
	done
	[ "$n" -ge 1 ]
}

@test "sample mode: each thread's Python, ops and off-CPU time in processes[].threads are its own samples' (from the dump)" {
	# the main thread spins in Python for 0.8 s of its own CPU time (on a
	# loaded machine that takes longer, and still holds 0.8 s on CPU) while
	# "sleeper" sleeps 0.8 s
	cat > "$T/two.py" <<'PY'
import threading, time
def spin(sec):
    end = time.thread_time() + sec
    while time.thread_time() < end:
        pass
t = threading.Thread(target=time.sleep, args=(0.8,), name="sleeper")
t.start()
spin(0.8)
t.join()
PY
	run --separate-stderr "$RECORD" -q --python=sample -o "$T/t.isc" -- "$PY" "$T/two.py"
	[ "$status" -eq 0 ]
	"$MERGE" --dump-times "$T/t.isc" > "$T/dump"
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	# per thread from the dump: a sample is on CPU in state R without the
	# preempted flag (8); on CPU in C when it has frames and its callee
	# ("-> NAME kind K", formats/trace.md §6.2) is of kind 1-4, or 5 (not
	# read) at a call (flags & 3 == 1), else in Python; no frames: C; each
	# sample is one period of --python-hz (100 Hz: 10 ms)
	run python3 - "$T/dump" "$T/f.json" <<'PY'
import json, sys
names, want = {}, {}
for l in open(sys.argv[1]):
    w = l.split()[1:]  # after the time
    if len(w) >= 4 and w[2] == "TB":
        names[w[1]] = w[3]
    if len(w) >= 3 and w[-3] == "sched":  # 1.9: " sched RUN WAIT" ends the line
        w = w[:-3]
    if len(w) >= 5 and w[2] == "py_sample":
        state, flags, depth = w[3], int(w[4]), len(w) > 5
        kind = int(w[-1]) & 7 if "->" in w else 5
        in_c = not depth or 1 <= kind <= 4 or (kind == 5 and flags & 3 == 1)
        on = state == "R" and not flags & 8
        k = ("ops" if in_c else "python") if on else "off"
        c = want.setdefault(w[1], {"python": 0, "ops": 0, "off": 0})
        c[k] += 10000000
d = json.load(open(sys.argv[2]))
got = {t["name"]: {"python": t["python_ns"], "ops": t["ops_ns"], "off": t["off_cpu_ns"]}
       for t in d["processes"][0]["threads"]}
bad = ["%s: %r, from the dump %r" % (names[k], got.get(names[k]), v) for k, v in want.items() if got.get(names[k]) != v]
w = {names[k]: v for k, v in want.items()}
# the spin loop is on CPU (bytecode and time.thread_time), the sleeper off it
print(" ".join(bad) or "ok", w["MainThread"]["python"] + w["MainThread"]["ops"] >= 500000000,
      w["sleeper"]["off"] >= 500000000)
PY
	echo "$output"
	[ "$output" = "ok True True" ]
}

@test "--format=chrome carries the stack samples: one instant per sample, named by the innermost function, stack root first, its C callee" {
	cat > "$T/nest.py" <<'PY'
import time
def inner():
    end = time.thread_time() + 0.4
    i = 0
    while time.thread_time() < end:
        i += 1
def outer():
    inner()
outer()
PY
	run --separate-stderr "$RECORD" -q --python=sample -o "$T/n.isc" -- "$PY" "$T/nest.py"
	[ "$status" -eq 0 ]
	"$MERGE" --dump-times "$T/n.isc" > "$T/n.dump"
	run --separate-stderr "$MERGE" --format=chrome -o "$T/n.json" "$T/n.isc"
	[ "$status" -eq 0 ]
	run "$PY" - "$T/n.dump" "$T/n.json" <<'PY'
import json, sys
want = sum(1 for l in open(sys.argv[1]) if l.split()[3:4] == ["py_sample"])
evs = [e for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "python_sample"]
nested = [e for e in evs if e["name"] == "inner" and "outer (" in e["args"]["stack"]
          and e["args"]["stack"].index("outer (") < e["args"]["stack"].index("inner (")]
# the frames and nothing else: <module> > outer > inner, root first
exact = [e for e in nested if e["args"]["stack"].split(" > ")[0].startswith("<module> (")
         and e["args"]["stack"].split(" > ")[-1].startswith("inner (")]
# the loop calls time.thread_time: samples in it name that callee
callee = [e for e in nested if e["args"].get("callee") == "time.thread_time"]
print(len(evs) == want, want > 10, len(nested) > 10, len(exact) == len(nested), len(callee) > 0)
PY
	echo "$output"
	[ "$output" = "True True True True True" ]
}

@test "the summary line counts the stack samples the trace holds (sample mode records few events)" {
	run --separate-stderr "$RECORD" --python=sample -o "$T/c.isc" -- "$PY" -c 's = 0
for i in range(3000000): s += i * i % 13'
	[ "$status" -eq 0 ]
	want=$("$MERGE" --dump-times "$T/c.isc" | awk '$4 == "py_sample"' | wc -l)
	[ "$want" -gt 10 ]
	[[ "$stderr" == *" and $want stack samples from 1 processes, "* ]]
}

@test "--python=sample records no call spans and --python=exact one per call (the mode is the one asked for)" {
	# f() is called 20000 times: exact mode writes a begin record per call
	# (20000 named f), sample mode none (it reads stacks instead)
	cat > "$T/calls.py" <<'PY'
def f(i):
    return i * i % 13
s = 0
for i in range(20000):
    s += f(i)
PY
	run --separate-stderr "$RECORD" --python=sample -o "$T/s.isc" -- "$PY" "$T/calls.py"
	[ "$status" -eq 0 ]
	run --separate-stderr "$RECORD" --python=exact -o "$T/e.isc" -- "$PY" "$T/calls.py"
	[ "$status" -eq 0 ]
	run --separate-stderr "$MERGE" --dump-times "$T/s.isc"
	[ "$status" -eq 0 ]
	sample_begins=$(awk '$4 == "B"' <<<"$output" | wc -l)
	[ "$sample_begins" -eq 0 ]
	run --separate-stderr "$MERGE" --dump-times "$T/e.isc"
	[ "$status" -eq 0 ]
	exact_f=$(awk '$4 == "B" && $5 == "python" && $6 == "f"' <<<"$output" | wc -l)
	[ "$exact_f" -eq 20000 ]
}
