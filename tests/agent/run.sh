#!/bin/sh
# Tests the Python agent without the recorder (see check_shm.py).
#   run.sh [PYDIR]
# PYDIR is the built tools/iscope-record/python directory (meson passes it);
# without it the agent is compiled by hand into a temporary directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../tools/iscope-record/python
runner=/usr/bin/python3
[ -x "$runner" ] || runner=python3

if [ $# -ge 1 ]; then
	pydir=$1
else
	pydir=$(mktemp -d "${TMPDIR:-/tmp}/isc-agent-build.XXXXXX")
	trap 'rm -rf "$pydir"' EXIT
	mkdir -p "$pydir/inferscope"
	# alloc_hooks.c walks frames with the recorder's walker and layout table
	# (pyremote.c reads callees with pycode.c's stack depths)
	"$here/../../scripts/gen-pylayouts.sh" "$pydir/pylayout_table.c" "$here/../../lib/record/pylayout_gen.c" \
		${CC:-cc} >/dev/null
	${CC:-cc} -shared -fPIC -O2 -Wall -Wextra -Werror -D_GNU_SOURCE \
		-DPy_LIMITED_API=0x03090000 $(pkg-config --cflags python3) \
		-fvisibility=hidden -I"$here/../../lib" -o "$pydir/_agent.abi3.so" "$src"/*.c \
		"$here/../../lib/record/pyremote.c" "$here/../../lib/record/pycode.c" "$pydir/pylayout_table.c" -ldl -lpthread
	cp "$src/sitecustomize.py" "$pydir/"
	cp "$src/inferscope/__init__.py" "$src/inferscope/_dist.py" "$pydir/inferscope/"
fi
exec "$runner" "$here/check_shm.py" "$pydir"
