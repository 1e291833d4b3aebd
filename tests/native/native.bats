#!/usr/bin/env bats
# Native stacks (issue 26): recorded with iscope-record --native, merged,
# unwound offline (tests/native/nstacks; iscope-analyze's native section)
# and checked against call chains known by construction:
#   - main -> chain_run -> a -> b -> spin in a library built with frame
#     pointers, without, with its CFI in .debug_frame only, with no CFI,
#     and stripped (tests/native/chain_lib.c);
#   - a torch loop whose time is torch.matmul (tests/native/matmul.py):
#     the GEMM kernel under the Python line that called matmul, in the
#     stacks and in the findings (both Python modes); with torch.exp added,
#     the differential against the GEMM-only run;
#   - a GEMM on two BLAS threads (tests/native/pool.py): the worker's
#     samples under the line and op that dispatched them;
#   - examples/infer.py: 90 % of the CPU time has a stack;
#   - threads other than the main one, each against its own CPU time
#     measured by the workload (tests/native/thread_shares.py): a torch
#     DataLoader with num_workers=0 and with two worker processes, whose
#     items run zlib's deflate and OpenSSL's SHA256_Update while the main
#     thread runs GEMMs (tests/native/dataloader.py), and a tokenizer-like
#     ThreadPoolExecutor whose two threads hash and compress with the GIL
#     released (tests/native/hashpool.py), and torch's OpenMP worker,
#     which runs no Python (tests/native/omp_pool.py);
#   - one Python function calling zlib.compress, hashlib.sha256 and
#     list(map(torch.exp, ...)) (tests/native/callees.py): issue 24's
#     callee naming and the native split, each against the times the
#     workload measured (tests/native/callee_views.py), and where they
#     differ (the third call's callee is list: torch only by its frames);
#   - the flame-graph formats of iscope-report from the findings;
#   - perf_event_open refused (a seccomp filter: tests/native/noperf.c).
# The recorder runs as root here; without permission to open perf events
# every test but the refusal ones skips, saying so.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	export BT="$ISC_BUILD/tests"
}

setup() {
	T=$(mktemp -d)
}

teardown() {
	rm -rf "$T"
}

# Skips unless this machine lets the recorder open the events.
need_perf() {
	"$RECORD" -q --native=on --no-cuda -o "$T/probe.isc" -- /bin/true 2>"$T/probe.err" ||
		skip "MACHINE ASSUMPTION NOT MET: perf_event_open refused here: $(cat "$T/probe.err")"
}

# record_chain VARIANT: the chain program over libchain_VARIANT.so, 1000 Hz,
# about 0.6 s of spin; its unwound stacks in $T/VARIANT.stacks.
record_chain() {
	"$RECORD" -q --native=on --no-cuda --native-hz=1000 -o "$T/$1.isc" -- \
		"$BT/chain" "$BT/libchain_$1.so" 600000000
	"$MERGE" "$T/$1.isc" -o "$T/$1.istl"
	"$BT/nstacks" "$T/$1.istl" >"$T/$1.stacks" 2>"$T/$1.err"
}

# check_chain VARIANT: every sample in spin is exactly
# _start > libc's start > main > chain_run > a > b > spin (kernel frames
# may follow, innermost), and nearly all samples are there (the rest is
# the program's start and the dlopen: 5 % at most under ASan's runtime).
check_chain() {
	local total spin bad exact
	total=$(wc -l <"$T/$1.stacks")
	spin=$(grep -c ';spin' "$T/$1.stacks" || true)
	bad=$(grep ';spin' "$T/$1.stacks" | grep -cvE '^[0-9]+;_start;(__libc[^;]*;)+main;chain_run;a;b;spin(;|$)' || true)
	exact=$(grep -cE ';main;chain_run;a;b;spin$' "$T/$1.stacks" || true)
	echo "$1: $total samples, $spin in spin, $bad of them with another chain, $exact exactly the chain" >&2
	((total >= 100))
	((bad == 0))
	((spin * 100 >= total * 90))
	((exact * 100 >= total * 85))
}

@test "frame pointers and CFI: main > chain_run > a > b > spin" {
	need_perf
	record_chain fp
	check_chain fp
}

@test "no frame pointers, CFI in .eh_frame: the same chain" {
	need_perf
	record_chain nofp
	check_chain nofp
}

@test "CFI in .debug_frame only: the same chain" {
	need_perf
	# premise: this library's functions have no .eh_frame entries
	run ! bash -c "readelf --debug-dump=frames '$BT/libchain_debugframe.so' | sed -n '/.eh_frame/,/.debug_frame/p' | grep -q 'pc=0*1'"
	record_chain debugframe
	check_chain debugframe
}

@test "no CFI at all: frame pointers carry the same chain" {
	need_perf
	run readelf --debug-dump=frames "$BT/libchain_fponly.so"
	[[ $output != *FDE* ]]
	record_chain fponly
	check_chain fponly
}

@test "stripped library: a, b and spin are library+offset inside their functions, never dropped" {
	need_perf
	record_chain stripped
	# the functions' ranges, from the unstripped library it was made from
	read -r sa sz_a < <(nm -S "$BT/libchain_nofp.so" | awk '$4 == "a" { print $1, $2 }')
	read -r sb sz_b < <(nm -S "$BT/libchain_nofp.so" | awk '$4 == "b" { print $1, $2 }')
	read -r ss sz_s < <(nm -S "$BT/libchain_nofp.so" | awk '$4 == "spin" { print $1, $2 }')
	total=$(wc -l <"$T/stripped.stacks")
	run grep -cE ';main;chain_run;libchain_stripped\.so\+0x[0-9a-f]+;libchain_stripped\.so\+0x[0-9a-f]+;libchain_stripped\.so\+0x[0-9a-f]+$' "$T/stripped.stacks"
	((output * 100 >= total * 85))
	# every such frame's offset lies in the function it stands for
	inside=0 outside=0
	while IFS=';' read -r oa ob os; do
		for pair in "$oa $sa $sz_a" "$ob $sb $sz_b" "$os $ss $sz_s"; do
			read -r o s z <<<"$pair"
			if ((16#$o >= 16#$s && 16#$o < 16#$s + 16#$z)); then inside=$((inside + 1)); else outside=$((outside + 1)); fi
		done
	done < <(grep -oE 'chain_run;libchain_stripped\.so\+0x[0-9a-f]+;libchain_stripped\.so\+0x[0-9a-f]+;libchain_stripped\.so\+0x[0-9a-f]+' "$T/stripped.stacks" |
		sed 's/chain_run;//; s/libchain_stripped\.so+0x//g')
	echo "offsets inside their function: $inside, outside: $outside" >&2
	((outside == 0))
	((inside >= 3 * 90))
	# counted as unnamed: three frames a sample
	run cat "$T/stripped.err"
	[[ $output =~ unnamed\ ([0-9]+) ]]
	((BASH_REMATCH[1] >= 3 * 90))
}

@test "the trace: one sampler record, the library's mapping with its build id, samples with 17 registers" {
	need_perf
	record_chain fp
	"$MERGE" --dump --dump-times "$T/fp.isc" >"$T/dump"
	run grep -c '^[0-9]* native_sampler 0 0 1 1000000 32768 62 17 ' "$T/dump"
	[ "$output" = 1 ]
	want=$(readelf -n "$BT/libchain_fp.so" | awk '/Build ID/ { print $3 }')
	run grep -E "native_map [0-9a-f]+-[0-9a-f]+ [0-9a-f]+ x mmap $want .*/libchain_fp\.so$" "$T/dump"
	[ "${#lines[@]}" = 1 ]
	# user-mode samples (flags 0, or 4: the copy reached the top of the main thread's stack)
	run grep -cE 'native_sample flags=[04] kernel=0 regs=17 stack=[0-9]+$' "$T/dump"
	((output >= 100))
	run grep -c '^[0-9]* native_stats ' "$T/dump"
	[ "$output" = 1 ]
}

@test "--native=off (the default) writes no native record" {
	"$RECORD" -q --no-cuda -o "$T/off.isc" -- "$BT/chain" "$BT/libchain_fp.so" 1000
	run "$MERGE" --dump --dump-times "$T/off.isc"
	[ "$status" -eq 0 ]
	[[ $output != *native_* ]]
	[[ $output != *record.native* ]]
}

@test "perf_event_open refused, --native=auto: one warning line, a WARNING 14 record, the workload runs" {
	run --separate-stderr "$BT/noperf" "$RECORD" --native=auto --no-cuda -o "$T/np.isc" -- touch "$T/ran"
	[ "$status" -eq 0 ]
	[ -e "$T/ran" ]
	run grep -c 'native stacks are not sampled' <<<"$stderr"
	[ "$output" = 1 ]
	run "$MERGE" --dump "$T/np.isc"
	[[ $output == *"WARNING 14 perf_event_open refused (Permission denied) although running as root"* || $output == *"WARNING 14 perf_event_open refused (Permission denied"* ]]
	run "$MERGE" --dump --dump-times "$T/np.isc"
	[[ $output != *native_sample* ]]
}

@test "perf_event_open refused, --native=on: exit status 1 with the reason, the workload never runs" {
	run --separate-stderr "$BT/noperf" "$RECORD" --native=on --no-cuda -o "$T/np.isc" -- touch "$T/ran"
	[ "$status" -eq 1 ]
	[ ! -e "$T/ran" ]
	[[ $stderr == *"Cannot sample native stacks (--native=on): perf_event_open refused"* ]]
}

@test "bad --native values are usage errors" {
	run "$RECORD" --native=maybe -- true
	[ "$status" -eq 2 ]
	[[ $output == *"--native must be off, on or auto"* ]]
	run "$RECORD" --native-stack=100 -- true
	[ "$status" -eq 2 ]
	run "$RECORD" --native-hz=0 -- true
	[ "$status" -eq 2 ]
}

@test "torch: the GEMM kernel under the Python line that called torch.matmul" {
	need_perf
	py=$(torch_python) || skip "no Python with torch"
	line=$(grep -n '# GEMM' "$ISC_SRC/tests/native/matmul.py" | cut -d: -f1)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$RECORD" -q --no-cuda --python=sample --native=on -o "$T/mm.isc" -- \
		"$py" "$ISC_SRC/tests/native/matmul.py" 1.5
	"$MERGE" "$T/mm.isc" -o "$T/mm.istl"
	"$BT/nstacks" --mix "$T/mm.istl" >"$T/mm.stacks" 2>"$T/mm.err"
	main=$(cut -d';' -f1 "$T/mm.stacks" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
	# the line torch.matmul is on runs a GEMM and nothing else: by
	# construction nearly every sample the Python sampler places there is
	# in the GEMM (the rest of the run is torch's import and the loop's
	# clock reads, on the other line of the loop)
	total=$(grep "^$main;" "$T/mm.stacks" | grep -c ";work ([^;]*matmul\.py:$line);" || true)
	# the mixed stack: ... work (matmul.py:LINE) > torch's matmul > ... > a GEMM kernel (OpenBLAS's sgemm_kernel_*)
	under=$(grep "^$main;" "$T/mm.stacks" | grep -cE ";work \([^;]*matmul\.py:$line\);([^;]*;)*[^;]*matmul[^;]*;([^;]*;)*[^;]*gemm[^;]*" || true)
	echo "main thread: $total samples at work (line $line), $under of them > matmul > gemm" >&2
	((total >= 50))
	((under * 100 >= total * 80))
	# the interpreter's frames are gone from the mixed stacks under work
	run grep -c "work (.*_PyEval_EvalFrameDefault" "$T/mm.stacks"
	[ "$output" = 0 ]
}

@test "folded and speedscope output of the same samples agree, speedscope follows its file format" {
	need_perf
	record_chain nofp
	"$BT/nstacks" --folded "$T/nofp.istl" >"$T/f.folded"
	"$BT/nstacks" --speedscope "$T/nofp.istl" >"$T/f.json"
	samples=$(wc -l <"$T/nofp.stacks")
	# folded: "frames count" lines adding up to the samples
	run grep -cvE '^[^ ].* [0-9]+$' "$T/f.folded"
	[ "$output" = 0 ]
	run awk '{ s += $NF } END { print s }' "$T/f.folded"
	[ "$output" = "$samples" ]
	run grep -E ';main;chain_run;a;b;spin [0-9]+$' "$T/f.folded"
	[ "${#lines[@]}" = 1 ]
	run "$ISC_SRC/tests/native/check_speedscope.py" "$T/f.json" "$samples" 1000000
	[ "$output" = ok ]
}

@test "check_speedscope.py: speedscope's own sample profile passes, one without weights or with a unit it lacks fails its schema" {
	run "$ISC_SRC/tests/native/check_speedscope.py" "$ISC_SRC/tests/data/speedscope/two-sampled.speedscope.json"
	[ "$output" = ok ]
	"$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
del d["profiles"][0]["weights"]
json.dump(d, open(sys.argv[2], "w"))' "$ISC_SRC/tests/data/speedscope/two-sampled.speedscope.json" "$T/noweights.json"
	run ! "$ISC_SRC/tests/native/check_speedscope.py" "$T/noweights.json"
	[ "${lines[0]}" = "schema: profiles/0 is not valid under any of speedscope's profile types" ]
	"$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
d["profiles"][1]["unit"] = "ticks"
json.dump(d, open(sys.argv[2], "w"))' "$ISC_SRC/tests/data/speedscope/two-sampled.speedscope.json" "$T/ticks.json"
	run ! "$ISC_SRC/tests/native/check_speedscope.py" "$T/ticks.json"
	[ "${lines[0]}" = "schema: profiles/1 is not valid under any of speedscope's profile types" ]
}

# record_mm MODE [ARGS...]: matmul.py (one thread, ARGS: seconds [exp]) recorded in
# Python mode MODE with native stacks and analyzed: $T/mm.json
record_mm() {
	local mode=$1
	shift
	py=$(torch_python) || skip "no Python with torch"
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$RECORD" -q --no-cuda --python="$mode" --native=on -o "$T/mm.isc" -- \
		"$py" "$ISC_SRC/tests/native/matmul.py" "$@"
	"$ANALYZE" -q -o "$T/mm.json" "$T/mm.isc"
	valid_findings "$T/mm.json"
}

# The folded lines of the findings' tree (tests/native/tree_paths.py, apart
# from the C writers) under the Python frame work at LINE of matmul.py.
@test "torch: in the findings, the GEMM kernel is under the Python line that called torch.matmul" {
	need_perf
	record_mm sample 1.5
	line=$(grep -n '# GEMM' "$ISC_SRC/tests/native/matmul.py" | cut -d: -f1)
	"$ISC_SRC/tests/native/tree_paths.py" "$T/mm.json" >"$T/paths"
	# by construction the line runs a GEMM and nothing else: of the samples
	# under it, nearly all are in a GEMM kernel below torch's matmul op
	at=$(grep -E ";work \([^;]*matmul\.py:$line\);" "$T/paths" | awk '{ s += $NF } END { print s + 0 }')
	under=$(grep -E ";work \([^;]*matmul\.py:$line\);([^;]*;)*at::_ops::matmul[^;]*;([^;]*;)*[^;]*gemm[^;]* [0-9]+$" "$T/paths" |
		awk '{ s += $NF } END { print s + 0 }')
	echo "tree: $at samples under work (line $line), $under of them > at::_ops::matmul > ... > gemm" >&2
	((at >= 50))
	((under * 100 >= at * 80))
	# the top native function is the GEMM kernel, above it the op and that line
	run jq -r '.native.functions[0].name' "$T/mm.json"
	[[ $output == *gemm* ]]
	run jq -r '.native.functions[0].above[0] | "\(.op) \(.python.name) \(.python.line)"' "$T/mm.json"
	[ "$output" = "aten::matmul_out work $line" ]
	run jq '.native.functions[0].above[0].pct >= 80' "$T/mm.json"
	[ "$output" = true ]
	# the op's breakdown: a GEMM kernel first
	run jq -r '.native.ops[0] | "\(.name) \(.python.line) \(.kernels[0].name)"' "$T/mm.json"
	[[ $output == "aten::matmul_out $line "*gemm* ]]
}

# Since issue 24 (format 1.4) the recorder samples the Python stacks in
# exact mode too, so exact mode's native stacks are paired with those
# samples (lines), as in sample mode; the span stack stands in only for a
# process without Python samples, which no test here records.
@test "torch, exact mode: the GEMM kernel under the line that called torch.matmul, from exact mode's Python samples" {
	need_perf
	record_mm exact 1.5
	run jq -r '.native.functions[0].name' "$T/mm.json"
	[[ $output == *gemm* ]]
	line=$(grep -n '# GEMM' "$ISC_SRC/tests/native/matmul.py" | cut -d: -f1)
	run jq -r '.native.functions[0].above[0] | "\(.op) \(.python.name) \(.python.line)"' "$T/mm.json"
	[ "$output" = "aten::matmul_out work $line" ]
	run jq '.native.functions[0].above[0].pct >= 80' "$T/mm.json"
	[ "$output" = true ]
	# of the stacks that ran Python code (an evaluation loop to replace),
	# nearly all were paired: a paired stack keeps no evaluation loop, an
	# unpaired one keeps it.  Not paired_pct, whose denominator is every
	# stack of a Python thread: torch's static destructors after
	# Py_FinalizeEx (8-13 % of a 1.5 s run here, no Python frame to pair)
	# move it across any fixed bound.
	"$ISC_SRC/tests/native/tree_paths.py" "$T/mm.json" >"$T/paths"
	paired=$(grep -F '.py:' "$T/paths" | awk '{ s += $NF } END { print s + 0 }')
	unpaired=$(grep -vF '.py:' "$T/paths" | grep -F _PyEval_EvalFrame | awk '{ s += $NF } END { print s + 0 }')
	echo "stacks with Python code: $paired paired, $unpaired with their evaluation loop left" >&2
	((paired >= 50))
	((paired * 100 >= (paired + unpaired) * 90))
	# a paired stack has no evaluation loop left in it
	run grep -F '.py:' "$T/paths"
	[[ $output != *_PyEval_EvalFrame* ]]
}

@test "a BLAS worker thread's samples are under the Python line and op that dispatched its work" {
	need_perf
	py=$(torch_python) || skip "no Python with torch"
	line=$(grep -n '# GEMM' "$ISC_SRC/tests/native/pool.py" | cut -d: -f1)
	OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$RECORD" -q --no-cuda --native=on -o "$T/pool.isc" -- \
		"$py" "$ISC_SRC/tests/native/pool.py" 1.5
	"$ANALYZE" -q -o "$T/pool.json" "$T/pool.isc"
	valid_findings "$T/pool.json"
	# the worker: the thread that runs no Python with the most samples
	jq -c '[.native.threads[] | select(.python == false)] | max_by(.samples)' "$T/pool.json" >"$T/worker"
	cat "$T/worker" >&2
	run jq '.samples' "$T/worker"
	((output >= 30))
	# by construction all its work is the GEMM line's; waiting between products may fall outside
	run jq '.dispatched_samples * 100 / .samples >= 80' "$T/worker"
	[ "$output" = true ]
	run jq -r '.dispatched_by[0] | "\(.op) \(.python.name) \(.python.line)"' "$T/worker"
	[ "$output" = "aten::matmul_out work $line" ]
	# the untraced pool row says the same
	run jq -r '.cpu.thread_pools[] | select(.traced == false) | .native.dispatched_by[0].python.line' "$T/pool.json"
	[ "${lines[0]}" = "$line" ]
}

@test "-f folded and -f speedscope: the findings' tree, every sample once, speedscope's file format" {
	need_perf
	record_mm sample 1
	"$REPORT" -f folded -o "$T/f.folded" "$T/mm.json"
	"$REPORT" -f speedscope -o "$T/f.json" "$T/mm.json"
	samples=$(jq .native.samples "$T/mm.json")
	period=$(jq .native.sampler.period_ns "$T/mm.json")
	((samples >= 50))
	run grep -cvE '^[^ ].* [0-9]+$' "$T/f.folded"
	[ "$output" = 0 ]
	run awk '{ s += $NF } END { print s }' "$T/f.folded"
	[ "$output" = "$samples" ]
	# the same lines as the tree read apart from the C writers
	"$ISC_SRC/tests/native/tree_paths.py" "$T/mm.json" >"$T/want"
	sort "$T/f.folded" >"$T/got"
	run diff "$T/want" "$T/got"
	[ "$status" -eq 0 ]
	run "$ISC_SRC/tests/native/check_speedscope.py" "$T/f.json" "$samples" "$period"
	[ "$output" = ok ]
	# one profile per thread of the tree
	run jq -n --slurpfile s "$T/f.json" --slurpfile x "$T/mm.json" '($s[0].profiles | length) == ($x[0].native.tree.threads | length)'
	[ "$output" = true ]
}

@test "findings without native stacks: -f folded and -f speedscope exit 1 saying so" {
	"$RECORD" -q --no-cuda -o "$T/off.isc" -- "$BT/chain" "$BT/libchain_fp.so" 1000
	"$ANALYZE" -q -o "$T/off.json" "$T/off.isc"
	run jq 'has("native")' "$T/off.json"
	[ "$output" = false ]
	run --separate-stderr "$REPORT" -f folded "$T/off.json"
	[ "$status" -eq 1 ]
	[[ $stderr == *"no native stacks in these findings (record with iscope-record --native=on)"* ]]
	run --separate-stderr "$REPORT" -f speedscope "$T/off.json"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}

@test "perf_event_open refused: no native section, the report says it is from Python stacks only" {
	py=$(torch_python) || skip "no Python with torch"
	run --separate-stderr "$BT/noperf" "$RECORD" --native=auto --no-cuda -o "$T/np.isc" -- "$py" -c 'print(sum(range(10**5)))'
	[ "$status" -eq 0 ]
	"$ANALYZE" -q -o "$T/np.json" "$T/np.isc"
	valid_findings "$T/np.json"
	run jq 'has("native")' "$T/np.json"
	[ "$output" = false ]
	run jq -r '.summary.warnings[] | select(.code == 14) | .kind' "$T/np.json"
	[ "$output" = native_not_sampled ]
	"$REPORT" -o "$T/np.md" "$T/np.json"
	run grep -c 'Native stacks were not sampled, this report is from Python stacks only: perf_event_open refused' "$T/np.md"
	[ "$output" = 1 ]
	run grep -c '### Native stacks' "$T/np.md"
	[ "$output" = 0 ]
}

@test "examples/infer.py: at least 90 % of the process's CPU time has a stack, the untraced pool is attributed" {
	need_perf
	py=$(torch_python) || skip "no Python with torch"
	"$RECORD" -q --no-cuda --native=on -o "$T/infer.isc" -- "$py" "$ISC_SRC/examples/infer.py" --batches 6 >/dev/null
	"$ANALYZE" -q -o "$T/infer.json" "$T/infer.isc"
	valid_findings "$T/infer.json"
	jq -c '.native | {samples, cpu_covered_pct, worker_samples, dispatched_pct}' "$T/infer.json" >&2
	run jq '.native.cpu_covered_pct >= 90' "$T/infer.json"
	[ "$output" = true ]
	# every untraced pool has stacks, most of them under the line that dispatched them
	run jq '[.cpu.thread_pools[] | select(.traced == false)] | length' "$T/infer.json"
	((output >= 1))
	run jq '[.cpu.thread_pools[] | select(.traced == false) | select(.native.samples == 0 or .native.dispatched_pct < 80)] | length' "$T/infer.json"
	[ "$output" = 0 ]
	run jq -r '[.cpu.thread_pools[] | select(.traced == false)][0].native.dispatched_by[0].python.file' "$T/infer.json"
	[[ $output == */torch/nn/modules/* ]]
}

@test "differential: GEMM alone before, GEMM and exp now: exp's line grew, GEMM's shrank, in the HTML too" {
	need_perf
	record_mm sample 1.5
	mv "$T/mm.json" "$T/base.json"
	record_mm sample 1.5 exp
	"$ANALYZE" -q --baseline "$T/base.json" -o "$T/cmp.json" "$T/mm.isc"
	valid_findings "$T/cmp.json"
	gemm=$(grep -n '# GEMM' "$ISC_SRC/tests/native/matmul.py" | cut -d: -f1)
	expl=$(grep -n '# EXP' "$ISC_SRC/tests/native/matmul.py" | cut -d: -f1)
	run jq '(.comparison.native.node_delta_pct | length) == (.native.tree.parent | length)' "$T/cmp.json"
	[ "$output" = true ]
	# the change at each line's frame (every node of one path has the same change)
	delta() {
		jq --argjson l "$1" '.native.tree as $t | [range($t.parent | length) as $i
			| select($t.frame[$i] >= 0 and $t.frames[$t.frame[$i]].kind == "python"
				and $t.frames[$t.frame[$i]].name == "work" and $t.frames[$t.frame[$i]].line == $l)
			| .comparison.native.node_delta_pct[$i]] | max' "$T/cmp.json"
	}
	grew=$(delta "$expl")
	shrank=$(delta "$gemm")
	echo "work at line $expl: $grew points, at line $gemm: $shrank points" >&2
	run jq -n "$grew >= 10"
	[ "$output" = true ]
	run jq -n "$shrank <= -10"
	[ "$output" = true ]
	run jq '[.comparison.native.functions[] | select((.name | test("gemm")) and .delta_pct < 0)] | length' "$T/cmp.json"
	((output >= 1))
	"$REPORT" -o "$T/cmp.html" "$T/cmp.json"
	run grep -c '<title id="isc-c[0-9]*-t">Differential flame graph: this run against the baselines</title>' "$T/cmp.html"
	[ "$output" = 1 ]
}

@test "--native-nodes bounds the tree: a cut on samples, the rest in [other] nodes, no count changed" {
	need_perf
	record_mm sample 1
	"$ANALYZE" -q --native-nodes=40 -o "$T/small.json" "$T/mm.isc"
	valid_findings "$T/small.json"
	# premise: the full tree has more than 40 nodes, so the bound cuts
	run jq '.native.tree.parent | length > 40' "$T/mm.json"
	[ "$output" = true ]
	run "$ISC_SRC/tests/native/check_tree.py" "$T/small.json" "$T/mm.json"
	echo "$output" >&2
	[ "$output" = ok ]
	"$REPORT" -f folded -o "$T/small.folded" "$T/small.json"
	run awk '{ s += $NF } END { print s }' "$T/small.folded"
	[ "$output" = "$(jq .native.samples "$T/small.json")" ]
	run "$ANALYZE" --native-nodes=15 "$T/mm.isc"
	[ "$status" -eq 2 ]
	[[ $output == *"invalid value '15' for --native-nodes: expected 16 to 1000000"* ]]
}

@test "the CPU split with native frames: a @ b (BINARY_OP, no call for exact mode) is torch op time" {
	need_perf
	py=$(torch_python) || skip "no Python with torch"
	for n in off on; do
		OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$RECORD" -q --no-cuda --python=exact --native=$n -o "$T/bo_$n.isc" -- \
			"$py" "$ISC_SRC/tests/native/binop.py" 1.5
		"$ANALYZE" -q -o "$T/bo_$n.json" "$T/bo_$n.isc"
		valid_findings "$T/bo_$n.json"
		jq -c '.cpu.in_iterations.split | [.python_ns, .torch_ops_ns, .other_c_ns]' "$T/bo_$n.json" >&2
	done
	# without native stacks exact mode also calls it a torch op since issue 24
	# (the operator's slot from its Python stack samples): the two agree
	run jq '.cpu.in_iterations.split | .torch_ops_ns >= 0.8 * (.python_ns + .ops_ns)' "$T/bo_off.json"
	[ "$output" = true ]
	# by construction it is torch's matmul: the native frames say so, inside the iterations and in the whole run
	run jq '.cpu.in_iterations.split | .torch_ops_ns >= 0.8 * (.python_ns + .ops_ns)' "$T/bo_on.json"
	[ "$output" = true ]
	run jq '.cpu.split.torch_ops_ns > .cpu.split.python_ns' "$T/bo_on.json"
	[ "$output" = true ]
	# the thread's own row too
	run jq '[.processes[].threads[] | select(.traced)] | max_by(.cpu_ns) | .torch_ops_ns > .python_ns' "$T/bo_on.json"
	[ "$output" = true ]
}

@test "the CPU split with native frames: numpy's a @ b in a torch process is other C code, not a torch op" {
	need_perf
	py=$(torch_python) || skip "no Python with torch"
	for n in off on; do
		OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$RECORD" -q --no-cuda --python=sample --native=$n -o "$T/bn_$n.isc" -- \
			"$py" "$ISC_SRC/tests/native/binop.py" 1.5 numpy
		"$ANALYZE" -q -o "$T/bn_$n.json" "$T/bn_$n.isc"
		valid_findings "$T/bn_$n.json"
		jq -c '.cpu.in_iterations.split | [.python_ns, .torch_ops_ns, .other_c_ns]' "$T/bn_$n.json" >&2
	done
	# without native stacks the Python sampler also calls it other C code
	# since issue 24 (the callee's type is numpy's, not torch's): the two agree
	run jq '.cpu.in_iterations.split | .other_c_ns >= 0.8 * (.python_ns + .ops_ns)' "$T/bn_off.json"
	[ "$output" = true ]
	# by construction it is numpy's matmul: other C code, inside the iterations and in the whole run
	run jq '.cpu.in_iterations.split | .other_c_ns >= 0.8 * (.python_ns + .ops_ns)' "$T/bn_on.json"
	[ "$output" = true ]
	run jq '.cpu.split.other_c_ns > .cpu.split.torch_ops_ns' "$T/bn_on.json"
	[ "$output" = true ]
}

# record_shares NAME ARGS...: the workload tests/native/NAME.py run with
# ARGS and a truth file (its own per-thread CPU measurements) last,
# recorded at 400 Hz (more samples per thread than the default 100 Hz for
# tighter bounds; Python stacks too), one BLAS thread, analyzed with the
# whole tree; the machine around it measured by tests/lib/runqueue.py.
# Files in $T/NAME.*; NATIVE=off records without native stacks.  glibc's
# malloc keeps freed memory (trim and mmap thresholds at 256 MiB): with
# its defaults each zlib.compress gave its 270 KiB of state back with
# madvise and faulted it in again, allocator time outside zlib's deflate
# calls whose length followed the other CPU's load (TLB shootdowns): 9.8 %
# of a pool thread's samples against 0.5 % of its measured time at load 5.
record_shares() {
	local name=$1 rec
	shift
	py=$(torch_python) || skip "no Python with torch"
	GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=268435456 \
		OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$RECORD" -q --no-cuda --python=sample --python-hz=400 \
		--native="${NATIVE:-on}" --native-hz=400 -o "$T/$name.isc" -- \
		"$py" "$ISC_SRC/tests/native/$name.py" "$@" "$T/$name.truth" &
	rec=$!
	"$ISC_SRC/tests/lib/runqueue.py" "$rec" "$T/$name.machine"
	wait "$rec"
	"$ANALYZE" -q --native-nodes=1000000 -o "$T/$name.json" "$T/$name.isc"
	valid_findings "$T/$name.json"
}

# check_shares NAME: each thread's planted native functions against the
# workload's own CPU times (tests/native/thread_shares.py: the bounds are
# there), first from the native samples alone; then under the Python
# frame that called them, which rests on the pairing with the Python
# sampler's samples (nearest in time on the thread, <= 25 ms): a loaded
# machine delays that sampler, so that check needs the CPUs to be this
# workload's (other runnable threads <= half the CPUs, measured around the
# recording) and skips saying so otherwise.
check_shares() {
	run "$ISC_SRC/tests/native/thread_shares.py" --no-py "$T/$1.json" "$T/$1.truth"
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "failed 0" ]
	ncpu=$(getconf _NPROCESSORS_ONLN)
	ext=$(jq -r '.external_runnable_mean // 0' "$T/$1.machine")
	if awk -v e="$ext" -v n="$ncpu" 'BEGIN { exit !(e > n / 2) }'; then
		skip "MACHINE ASSUMPTION NOT MET: the pairing with Python frames needs the CPUs; $ext other runnable threads on average on $ncpu CPUs while it was recorded (> $ncpu / 2)"
	fi
	run "$ISC_SRC/tests/native/thread_shares.py" "$T/$1.json" "$T/$1.truth"
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "failed 0" ]
}

@test "DataLoader, num_workers=0: the main thread's GEMM, deflate (libz) and SHA256_Update (libcrypto) in the shares it measured" {
	need_perf
	record_shares dataloader 2 0
	# premise: one thread did all three (the truth names it alone)
	run jq '.threads | length' "$T/dataloader.truth"
	[ "$output" = 1 ]
	check_shares dataloader
}

@test "DataLoader, two worker processes: each worker's deflate and SHA256_Update in the shares it measured, none in the main thread" {
	need_perf
	record_shares dataloader 2 2
	# premise: two workers made the items, each a thread of its own process
	run jq '[.threads[] | select(.whole)] | length' "$T/dataloader.truth"
	[ "$output" = 2 ]
	run jq '[.threads[].pid] | unique | length' "$T/dataloader.truth"
	[ "$output" = 3 ]
	check_shares dataloader
}

@test "DataLoader, two workers, 8 ms items: a worker's samples in deflate, right after its wait for the item, are under __getitem__" {
	need_perf
	# 8 ms items, 8 ms of GEMM a batch: each worker waits about 8 ms for
	# each item, and its first native samples of an item are next to a
	# Python sample taken in that wait (off CPU, in the queue's select).
	# Nearest in time alone put 7-14 % of deflate's samples there (86.4-92.9 %
	# under __getitem__; 95.7-99.2 % with the on-CPU rule: both workers of two
	# recordings at 4.8-6.6 other runnable threads, re-analysed).
	record_shares dataloader 3 2 8 8
	run jq '[.threads[] | select(.whole)] | length' "$T/dataloader.truth"
	[ "$output" = 2 ]
	# premise: the items are short (375 of them, under 12 ms of CPU each on average)
	run jq '[.threads[] | select(.whole) | .parts[1].ns + .parts[2].ns] | add / 375 / 1e6 < 12' "$T/dataloader.truth"
	[ "$output" = true ]
	check_shares dataloader
}

@test "tokenizer-like pool (ThreadPoolExecutor, GIL released): each thread's SHA256_Update and deflate in the shares it measured" {
	need_perf
	record_shares hashpool 1.5
	run jq '[.threads[] | select(.whole)] | length' "$T/hashpool.truth"
	[ "$output" = 2 ]
	check_shares hashpool
}

@test "one function, three C calls: callee naming and the native split each give step's measured shares, and differ where the callee hides torch" {
	need_perf
	# without native stacks: the callees' shares, and the split that
	# cannot see list(map(torch.exp, ...)) as torch (the premise)
	NATIVE=off record_shares callees 2
	mv "$T/callees.json" "$T/callees_off.json"
	run "$ISC_SRC/tests/native/callee_views.py" --off "$T/callees_off.json" "$T/callees.truth"
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "failed 0" ]
	# with native stacks: the same callees' shares, and the split from the native frames
	record_shares callees 2
	run "$ISC_SRC/tests/native/callee_views.py" "$T/callees.json" "$T/callees.truth"
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "failed 0" ]
	# the native frames under step: deflate, SHA256_Update and libtorch in
	# the measured proportions (and, on a machine with CPUs to spare, under step)
	check_shares callees
}

@test "a thread Python never sees: torch's OpenMP worker's samples are its CPU time, in libtorch's exp, under the line that dispatched it" {
	need_perf
	# passive: the worker sleeps between products instead of spinning in libgomp
	OMP_WAIT_POLICY=PASSIVE record_shares omp_pool 1.5
	# premise: one worker thread did work (its CPU time over 0.2 s)
	run jq '.threads | length' "$T/omp_pool.truth"
	[ "$output" = 1 ]
	tid=$(jq '.threads[0].tid' "$T/omp_pool.truth")
	# the planted function is its top one, and it runs no Python
	run jq -r --argjson t "$tid" '.native.threads[] | select(.tid == $t) | "\(.python) \(.top[0].name)"' "$T/omp_pool.json"
	[[ $output == "false Sleef_"*exp* ]]
	check_shares omp_pool
	# dispatched by the line that called torch.exp, its op (the dispatcher's
	# Python samples: after the pairing's gate in check_shares)
	line=$(grep -n '# EXP' "$ISC_SRC/tests/native/omp_pool.py" | cut -d: -f1)
	run jq -r --argjson t "$tid" '.native.threads[] | select(.tid == $t) | .dispatched_by[0] | "\(.op) \(.python.line) \(.pct >= 80)"' "$T/omp_pool.json"
	[ "$output" = "aten::exp_out $line true" ]
}
