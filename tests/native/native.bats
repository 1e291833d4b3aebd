#!/usr/bin/env bats
# Native stacks (issue 26, phase 1): recorded with iscope-record --native,
# merged, unwound offline (tests/native/nstacks, the analysis pass's call
# in phase 2) and checked against call chains known by construction:
#   - main -> chain_run -> a -> b -> spin in a library built with frame
#     pointers, without, with its CFI in .debug_frame only, with no CFI,
#     and stripped (tests/native/chain_lib.c);
#   - a torch loop whose time is torch.matmul (tests/native/matmul.py):
#     the GEMM kernel under the Python line that called matmul;
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
