# Shared by the fault suites: the tools (tests/cli/helpers.bash), the
# workloads, and polling helpers.  Nothing here sleeps to synchronise:
# wait_for polls a condition with a bounded number of tries.
load ../cli/helpers
WL=$ISC_SRC/tests/faults/workloads

# wait_for SECONDS COMMAND...: runs COMMAND every 20 ms until it succeeds;
# fails (status 1) when it has not after SECONDS.
wait_for() {
	local tries=$(($1 * 50))
	shift
	while ((tries-- > 0)); do
		"$@" && return 0
		sleep 0.02
	done
	echo "# wait_for: timed out: $*" >&3
	return 1
}

# gone PID: true once no process PID exists (or it is a zombie).
gone() {
	! kill -0 "$1" 2>/dev/null || [[ $(ps -o stat= -p "$1" 2>/dev/null) == Z* ]]
}

# sleeping PID: true once PID is in state S (interruptible sleep: blocked
# in a system call such as select).
sleeping() {
	[[ $(ps -o stat= -p "$1" 2>/dev/null) == S* ]]
}

# field FILE KEY: the value after "KEY=" on the first line of FILE holding it.
field() {
	grep -o "$2=[^ ]*" "$1" | head -n 1 | cut -d= -f2
}

# jget FILE PATH: a value from a JSON document (dotted path, list indices).
jget() {
	"$PY" -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}
