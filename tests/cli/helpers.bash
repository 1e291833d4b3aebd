# Shared by the bats suites: tool paths, a Python interpreter, temp dirs.
ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
RECORD=$ISC_BUILD/tools/iscope-record/iscope-record
MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
REPORT=$ISC_BUILD/tools/iscope-report/iscope-report

# Any CPython 3 for tests that need no torch; the torch one for the rest.
PY=${ISC_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
torch_python() {
	"$ISC_SRC/scripts/find-python.sh"
}

# Runs a command with a pseudo-terminal as stdout (util-linux script).
on_tty() {
	script -qec "$*" /dev/null
}

# valid_findings FILE...: FILEs are valid findings documents (the JSON
# Schema formats/findings.schema.json, jsonschema; tests/lib/validate_findings.py).
valid_findings() {
	"$ISC_SRC/tests/lib/validate_findings.py" "$@"
}
