#!/usr/bin/env bats
# The independent decoder (isctrace.py, written from formats/*.md) against
# what the C tools write: a real recording of tests/e2e/workloads/pure_python.py
# (leaf() called exactly 10000 times, mid() 100 times), its timeline, its
# --dump, and damaged copies of it.
#
# ISC_BUILD: the build directory (default "build", relative to the
# repository root).  ISC_PYTHON: the interpreter the workload runs under
# (default /usr/bin/python3).  ISC_DECODER_PYTHON: the one that runs the
# decoder; it needs the zstandard module (Debian: python3-zstandard).

bats_require_minimum_version 1.5.0

setup_file() {
	# exact Python mode: these tests check every call of the workload in the trace
	export INFERSCOPE_PYTHON_MODE=exact
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	ISC_BUILD=${ISC_BUILD:-build}
	[[ $ISC_BUILD == /* ]] || ISC_BUILD=$ROOT/$ISC_BUILD
	REC=$ISC_BUILD/tools/iscope-record/iscope-record
	MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	DEC=$BATS_TEST_DIRNAME/isctrace.py
	WPY=${ISC_PYTHON:-/usr/bin/python3}
	[[ -x $WPY ]] || WPY=$(command -v python3)
	DPY=
	for p in "${ISC_DECODER_PYTHON:-}" /usr/bin/python3 "$(command -v python3)"; do
		if [[ -n $p ]] && "$p" -c 'import zstandard' 2>/dev/null; then
			DPY=$p
			break
		fi
	done
	WL=$ROOT/tests/e2e/workloads/pure_python.py
	T=$BATS_FILE_TMPDIR
	if [[ ! -f $WL ]]; then
		WL=$T/pure_python.py
		cat > "$WL" <<'PY'
def leaf(i):
    return i * i % 7


def mid():
    total = 0
    for i in range(100):
        total += leaf(i)
    return total


for _ in range(100):
    mid()
PY
	fi
	export ROOT ISC_BUILD REC MERGE DEC WPY DPY WL T
	# an unbuilt tool is a failure of every test, not a skip
	local t
	for t in "$REC" "$MERGE"; do
		if [[ ! -x $t ]]; then
			echo "missing tool: $t (build first, or set ISC_BUILD)" >&2
			return 1
		fi
	done
	# each status is kept and checked by the first test, so that the tests
	# of what was written still run when one of them failed
	st=0
	"$REC" -q -o "$T/t.isc" -- "$WPY" "$WL" > "$T/workload.out" 2> "$T/record.err" || st=$?
	echo "$st" > "$T/record.rc"
	st=0
	"$MERGE" -o "$T/t.istl" "$T/t.isc" 2> "$T/merge.err" || st=$?
	echo "$st" > "$T/merge.rc"
	st=0
	"$MERGE" --dump "$T/t.isc" > "$T/dump.txt" 2>> "$T/merge.err" || st=$?
	echo "$st" > "$T/dump.rc"
	st=0
	"$MERGE" --dump-times "$T/t.isc" > "$T/dump-times.txt" 2>> "$T/merge.err" || st=$?
	echo "$st" > "$T/dump-times.rc"
	local f
	if [[ -n $DPY ]]; then
		for f in isc istl; do
			rc=0
			"$DPY" "$DEC" --count leaf --count mid "$T/t.$f" > "$T/$f.json" 2> "$T/$f.err" || rc=$?
			echo "$rc" > "$T/$f.rc"
		done
	fi
}

setup() {
	[[ -n $DPY ]] || skip "no python3 with the zstandard module (apt-get install python3-zstandard)"
	[[ -s $T/t.isc ]] || {
		cat "$T/record.err" >&2
		false
	}
}

# Prints one value of a decoder summary: field FILE.json PYTHON-EXPRESSION-ON-d
field() {
	"$DPY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"d": d})
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1" "$2"
}

# A test that needs Python events fails when the agent recorded none:
# that is the failure these tests exist to catch, not a reason to skip.
need_agent() {
	local n
	n=$(field "$T/isc.json" 'd["events"]')
	echo "agent events in the trace: $n (0: the Python agent recorded nothing; is it in $ISC_BUILD?)"
	[ "$n" -gt 0 ]
}

@test "the recording, the merge and both dumps exited 0" {
	cat "$T/record.err" "$T/merge.err"
	[ "$(cat "$T/record.rc")" -eq 0 ]
	[ "$(cat "$T/merge.rc")" -eq 0 ]
	[ "$(cat "$T/dump.rc")" -eq 0 ]
	[ "$(cat "$T/dump-times.rc")" -eq 0 ]
}

@test "the trace decodes with no invariant broken" {
	echo "decoder errors: $(field "$T/isc.json" 'd["errors"]')"
	[ "$(cat "$T/isc.rc")" -eq 0 ]
	[ "$(field "$T/isc.json" 'd["format"]')" = trace ]
	[ "$(field "$T/isc.json" 'd["chunks"].get("END", 0)')" -eq 1 ]
	[ "$(field "$T/isc.json" 'd["damaged"]')" -eq 0 ]
}

@test "the timeline decodes with no invariant broken" {
	echo "decoder errors: $(field "$T/istl.json" 'd["errors"]')"
	cat "$T/merge.err"
	[ "$(cat "$T/istl.rc")" -eq 0 ]
	[ "$(field "$T/istl.json" 'd["format"]')" = timeline ]
	[ "$(field "$T/istl.json" 'd["order_violations"]')" -eq 0 ]
}

@test "the trace holds the events its END chunk counts" {
	need_agent
	ev=$(field "$T/isc.json" 'd["events"] - d["dropped_records"]')
	end=$(field "$T/isc.json" 'd["end"]["events"]')
	echo "EVENTS records $ev, END events $end"
	[ "$ev" -eq "$end" ]
	[ "$(field "$T/isc.json" 'd["unnamed_refs"]')" -eq 0 ]
}

@test "decoder, timeline END and --dump-times count the same events" {
	need_agent
	dec=$(field "$T/istl.json" 'd["events"]')
	end=$(field "$T/istl.json" 'd["end"]["events"]')
	dump=$(sed -n 's/^END events=\([0-9]*\) .*/\1/p' "$T/dump-times.txt")
	lines=$(grep -vc -e '^#' -e '^END ' "$T/dump-times.txt")
	echo "decoder $dec, END $end, --dump-times END $dump, --dump-times lines $lines"
	[ "$dec" -eq "$end" ]
	[ "$dec" -eq "$dump" ]
	[ "$dec" -eq "$lines" ]
}

@test "--dump shows every event but the sampler and allocation records" {
	need_agent
	# allocation records vary with the sampling, and the Python stack samples (which exact
	# mode records too from 1.4) are --dump-times only as well (formats/timeline.md §9)
	samples=$(field "$T/istl.json" 'sum(d["records"].get(k, 0) for k in ("PROC_SAMPLE", "THREAD_SAMPLE", "PRESSURE", "MEMINFO", "NUMA_MAPS", "SMAPS", "CLOCK_PAIR", "THREAD_NAME", "PY_SAMPLE", "PY_SAMPLER", "TL_ALLOC", "TL_FREE", "TL_ALLOC_SITE", "TL_ALLOC_INFO"))')
	dec=$(field "$T/istl.json" 'd["events"]')
	lines=$(grep -vc -e '^#' -e '^END ' "$T/dump.txt")
	echo "decoder $dec events, $samples sampler records, --dump $lines lines"
	[ "$lines" -eq $((dec - samples)) ]
}

@test "leaf is called exactly 10000 times and mid 100 times" {
	need_agent
	[ "$(field "$T/isc.json" 'd["calls"]["leaf"]')" -eq 10000 ]
	[ "$(field "$T/isc.json" 'd["calls"]["mid"]')" -eq 100 ]
	[ "$(field "$T/istl.json" 'd["calls"]["leaf"]')" -eq 10000 ]
	[ "$(field "$T/istl.json" 'd["calls"]["mid"]')" -eq 100 ]
	[ "$(grep -c '^P1 T1 B python leaf ' "$T/dump.txt")" -eq 10000 ]
	[ "$(grep -c '^P1 T1 E python leaf [^ ]*$' "$T/dump.txt")" -eq 10000 ]
}

@test "record | merge | decoder in a pipe" {
	need_agent
	run bash -c '"$REC" -q -- "$WPY" "$WL" 2>/dev/null | "$MERGE" | "$DPY" "$DEC" --count leaf -'
	echo "$output" | tail -30
	[ "$status" -eq 0 ]
	[[ "$output" == *'"leaf": 10000'* ]]
}

@test "a truncated trace is reported, with what precedes the cut" {
	size=$(stat -c %s "$T/t.isc")
	head -c $((size - 7)) "$T/t.isc" > "$T/cut.isc"
	run "$DPY" "$DEC" "$T/cut.isc"
	echo "$output" | tail -20
	[ "$status" -eq 1 ]
	[[ "$output" == *"truncated frame at byte"* ]]
	[[ "$output" == *"no END chunk"* ]]
	[ "$(echo "$output" | "$DPY" -c 'import json, sys; print(json.load(sys.stdin)["chunks"]["FILE_HEADER"])')" -eq 1 ]
}

@test "a corrupt frame costs only itself: both readers resynchronise" {
	"$DPY" - "$T/t.isc" "$T/bad.isc" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x5A  # inside the big EVENTS frame
open(sys.argv[2], "wb").write(b)
PY
	run "$DPY" "$DEC" "$T/bad.isc"
	echo "$output" | tail -30
	[ "$status" -eq 1 ]
	[[ "$output" == *"damaged frame at byte"* ]]
	[ "$(echo "$output" | "$DPY" -c 'import json, sys; print(json.load(sys.stdin)["chunks"].get("END", 0))')" -eq 1 ]
	run --separate-stderr "$MERGE" --dump "$T/bad.isc"
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == END* ]]
	[[ "$stderr" == *"bad.isc: "*"(kept "* ]]
}

@test "skippable frames are ignored by both readers" {
	"$DPY" - "$T/t.isc" "$T/skip.isc" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
skip = struct.pack("<II", 0x184D2A5E, 5) + b"hello"
# after the header frame: parse its length from the zstd frame header
import zstandard
d = zstandard.ZstdDecompressor().decompressobj()
d.decompress(b)
first = len(b) - len(d.unused_data)
open(sys.argv[2], "wb").write(b[:first] + skip + b[first:] + skip)
PY
	run "$DPY" "$DEC" "$T/skip.isc"
	[ "$(echo "$output" | "$DPY" -c 'import json, sys; print(json.load(sys.stdin)["skippable_frames"])')" -eq 2 ]
	[ "$(echo "$output" | "$DPY" -c 'import json, sys; d = json.load(sys.stdin); print(len(d["errors"]))')" -eq \
	  "$(field "$T/isc.json" 'len(d["errors"])')" ]
	run --separate-stderr "$MERGE" --dump "$T/skip.isc"
	[ "$status" -eq 0 ]
	diff <(echo "$output") "$T/dump.txt"
}

@test "the decoder rejects a chunk with reserved flags set" {
	"$DPY" - "$T/t.isc" "$T/flags.isc" <<'PY'
import struct, sys, zstandard
b = open(sys.argv[1], "rb").read()
chunk = struct.pack("<IHHIIQII", 0x4B435349, 99, 1, 0, 0, 0, 0, 0)
frame = zstandard.ZstdCompressor(write_checksum=True).compress(chunk)
d = zstandard.ZstdDecompressor().decompressobj()
d.decompress(b)
first = len(b) - len(d.unused_data)
open(sys.argv[2], "wb").write(b[:first] + frame + b[first:])
PY
	run "$DPY" "$DEC" "$T/flags.isc"
	echo "$output" | tail -20
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad chunk header (magic 0x4b435349, flags 0x1"* ]]
	run "$MERGE" --dump "$T/flags.isc"
	[ "$status" -eq 1 ]
}

@test "threads, a fork child, scopes and marks: the timeline stays consistent" {
	need_agent
	cat > "$T/threads.py" <<'PY'
import os
import threading

from inferscope import mark, scope


def leaf(i):
    return i


def work(n):
    with scope("work"):
        for i in range(n):
            leaf(i)
        mark("done", n=n)


threads = [threading.Thread(target=work, args=(2000,), name="w%d" % i) for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
pid = os.fork()
if pid == 0:
    work(500)
    os._exit(0)
os.waitpid(pid, 0)
PY
	"$REC" -q -o "$T/thr.isc" -- "$WPY" "$T/threads.py"
	"$MERGE" -o "$T/thr.istl" "$T/thr.isc"
	run "$DPY" "$DEC" --count leaf --count work "$T/thr.istl"
	echo "$output" | tail -40
	[ "$status" -eq 0 ]
	echo "$output" > "$T/thr.json"
	[ "$(field "$T/thr.json" 'd["calls"]["leaf"]')" -eq 6500 ]
	[ "$(field "$T/thr.json" 'd["calls"]["work"]')" -eq 8 ]  # 4 python spans + 4 scopes
	[ "$(field "$T/thr.json" 'd["records"]["MARK"]')" -eq 4 ]
	[ "$(field "$T/thr.json" 'len({t["pid"] for t in d["threads"]})')" -eq 2 ]
	[ "$(field "$T/thr.json" 'sorted(t["name"] for t in d["threads"] if t["name"] and t["name"][0] == "w")')" = '["w0", "w1", "w2"]' ]
	run "$DPY" "$DEC" --count leaf "$T/thr.isc"
	[ "$(echo "$output" | "$DPY" -c 'import json, sys; print(json.load(sys.stdin)["calls"]["leaf"])')" -eq 6500 ]
}

@test "a flight-recorder trace: evicted frames, no broken invariant" {
	need_agent
	"$REC" -q --ring=8K -o "$T/ring.isc" -- "$WPY" "$WL" > /dev/null
	run "$DPY" "$DEC" "$T/ring.isc"
	echo "$output" | tail -30
	[ "$status" -eq 0 ]
	echo "$output" > "$T/ring.json"
	[ "$(field "$T/ring.json" 'd["end"]["lost_frames"] > 0')" = True ]
	[ "$(field "$T/ring.json" 'd["rounds"]')" -eq 1 ]
	"$MERGE" -o "$T/ring.istl" "$T/ring.isc"
	run "$DPY" "$DEC" "$T/ring.istl"
	[ "$status" -eq 0 ]
}

@test "spans left open by os._exit() are closed in time order" {
	need_agent
	cat > "$T/exit.py" <<'PY'
import os


def inner():
    os._exit(3)


def outer():
    inner()


outer()
PY
	run "$REC" -q -o "$T/exit.isc" -- "$WPY" "$T/exit.py"
	[ "$status" -eq 3 ]
	run --separate-stderr "$MERGE" --log-level=info --dump-times "$T/exit.isc"
	echo "$output" | tail -12
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"E python outer "*"(closed by merge)"* ]]
	# the times of the dump never go back (formats/timeline.md §6)
	echo "$output" | awk '/^[0-9]/ { if ($1 < last) { print "line " NR " goes back: " $0; bad = 1 } last = $1 }
		END { exit bad }'
	[[ "$stderr" != *"after their reorder window"* ]]
}
