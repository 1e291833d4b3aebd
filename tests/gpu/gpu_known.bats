#!/usr/bin/env bats
# Known failures of the CUDA agent against the test doubles (tests/README.md,
# "Expectations, known failures, skips"): each test here is its own meson
# test with should_fail (tests/gpu/meson.build), so a fix shows as an
# unexpected pass and the test moves to gpu.bats.

load ../cli/helpers
bats_require_minimum_version 1.5.0

GPU=${ISC_GPU:-$ISC_BUILD/tests/gpu}
TL=$GPU/tlcheck

setup() {
	T=$(mktemp -d)
	unset LD_LIBRARY_PATH CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH INFERSCOPE_PYTHON_MODE FAKE_CUPTI_CB_UNLOCKED \
		INFERSCOPE_CUDA_CALLBACKS INFERSCOPE_CUDA_DRIVER_API
	mkdir -p "$T/lib"
	for l in libcuda.so.1 libcupti.so.13; do
		ln -sf "$GPU/$l" "$T/lib/$l"
	done
	export LD_LIBRARY_PATH=$T/lib
}

teardown() {
	rm -rf "$T"
}

# KNOWN FAILURE (issue 29, found in the r6 review; also in main before
# r6-launch): sample mode knows a Python line by (code object address,
# instruction offset) in its site cache (and, since r6-launch, in each
# thread's last line), never checking that the code object there is still
# the one it described.  A code object freed and another made at its
# address (exec'd or regenerated code: torch.fx recompiles, Dynamo) gets
# the dead one's line.
@test "site cache: a code object made at a freed one's address gets its own Python line, not the freed one's" {
	"$RECORD" -q -o "$T/t.isc" -- "$PY" "$ISC_SRC/tests/gpu/reuse.py" 20 > "$T/out" 2> "$T/err"
	grep -qx 'reuse.py done, injected=1' "$T/out"
	# the premise: CPython put later code objects where earlier ones were
	n=$(sed -n 's/^code object addresses: \([0-9]*\) of 20$/\1/p' "$T/out")
	[ "$n" -lt 20 ]
	"$MERGE" -o "$T/t.istl" "$T/t.isc"
	"$TL" "$T/t.istl" > "$T/check"
	# each launch's line from its kernel (by correlation id): fI's kernel lasts 1000+I ns, its call is on line I+2
	run -0 awk '/^op kernel /{for(i=1;i<=NF;i++){if($i~/^corr=/)c=substr($i,6); if($i~/^dur=/)d=substr($i,5)} dur[c]=d}
	/^api cudaLaunchKernel /{s="-"; for(i=1;i<=NF;i++){if($i~/^corr=/)c=substr($i,6); if($i~/^site=/)s=substr($i,6)} site[c]=s}
	END{ok=0; bad=0; for(c in site){n=dur[c]-1000; if(site[c]=="f" n "@gen_reuse.py:" (n+2)) ok++; else bad++} print "ok=" ok " bad=" bad}' "$T/check"
	[ "$output" = "ok=20 bad=0" ]
}
