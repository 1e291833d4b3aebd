#!/usr/bin/env bash
# Mutation score: plants each bug of tests/mutation/mutants.txt, one at a
# time, in a copy of the source tree and runs the tests that should catch
# it. Slow (a rebuild and a few tests per mutant): not part of the default
# run (scripts/test.sh, meson test); tests/README.md says when to run it.
#
#   tests/mutation/score.sh [-w DIR] [-f FILE] [-B] [-l] [ID_OR_GLOB...]
#
#   ID_OR_GLOB  run only the mutants whose id matches (shell pattern:
#               'compare-*'); default every mutant of the file
#   -f FILE     the mutants (default tests/mutation/mutants.txt)
#   -w DIR      work in DIR (kept afterwards; a second run with the same
#               DIR copies the sources over and rebuilds only what
#               changed); default a temporary directory, removed
#   -B          skip the baseline (every listed check must pass on the
#               unmutated copy first; skip it only when a run with the
#               same DIR just did it)
#   -l          list the mutants (id, file, tests) and exit
#
# For each mutant: the file must exist and every sed expression must change
# it (else: STALE, the source moved and the mutant must follow; not
# counted); the copy is rebuilt (tools, test programs and what the listed
# tests depend on; a build failure is BUILD-FAILED, not counted: a mutant
# is a plausible bug, not a syntax error); its tests run in order until
# one fails (KILLED) or all pass (SURVIVED); the file is restored.
# A mutant marked `equivalent` (its reason beside it) is run too and must
# survive; it is left out of the score.
#
# Score = killed / (applicable - equivalent); printed with every survivor
# and its description. Exit 0 when no mutant survived unexplained and none
# was stale or failed to build; 1 otherwise; 2 on a usage or set-up error.
#
# Needs: meson, ninja, jq, bats, the packages of scripts/install-deps.sh
# --tests. Nothing outside the repository and Debian's packages.
#
# The mutants file: entries separated by blank lines, one `key value` per
# line ('#' starts a comment line):
#   id          a unique name (stage-what)
#   file        the file to mutate, relative to the source root
#   sed         a sed expression (several `sed` lines apply in order; each
#               must change the file)
#   bug         one line: the plausible bug it plants
#   test        NAME [FILTER]: a meson test (`meson test --list`) that
#               prints TAP, and for a bats test an optional --filter
#               regular expression (no single quote); several `test`
#               lines run in order
#   equivalent  why the mutant cannot change anything observable
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MUTANTS=$SRC/tests/mutation/mutants.txt
WORK=
KEEP=0
BASELINE=1
LIST=0
while getopts "f:w:Blh" opt; do
	case $opt in
	f) MUTANTS=$(realpath "$OPTARG") ;;
	w) WORK=$OPTARG; KEEP=1 ;;
	B) BASELINE=0 ;;
	l) LIST=1 ;;
	h) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "usage: $0 [-w DIR] [-f FILE] [-B] [-l] [ID_OR_GLOB...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
PATTERNS=("$@")

[[ -r $MUTANTS ]] || { echo "score.sh: cannot read $MUTANTS" >&2; exit 2; }
for t in meson ninja jq bats; do
	command -v "$t" >/dev/null || { echo "score.sh: $t not found (scripts/install-deps.sh --tests)" >&2; exit 2; }
done

# ---- the mutants file --------------------------------------------------
declare -a IDS=()
declare -A M_FILE=() M_BUG=() M_EQUIV=() M_SEDS=() M_TESTS=()
# sed expressions and tests of one mutant are kept newline-separated
parse() {
	local id="" line key val lineno=0 bad=0
	local -A seen=()
	end_entry() {
		[[ -z $id ]] && return
		if [[ -z ${M_FILE[$id]:-} || -z ${M_SEDS[$id]:-} || -z ${M_BUG[$id]:-} || -z ${M_TESTS[$id]:-} ]]; then
			echo "score.sh: $MUTANTS: mutant $id needs file, sed, bug and test" >&2
			bad=1
		fi
		id=""
	}
	while IFS= read -r line || [[ -n $line ]]; do
		lineno=$((lineno + 1))
		[[ $line =~ ^[[:space:]]*# ]] && continue
		if [[ $line =~ ^[[:space:]]*$ ]]; then
			end_entry
			continue
		fi
		key=${line%%[[:space:]]*}
		val=${line#"$key"}
		val=${val#"${val%%[![:space:]]*}"}
		if [[ $key != id && -z $id ]]; then
			echo "score.sh: $MUTANTS:$lineno: '$key' before an id" >&2
			bad=1
			continue
		fi
		case $key in
		id)
			end_entry
			id=$val
			if [[ -n ${seen[$id]:-} ]]; then
				echo "score.sh: $MUTANTS:$lineno: id $id twice" >&2
				bad=1
			fi
			seen[$id]=1
			IDS+=("$id")
			;;
		file) M_FILE[$id]=$val ;;
		sed) M_SEDS[$id]+="$val"$'\n' ;;
		bug) M_BUG[$id]=$val ;;
		test) M_TESTS[$id]+="$val"$'\n' ;;
		equivalent) M_EQUIV[$id]=$val ;;
		*)
			echo "score.sh: $MUTANTS:$lineno: unknown key '$key'" >&2
			bad=1
			;;
		esac
	done <"$MUTANTS"
	end_entry
	return $bad
}
parse || exit 2

selected() { # selected ID: on the command line (or no pattern given)
	((${#PATTERNS[@]} == 0)) && return 0
	local p
	for p in "${PATTERNS[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $p ]] && return 0
	done
	return 1
}
RUN=()
for id in "${IDS[@]}"; do
	selected "$id" && RUN+=("$id")
done
if ((${#RUN[@]} == 0)); then
	echo "score.sh: no mutant matches ${PATTERNS[*]}" >&2
	exit 2
fi
if ((LIST)); then
	for id in "${RUN[@]}"; do
		printf '%-32s %-44s %s\n' "$id" "${M_FILE[$id]}" "$(printf '%s' "${M_TESTS[$id]}" | paste -sd ';')"
	done
	exit 0
fi

# ---- the copy --------------------------------------------------------------
if [[ -z $WORK ]]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/isc-score.XXXXXX")
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
M=$WORK/src
B=$WORK/build
LOG=$WORK/log
SAVED=$WORK/saved
CUR_FILE=
restore() {
	if [[ -n $CUR_FILE && -f $SAVED ]]; then
		cp "$SAVED" "$M/$CUR_FILE"
		touch "$M/$CUR_FILE"
	fi
	CUR_FILE=
}
cleanup() {
	restore
	((KEEP)) || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$M"
# the sources as they are in the checkout (no build directories, no .git);
# tar keeps the files' times, so a kept copy rebuilds only what changed
tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$M" -xf -
if [[ ! -f $B/build.ninja ]]; then
	if ! meson setup "$B" "$M" >"$LOG" 2>&1; then
		tail -n 30 "$LOG" >&2
		echo "score.sh: meson setup of the copy failed" >&2
		exit 2
	fi
fi
# target id -> its files (relative to the build directory); the non-test
# targets (tools, agents, test doubles, helpers) are built for every mutant
TARGETS_JSON=$(meson introspect "$B" --targets) || { echo "score.sh: meson introspect failed" >&2; exit 2; }
TESTS_JSON=$(meson introspect "$B" --tests) || { echo "score.sh: meson introspect failed" >&2; exit 2; }
mapfile -t BASE_TARGETS < <(jq -r '.[] | select(.name | test("^(test_|replay_|fuzz_)") | not) | .filename[]' \
	<<<"$TARGETS_JSON" | sed "s|^$B/||")

# targets_of TEST: what the meson test runs and depends on, as build files
targets_of() {
	jq -r --arg t "$1" --argjson tg "$TARGETS_JSON" '
		.[] | select(.name == $t) |
		([.depends[] as $d | $tg[] | select(.id == $d) | .filename[]] +
		 [.cmd[0] as $c | $tg[] | select(any(.filename[]; . == $c)) | .filename[]]) | .[]' <<<"$TESTS_JSON" |
		sed "s|^$B/||" | sort -u
}
test_exists() {
	jq -e --arg t "$1" 'any(.[]; .name == $t)' <<<"$TESTS_JSON" >/dev/null
}

# Every test named by a mutant to run, and the build files they need.
declare -A NEED=()
declare -a CHECKS=()
declare -A CHECK_SEEN=()
for id in "${RUN[@]}"; do
	while IFS= read -r t; do
		[[ -z $t ]] && continue
		name=${t%%[[:space:]]*}
		if ! test_exists "$name"; then
			echo "score.sh: mutant $id names test '$name', which this build does not have (meson test --list)" >&2
			exit 2
		fi
		if [[ $t == *"'"* ]]; then
			echo "score.sh: mutant $id: a filter may not hold a single quote: $t" >&2
			exit 2
		fi
		if [[ -z ${CHECK_SEEN[$t]:-} ]]; then
			CHECK_SEEN[$t]=1
			CHECKS+=("$t")
		fi
		if [[ -z ${NEED[$name]:-} ]]; then
			NEED[$name]=$(targets_of "$name" | tr '\n' ' ')
		fi
	done <<<"${M_TESTS[$id]}"
done
ALL_NEED=()
for name in "${!NEED[@]}"; do
	# shellcheck disable=SC2206
	ALL_NEED+=(${NEED[$name]})
done

build() { ninja -C "$B" "${BASE_TARGETS[@]}" "${ALL_NEED[@]}" >"$LOG" 2>&1; }

# run_check "NAME [FILTER]": 0 when the test passed, 1 when it failed;
# TESTS_RAN / TESTS_SKIPPED: the TAP lines it printed (a filter that
# selects nothing is not a check)
TESTS_RAN=0
TESTS_SKIPPED=0
run_check() {
	local t=$1 name filter args=()
	name=${t%%[[:space:]]*}
	filter=${t#"$name"}
	filter=${filter#"${filter%%[![:space:]]*}"}
	[[ -n $filter ]] && args=(--test-args "--filter '$filter'")
	rm -f "$B/meson-logs/score.json"
	meson test -C "$B" --no-rebuild --logbase score "${args[@]}" "$name" >"$LOG" 2>&1
	local rc=$?
	TESTS_RAN=$(jq -r '.stdout // ""' "$B/meson-logs/score.json" 2>/dev/null | grep -cE '^(not )?ok ')
	TESTS_SKIPPED=$(jq -r '.stdout // ""' "$B/meson-logs/score.json" 2>/dev/null | grep -ciE '^ok .*# skip')
	return $((rc != 0))
}

echo "# building the copy in $WORK (${#BASE_TARGETS[@]} targets and the test programs of ${#NEED[@]} tests)"
if ! build; then
	tail -n 30 "$LOG" >&2
	echo "score.sh: the unmutated copy does not build" >&2
	exit 2
fi

# ---- baseline: every check passes on the code as it is, and checks something
declare -A BAD_CHECK=()
if ((BASELINE)); then
	echo "# baseline: ${#CHECKS[@]} checks on the unmutated copy"
	for t in "${CHECKS[@]}"; do
		if ! run_check "$t"; then
			BAD_CHECK[$t]="fails on the unmutated copy"
			sed 's/^/#   /' "$LOG" | tail -n 20
		elif ((TESTS_RAN == 0)); then
			BAD_CHECK[$t]="runs no test (a filter that matches nothing?)"
		elif ((TESTS_SKIPPED == TESTS_RAN)); then
			BAD_CHECK[$t]="every test it runs skips here"
		fi
		if [[ -n ${BAD_CHECK[$t]:-} ]]; then
			echo "# BASELINE  $t: ${BAD_CHECK[$t]}"
		else
			echo "# baseline  $t: $TESTS_RAN tests pass"
		fi
	done
fi

# ---- the mutants -----------------------------------------------------------
declare -A RESULT=() DETAIL=()
for id in "${RUN[@]}"; do
	file=${M_FILE[$id]}
	t0=$SECONDS
	if [[ ! -f $M/$file ]]; then
		RESULT[$id]=stale
		DETAIL[$id]="$file does not exist"
		printf '%-13s %-32s %s\n' STALE "$id" "${DETAIL[$id]}"
		continue
	fi
	unusable=""
	while IFS= read -r t; do
		[[ -n $t && -n ${BAD_CHECK[$t]:-} ]] && unusable+="$t: ${BAD_CHECK[$t]}; "
	done <<<"${M_TESTS[$id]}"
	if [[ -n $unusable ]]; then
		RESULT[$id]=unchecked
		DETAIL[$id]=$unusable
		printf '%-13s %-32s %s\n' UNCHECKED "$id" "$unusable"
		continue
	fi
	cp "$M/$file" "$SAVED"
	CUR_FILE=$file
	stale=""
	while IFS= read -r expr; do
		[[ -z $expr ]] && continue
		cp "$M/$file" "$WORK/before"
		if ! sed -i -e "$expr" "$M/$file" 2>"$LOG"; then
			stale="sed -e '$expr' is not a valid expression: $(head -n 1 "$LOG")"
			break
		fi
		if cmp -s "$M/$file" "$WORK/before"; then
			stale="sed -e '$expr' changes nothing in $file"
			break
		fi
	done <<<"${M_SEDS[$id]}"
	if [[ -n $stale ]]; then
		restore
		RESULT[$id]=stale
		DETAIL[$id]=$stale
		printf '%-13s %-32s %s\n' STALE "$id" "$stale"
		continue
	fi
	if ! build; then
		RESULT[$id]="build-failed"
		DETAIL[$id]=$(grep -m 1 -E 'error:' "$LOG")
		printf '%-13s %-32s %s\n' BUILD-FAILED "$id" "${DETAIL[$id]}"
		restore
		continue
	fi
	RESULT[$id]=survived
	DETAIL[$id]=""
	while IFS= read -r t; do
		[[ -z $t ]] && continue
		if ! run_check "$t"; then
			RESULT[$id]=killed
			DETAIL[$id]="by $t"
			break
		fi
	done <<<"${M_TESTS[$id]}"
	restore
	if [[ -n ${M_EQUIV[$id]:-} ]]; then
		if [[ ${RESULT[$id]} == killed ]]; then
			RESULT[$id]="equiv-killed"
			printf '%-13s %-32s %s (%ds)\n' EQUIV-KILLED "$id" "marked equivalent but killed ${DETAIL[$id]}" $((SECONDS - t0))
		else
			RESULT[$id]=equivalent
			printf '%-13s %-32s %s (%ds)\n' equivalent "$id" "${M_EQUIV[$id]}" $((SECONDS - t0))
		fi
	elif [[ ${RESULT[$id]} == killed ]]; then
		printf '%-13s %-32s %s (%ds)\n' killed "$id" "${DETAIL[$id]}" $((SECONDS - t0))
	else
		printf '%-13s %-32s %s (%ds)\n' SURVIVED "$id" "${M_BUG[$id]}" $((SECONDS - t0))
	fi
done
# the copy as it was, for a kept DIR
build || echo "# the restored copy did not rebuild (see $LOG)"

# ---- the score ---------------------------------------------------------------
declare -A COUNT=()
for id in "${RUN[@]}"; do
	COUNT[${RESULT[$id]}]=$((${COUNT[${RESULT[$id]}]:-0} + 1))
done
killed=${COUNT[killed]:-0}
survived=${COUNT[survived]:-0}
equiv=$((${COUNT[equivalent]:-0} + ${COUNT[equiv-killed]:-0}))
scored=$((killed + survived))
echo
echo "# mutants: ${#RUN[@]} run; killed $killed, survived $survived, equivalent ${COUNT[equivalent]:-0}," \
	"equivalent but killed ${COUNT[equiv-killed]:-0}, stale ${COUNT[stale]:-0}," \
	"build failed ${COUNT[build-failed]:-0}, unchecked ${COUNT[unchecked]:-0}"
if ((scored > 0)); then
	awk -v k="$killed" -v n="$scored" -v e="$equiv" \
		'BEGIN { printf "# score: %d/%d killed (%.1f %%), %d equivalent left out\n", k, n, 100 * k / n, e }'
fi
status=0
for id in "${RUN[@]}"; do
	case ${RESULT[$id]} in
	survived) echo "# survivor $id (${M_FILE[$id]}): ${M_BUG[$id]}"; status=1 ;;
	equiv-killed) echo "# marked equivalent but killed: $id ${DETAIL[$id]}"; status=1 ;;
	stale | build-failed | unchecked) echo "# ${RESULT[$id]}: $id: ${DETAIL[$id]}"; status=1 ;;
	esac
done
((KEEP)) && echo "# work directory kept: $WORK"
exit $status
