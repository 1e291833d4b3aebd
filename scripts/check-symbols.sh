#!/usr/bin/env bash
# Every global symbol the stage libraries (lib/meson.build) define starts
# with isc_ (STYLE.md, names): runs nm over each archive and prints TAP, one
# test per object file, naming any other symbol.  Symbols the compiler or a sanitizer adds (__asan_*,
# __odr_asan_gen_*, __sancov_*: reserved names, leading "__") are ignored.
#
#   scripts/check-symbols.sh BUILD_DIR/lib/libisc_common.a ...
set -uo pipefail

[[ $# -gt 0 ]] || { echo "usage: check-symbols.sh ARCHIVE..." >&2; exit 2; }
nm=${NM:-nm}
out=$("$nm" -g --defined-only "$@") || { echo "Bail out! nm failed on $*"; exit 1; }
# nm prints "FILE.o:" before each member's symbols, "ADDR TYPE NAME" after
report=$(echo "$out" | awk '
	/\.a:$/ { next }
	/:$/ { obj = substr($0, 1, length($0) - 1); objs[++n] = obj; next }
	NF == 3 && $3 !~ /^isc_/ && $3 !~ /^__/ { bad[obj] = bad[obj] " " $3 }
	END { for (i = 1; i <= n; i++) print objs[i] "\t" bad[objs[i]] }')
total=$(echo "$report" | grep -c .)
[[ $total -gt 0 ]] || { echo "Bail out! no object files in $*"; exit 1; }
echo "1..$total"
i=0
rc=0
while IFS=$'\t' read -r obj bad; do
	i=$((i + 1))
	if [[ -z $bad ]]; then
		echo "ok $i $obj"
	else
		echo "not ok $i $obj: global symbols without the isc_ prefix:$bad"
		rc=1
	fi
done <<<"$report"
exit $rc
