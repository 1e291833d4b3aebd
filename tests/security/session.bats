#!/usr/bin/env bats
# The session directory and its files, the agent's refusal of unsafe
# sessions, the workload's environment, and no shell anywhere.

load ../cli/helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	AGENT=$ISC_BUILD/tools/iscope-record/python
}

teardown() {
	rm -rf "$T"
}

@test "session directory 0700, shared-memory file 0600, both ours; removed at the end" {
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" -c '
import os, stat, sys
d = os.environ["INFERSCOPE_SESSION"]
f = os.path.join(d, "%d.shm" % os.getpid())
ds, fs, ls = os.lstat(d), os.lstat(f), os.lstat(os.path.join(d, "recorder.lock"))
print(d, oct(stat.S_IMODE(ds.st_mode)), stat.S_ISDIR(ds.st_mode), ds.st_uid == os.geteuid(),
      oct(stat.S_IMODE(fs.st_mode)), stat.S_ISREG(fs.st_mode), fs.st_uid == os.geteuid(),
      oct(stat.S_IMODE(ls.st_mode)))'
	[ "$status" -eq 0 ]
	read -r dir dmode isdir downer fmode isreg fowner lmode <<< "$output"
	[ "$dmode" = 0o700 ]
	[ "$isdir" = True ]
	[ "$downer" = True ]
	[ "$fmode" = 0o600 ]
	[ "$isreg" = True ]
	[ "$fowner" = True ]
	[ "$lmode" = 0o600 ]
	[[ $dir == /dev/shm/inferscope-* || $dir == "${TMPDIR:-/tmp}"/inferscope-* ]]
	[ ! -e "$dir" ]
}

@test "the agent refuses a session directory others can write to" {
	mkdir -m 0777 "$T/open"
	chmod 0777 "$T/open"
	run --separate-stderr env INFERSCOPE_SESSION="$T/open" PYTHONPATH="$AGENT" "$PY" -c 'pass'
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"inferscope: cannot attach: $T/open: not a private directory"* ]]
	[ -z "$(ls -A "$T/open")" ]
}

@test "the agent refuses a symbolic link as the session directory" {
	mkdir -m 0700 "$T/real"
	ln -s "$T/real" "$T/link"
	run --separate-stderr env INFERSCOPE_SESSION="$T/link" PYTHONPATH="$AGENT" "$PY" -c 'pass'
	[[ "$stderr" == *"cannot attach: $T/link: not a directory"* ]]
	[ -z "$(ls -A "$T/real")" ]
}

@test "the agent never follows a symbolic link planted at <pid>.shm (O_EXCL|O_NOFOLLOW)" {
	mkdir -m 0700 "$T/s"
	# exec keeps the pid: the link is named for the Python process
	run --separate-stderr env INFERSCOPE_SESSION="$T/s" PYTHONPATH="$AGENT" sh -c \
		'ln -s "$1/victim" "$2/$$.shm"; exec "$3" -c pass' _ "$T" "$T/s" "$PY"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"cannot attach: $T/s/"*".shm: File exists"* ]]
	[ ! -e "$T/victim" ]
}

@test "the workload's environment is the user's plus INFERSCOPE_SESSION, INFERSCOPE_[BIG_]RING_KB, INFERSCOPE_PYTHON_MODE, INFERSCOPE_CUDA_DRIVER_API, PYTHONPATH and the allocation shim's" {
	# (and CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH on a host with a CUDA driver)
	# a user environment with hostile-looking values and variables of ours
	local libc
	libc=$(ldd /bin/sh | sed -n 's/.*libc\.so\.6 => \([^ ]*\) .*/\1/p')
	[ -n "$libc" ]
	env -i PATH="$PATH" HOME="$HOME" PYTHONPATH=/user/path 'ODD=a b;$(touch pwned)`x`' \
		INFERSCOPE_SESSION=/user/session INFERSCOPE_RING_KB=4 INFERSCOPE_BIG_RING_KB=8 INFERSCOPE_TRACE_SIZE_MB=7 \
		LD_PRELOAD="$libc" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 INFERSCOPE_ALLOC_INTERVAL=1 \
		sh -c 'cd "$1" && env -0 > plain.env && "$2" -q -o t.isc -- env -0 > traced.env' _ "$T" "$RECORD"
	run "$PY" - "$T/plain.env" "$T/traced.env" "$AGENT" <<'PY'
import sys
def load(p):
    return dict(kv.split("=", 1) for kv in open(p, "rb").read().decode().split("\0") if kv)
plain, traced, agent = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
added = {k: traced[k] for k in traced.keys() - plain.keys()}
changed = {k: (plain[k], traced[k]) for k in plain.keys() & traced.keys() if plain[k] != traced[k]}
removed = plain.keys() - traced.keys()
assert not removed, removed
# the recorder tells the agent its mode (--python, sample or exact)
assert added.pop("INFERSCOPE_PYTHON_MODE", None) in ("sample", "exact"), traced
# and the CUDA agent whether to record DRIVER activity (--cuda-driver-api, off)
assert added.pop("INFERSCOPE_CUDA_DRIVER_API", None) == "0", traced
# on a host with a CUDA driver: the CUDA agent's injection variables
for k in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
    if k in added and added[k].endswith("libiscope-cuda.so"):
        del added[k]
# the allocation shim (iscope-record(1), ALLOCATION SAMPLING): its ring
# size, the workload's pid, first in LD_PRELOAD; AddressSanitizer told
# not to mind it (the user's ASAN_OPTIONS says so already: kept as it is;
# the recorder itself may be built with ASan, and the user's preload
# reaches it too)
assert added.pop("INFERSCOPE_ALLOC_RING_KB") == "256", traced
assert added.pop("INFERSCOPE_ALLOC_ROOT").isdigit(), traced
assert not added, added
assert set(changed) == {"PYTHONPATH", "INFERSCOPE_SESSION", "INFERSCOPE_RING_KB", "INFERSCOPE_BIG_RING_KB",
                        "LD_PRELOAD", "INFERSCOPE_ALLOC_INTERVAL"}, changed
pre = traced["LD_PRELOAD"].split(":")
assert len(pre) == 2 and pre[0].endswith("/libiscope-alloc.so") and pre[1] == plain["LD_PRELOAD"], pre
assert traced["INFERSCOPE_ALLOC_INTERVAL"] == "524288", traced["INFERSCOPE_ALLOC_INTERVAL"]
assert traced["PYTHONPATH"] == agent + ":/user/path", traced["PYTHONPATH"]
assert traced["INFERSCOPE_SESSION"].startswith(("/dev/shm/inferscope-", "/tmp/inferscope-")), traced
# 7 MiB: 8 big rings of 7 MiB / 16 rounded down to a power of two (256 KiB);
# the 56 others share the rest (3 MiB / 56 = 56 KiB), at least 64 KiB
assert traced["INFERSCOPE_BIG_RING_KB"] == "256", traced["INFERSCOPE_BIG_RING_KB"]
assert traced["INFERSCOPE_RING_KB"] == "64", traced["INFERSCOPE_RING_KB"]
assert traced["ODD"] == "a b;$(touch pwned)`x`"
print("ok")
PY
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	[ ! -e "$T/pwned" ]
	# without the user's variables of ours, only ours are added
	env -i PATH="$PATH" sh -c 'cd "$1" && env -0 > plain2.env && "$2" -q -o t.isc -- env -0 > traced2.env' _ "$T" "$RECORD"
	run "$PY" -c '
import sys
load = lambda p: set(kv.split("=", 1)[0] for kv in open(p, "rb").read().decode().split("\0") if kv)
cuda = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}  # with a CUDA driver only
print(" ".join(sorted(load(sys.argv[2]) - load(sys.argv[1]) - cuda)))' "$T/plain2.env" "$T/traced2.env"
	[ "$output" = "ASAN_OPTIONS INFERSCOPE_ALLOC_INTERVAL INFERSCOPE_ALLOC_RING_KB INFERSCOPE_ALLOC_ROOT INFERSCOPE_BIG_RING_KB INFERSCOPE_CUDA_DRIVER_API INFERSCOPE_PYTHON_MODE INFERSCOPE_RING_KB INFERSCOPE_SESSION LD_PRELOAD PYTHONPATH" ]
	run "$PY" -c '
import sys
print([kv for kv in open(sys.argv[1], "rb").read().decode().split("\0") if kv.startswith("ASAN_OPTIONS=")])' "$T/traced2.env"
	[ "$output" = "['ASAN_OPTIONS=verify_asan_link_order=0']" ]
	# --memory-sampling=off: only the interval, 0 (a shim the user preloads stays off)
	env -i PATH="$PATH" sh -c 'cd "$1" && "$2" -q --memory-sampling=off -o t.isc -- env -0 > traced3.env' _ "$T" "$RECORD"
	run "$PY" -c '
import sys
load = lambda p: dict(kv.split("=", 1) for kv in open(p, "rb").read().decode().split("\0") if kv)
e = load(sys.argv[2])
print(" ".join(sorted(k for k in set(e) - set(load(sys.argv[1])) if "ALLOC" in k or k in ("LD_PRELOAD", "ASAN_OPTIONS"))), e["INFERSCOPE_ALLOC_INTERVAL"])' "$T/plain2.env" "$T/traced3.env"
	[ "$output" = "INFERSCOPE_ALLOC_INTERVAL 0" ]
}

@test "no shell: the tools run no shell and exec the workload's argv as it is" {
	# source audit: the only exec is execvpe(argv) in lib/record/record.c; no
	# system(), popen(), wordexp() or exec of a shell in the C sources
	run grep -rnE '\b(system|popen|wordexp|execl|execlp|execle|execv|execvp)[[:space:]]*\(' \
		"$ISC_SRC/lib" "$ISC_SRC/tools" --include='*.c' --include='*.h'
	[ "$status" -eq 1 ]
	run grep -rn 'execvpe(' "$ISC_SRC/lib" "$ISC_SRC/tools" --include='*.c'
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"lib/record/record.c:"*"execvpe(r->o->argv[0], r->o->argv, env)"* ]]
	# the Python side: no subprocess, os.system or os.popen
	run grep -rnE 'subprocess|os\.system|os\.popen|os\.exec' "$ISC_SRC/tools/iscope-record/python" --include='*.py'
	[ "$status" -eq 1 ]
	# behaviour: arguments and names full of shell syntax are data
	cd "$T"
	run "$RECORD" -q -o t.isc -- "$PY" -c '
import sys
def f(): pass
f.__code__ = f.__code__.replace(co_name="$(touch pwned1)", co_filename=";touch pwned2;`touch pwned3`")
try:
    f.__code__ = f.__code__.replace(co_qualname="$(touch pwned4)")
except TypeError:
    pass
for _ in range(10): f()' '$(touch pwned5)' '; touch pwned6'
	[ "$status" -eq 0 ]
	"$MERGE" --dump t.isc > dump.txt
	grep -q 'touch pwned' dump.txt
	"$ANALYZE" t.isc > f.json
	"$REPORT" f.json > r.md
	"$REPORT" -f html f.json > r.html
	run ls "$T"
	[[ "$output" != *pwned* ]]
}
