#!/usr/bin/env bash
# Mutation proofs (TAP): a check repaired by issue 17 must go red when the
# bug it guards against is planted. The source tree is copied to a
# temporary directory and built there once (tools, agents, test doubles:
# no unit tests); then, for each mutation:
#   1. the check runs on the unmutated copy and must pass (a red baseline
#      would make "red" mean nothing),
#   2. one file of the copy is patched (sed; a patch that changes nothing
#      is a failure: the source moved and this script must follow),
#   3. ninja rebuilds what depends on that file, the check runs and must
#      fail; the file is restored and rebuilt.
#
#   tests/mutation/run.sh            (meson: suite "mutation"; scripts/test.sh)
# Environment: ISC_SRC (source root; default: this script's ../..),
# ISC_KINETO_DIR (the real Kineto traces; default ISC_SRC/tests/data/real/kineto).
set -uo pipefail

SRC=${ISC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KINETO=${ISC_KINETO_DIR:-$SRC/tests/data/real/kineto}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/isc-mutation.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
M=$WORK/src
B=$WORK/build
LOG=$WORK/log
n=0
failed=0

tap() { # tap OK|NOT DESCRIPTION
	n=$((n + 1))
	if [[ $1 == OK ]]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
		sed 's/^/#   /' "$LOG" | tail -n 30
	fi
}

# copy the sources (no build directories, no .git) and build the targets
# the checks below need
mkdir -p "$M"
tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$M" -xf -
if ! meson setup "$B" "$M" >"$LOG" 2>&1; then
	tap NOT "configure the copy"
	echo "1..$n"
	exit 1
fi
mapfile -t TARGETS < <(meson introspect "$B" --targets |
	jq -r '.[] | select(.name | test("^(test_|replay_|fuzz_)") | not) | .filename[]' | sed "s|^$B/||")
build() { ninja -C "$B" "${TARGETS[@]}" >"$LOG" 2>&1; }
if build; then
	tap OK "build the copy (${#TARGETS[@]} targets)"
else
	tap NOT "build the copy"
	echo "1..$n"
	exit 1
fi
has_cupti=$(meson introspect "$B" --targets | jq -r '[.[] | select(.name == "iscope-cuda")] | length')

# mutation NAME FILE SED-EXPRESSION CHECK...: the proof described above.
# FILE is relative to the source root, found by name if it moved.
mutation() {
	local name=$1 file=$2 expr=$3
	shift 3
	[[ -f $M/$file ]] || file=$(cd "$M" && find lib tools tests -name "$(basename "$file")" | head -n 1)
	if "$@" >"$LOG" 2>&1; then
		tap OK "$name: the check passes on the code as it is"
	else
		tap NOT "$name: the check passes on the code as it is"
		return
	fi
	cp "$M/$file" "$WORK/saved"
	sed -i -e "$expr" "$M/$file"
	if cmp -s "$M/$file" "$WORK/saved"; then
		echo "sed -e '$expr' changed nothing in $file" >"$LOG"
		tap NOT "$name: the mutation applies to $file"
		return
	fi
	if ! build; then
		tap NOT "$name: the mutated copy builds"
	elif "$@" >"$LOG" 2>&1; then
		echo "the check stayed green with the mutation: it cannot catch this bug" >>"$LOG"
		tap NOT "$name: the check goes red with the mutation"
	else
		tap OK "$name: the check goes red with the mutation"
		# which check caught it
		grep -E '^not ok|in test file|failed|^#   ' "$LOG" | head -n 4 | sed 's/^/#   /'
	fi
	cp "$WORK/saved" "$M/$file"
	touch "$M/$file"
	# the next check must see the code as it is again
	build || tap NOT "$name: the copy builds again after the mutation is undone"
}

export ISC_BUILD=$B ISC_SRC=$M

# 1. the agents create their shared-memory file 0644 instead of 0600
#    (lib/isc_shm.h: isc_shm_create, used by the Python and CUDA agents)
mutation "session permission (shm file 0644)" lib/isc_shm.h \
	's/O_NOFOLLOW | O_CLOEXEC, 0600)/O_NOFOLLOW | O_CLOEXEC, 0644); (void)fchmod(fd, 0644)/' \
	env ISC_HOSTILE="$B/tests/security/hostile_agent" \
	bats --tap --filter 'shared-memory file 0600' "$M/tests/security/session.bats"

# 2. the CUDA agent also enables CUPTI_ACTIVITY_KIND_KERNEL (serializes kernels)
if ((has_cupti)); then
	mutation "CUPTI activity kinds (KERNEL enabled too)" tools/iscope-record/cuda/cuda_agent.c \
		's/CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,/CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,/' \
		env ISC_GPU="$B/tests/gpu" ISC_CUDA_AGENT="$B/tools/iscope-record/cuda/libiscope-cuda.so" \
		bats --tap --filter 'sets the injection variables' "$M/tests/gpu/gpu.bats"
else
	n=$((n + 1))
	echo "ok $n - CUPTI activity kinds # SKIP no CUPTI: the CUDA agent is not built"
fi

# 3. the Kineto importer no longer flags ops with stream -1 ISC_GPU_FLAG_NO_STREAM
mutation "accuracy: stream -1 (NO_STREAM flag removed)" lib/merge/kineto_convert.c \
	'/it.flags |= ISC_GPU_FLAG_NO_STREAM;/d' \
	env ISC_KINETO_DIR="$KINETO" /usr/bin/python3 "$M/tests/accuracy/accuracy.py"

echo "1..$n"
((failed == 0))
