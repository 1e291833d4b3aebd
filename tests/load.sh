#!/usr/bin/env bash
# The test suites under load: a CPU hog of our own on every core (one
# shell busy loop per CPU, `nproc`, at the tests' own priority, as another
# CPU-bound job on a shared CI machine), started before the suites and
# killed after them; then the summary of scripts/test.sh.
#
#   tests/load.sh [-n HOGS] [BUILD_DIR [MESON_TEST_ARG...]]
#
# BUILD_DIR defaults to build (configured and compiled with scripts/build.sh
# when it is not there yet); without MESON_TEST_ARGs every suite of it runs,
# as scripts/test.sh runs build/ (e.g. `tests/load.sh build --suite
# verdict` for one suite, `tests/load.sh build-asan --suite unit`). HOGS
# defaults to the number of CPUs.
#
# A test must pass under this load, or skip saying "MACHINE ASSUMPTION NOT
# MET: <figure>" when its premise (a quiet CPU) is measured not to hold
# (tests/README.md, "Expectations, known failures, skips"). Prints the CPU
# pressure the hogs made (PSI "some", /proc/pressure/cpu, over the whole
# run) and the load average, so that a green run shows it was loaded.
# Exit status: the summary's (1 when a test failed), 2 on usage.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

hogs=$(nproc)
if [[ ${1:-} == -n ]]; then
	[[ ${2:-} =~ ^[0-9]+$ ]] || { echo "usage: tests/load.sh [-n HOGS] [BUILD_DIR [MESON_TEST_ARG...]]" >&2; exit 2; }
	hogs=$2
	shift 2
fi
if [[ ${1:-} == -* ]]; then
	echo "usage: tests/load.sh [-n HOGS] [BUILD_DIR [MESON_TEST_ARG...]]" >&2
	exit 2
fi
build=${1:-build}
shift || true

if [[ ! -f $build/build.ninja ]]; then
	./scripts/build.sh "$build"
fi

# psi_some_us: the total time (us) some task waited for a CPU, or nothing
# when the kernel has no PSI
psi_some_us() {
	sed -n 's/^some .*total=\([0-9]*\)$/\1/p' /proc/pressure/cpu 2>/dev/null || true
}

pids=()
stop_hogs() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT
trap 'stop_hogs; exit 143' TERM

psi0=$(psi_some_us)
t0=$(date +%s%N)
for ((i = 0; i < hogs; i++)); do
	bash -c 'while :; do :; done' &
	pids+=("$!")
done
echo "== load: $hogs CPU hog(s) (pids ${pids[*]}) on $(nproc) CPU(s); meson test -C $build $*"

rm -f "$build/meson-logs/testlog.json" "$build/meson-logs/testlog.junit.xml"
st=0
meson test -C "$build" --print-errorlogs "$@" || st=$?

stop_hogs
psi1=$(psi_some_us)
t1=$(date +%s%N)
echo "== load: meson test exited $st after $(((t1 - t0) / 1000000000)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $psi0 && -n $psi1 ]]; then
	awk -v a="$psi0" -v b="$psi1" -v t=$(((t1 - t0) / 1000)) \
		'BEGIN { printf "== load: CPU pressure (PSI some) over the run: %.0f %%\n", 100 * (b - a) / t }'
else
	echo "== load: no /proc/pressure/cpu (no PSI): pressure not measured"
fi
exec python3 scripts/test-summary.py "$build"
