#!/usr/bin/env bats
# Every marked example of README.md and of the man pages runs, as written,
# and exits 0 (issue 18, deliverable 7; as jq runs its manual).  Examples
# are marked where they are written (tests/cli/doc_examples.py says how);
# a doc change that breaks one fails here.  Each document's examples run in
# order in one fresh directory holding the files they name (infer.py,
# serve.py, run.isc, findings.json, a Kineto trace, ...), with the built
# tools and a python3 that imports torch first on PATH.  Not marked (and so
# not run): the regression gates of the man pages (exit 3 by design) and
# the scripts that install packages.  README's gate example runs: its
# baselines are the run itself, which is not regressed.

load helpers
bats_require_minimum_version 1.5.0

EXTRACT=$ISC_SRC/tests/cli/doc_examples.py

setup_file() {
	F=$BATS_FILE_TMPDIR/fixture
	mkdir -p "$F/bin" "$F/nightly"
	ln -s "$(torch_python)" "$F/bin/python3"
	cp -r "$ISC_SRC/examples" "$F/examples"
	# a small workload standing for the reader's infer.py and serve.py
	cat > "$F/infer.py" <<'PY'
import argparse
from inferscope import scope, mark
p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=4)
a = p.parse_args()
def work(n):
    return sum(i * i for i in range(n))
for step in range(12):
    with scope("step"):
        work(2000 * a.batch)
        mark("tokens", n=a.batch)
PY
	cp "$F/infer.py" "$F/serve.py"
	export PATH="$F/bin:$ISC_BUILD/tools/iscope-record:$ISC_BUILD/tools/iscope-merge:$ISC_BUILD/tools/iscope-analyze:$ISC_BUILD/tools/iscope-report:$ISC_BUILD/tools/inferscope:$PATH"
	cd "$F"
	iscope-record -q -o run.isc -- python3 infer.py
	iscope-merge -o run.istl run.isc
	iscope-analyze -o findings.json run.istl
	cp run.isc server.isc
	cp run.isc client.isc
	cp run.isc a.isc
	cp run.isc b.isc
	cp run.isc new.isc
	cp findings.json base.json
	for i in 1 2 3; do cp findings.json "base$i.json"; done
	cp run.istl new.istl
	for i in 1 2 3; do cp findings.json "nightly/$i.json"; done
	cp "$ISC_SRC/tests/data/real/kineto/a100_simple_add.json.gz" trace.json.gz
	cp trace.json.gz trace.pt.trace.json.gz
	export DOC_PATH=$PATH
}

# run_examples DOC: each marked example of DOC, in order, in a copy of the fixture
run_examples() {
	local w=$BATS_TEST_TMPDIR/w n=0
	cp -r "$BATS_FILE_TMPDIR/fixture" "$w"
	"$PY" "$EXTRACT" "$1" > "$BATS_TEST_TMPDIR/examples"
	while IFS= read -r -d '' ex || [ -n "$ex" ]; do
		n=$((n + 1))
		echo "# example $n of $1:" >&3
		sed 's/^/#   /' <<< "$ex" >&3
		run --separate-stderr env PATH="$DOC_PATH" INFERSCOPE_PYTHON="$w/bin/python3" \
			timeout 300 bash -e -o pipefail -c "cd '$w'"$'\n'"$ex"$'\n'"wait"
		if [ "$status" -ne 0 ]; then
			echo "# exit $status; stderr: $stderr" >&3
			return 1
		fi
	done < "$BATS_TEST_TMPDIR/examples"
	[ "$n" -gt 0 ]
}

@test "README.md: the marked examples run" {
	run_examples "$ISC_SRC/README.md"
}

@test "inferscope(1): every example runs" {
	run_examples "$ISC_SRC/man/inferscope.1.in"
}

@test "iscope-record(1): every example runs" {
	run_examples "$ISC_SRC/man/iscope-record.1.in"
}

@test "iscope-merge(1): every example runs" {
	run_examples "$ISC_SRC/man/iscope-merge.1.in"
}

@test "iscope-analyze(1): every example but the regression gate runs" {
	run_examples "$ISC_SRC/man/iscope-analyze.1.in"
}

@test "iscope-report(1): every example runs" {
	run_examples "$ISC_SRC/man/iscope-report.1.in"
}

@test "the versions the man pages state are the build's" {
	grep -q "Layout version ($(jq -r .schema_version "$BATS_FILE_TMPDIR/fixture/findings.json") in this release)" \
		"$ISC_BUILD/man/iscope-analyze.1"
	grep -q "InferScope $("$ISC_BUILD/tools/iscope-report/iscope-report" --version | cut -d' ' -f2)" \
		"$ISC_BUILD/man/iscope-report.1"
}

@test "a marker that matches no example block is an error of the extractor" {
	printf '.\\" example\n.PP\ntext\n' > "$BATS_TEST_TMPDIR/bad.1"
	run "$PY" "$EXTRACT" "$BATS_TEST_TMPDIR/bad.1"
	[ "$status" -eq 1 ]
	printf 'no markers\n' > "$BATS_TEST_TMPDIR/none.md"
	run "$PY" "$EXTRACT" "$BATS_TEST_TMPDIR/none.md"
	[ "$status" -eq 1 ]
}
