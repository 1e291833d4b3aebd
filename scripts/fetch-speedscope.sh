#!/bin/bash
# The speedscope app (npm package speedscope, pinned by version and
# integrity) for the browser suite, which opens `iscope-report -f
# speedscope` output in it (tests/browser/speedscope_app.py): fetched with
# `npm pack` into DIR (default ${XDG_CACHE_HOME:-~/.cache}/inferscope),
# checked against the registry's sha512 recorded here, and unpacked to
# DIR/speedscope-VERSION/package.  Without npm, or when the registry
# cannot be reached, says so and exits 0: the browser test skips, saying
# why.  Exit 1 when a fetched file does not match its integrity.
#
#   scripts/fetch-speedscope.sh [--no-fetch] [DIR]
#
# prints the app's directory (dist/release); --no-fetch: only when it is
# there already (nothing printed otherwise).
set -euo pipefail
fetch=1
if [ "${1:-}" = --no-fetch ]; then
	fetch=0
	shift
fi
VERSION=1.25.0
INTEGRITY=sha512-cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag==
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/inferscope}
dest=$dir/speedscope-$VERSION
log() { printf 'fetch-speedscope: %s\n' "$*" >&2; }
if [ -f "$dest/package/dist/release/index.html" ]; then
	echo "$dest/package/dist/release"
	exit 0
fi
[ "$fetch" = 1 ] || exit 0
if ! command -v npm >/dev/null 2>&1; then
	log "npm is not installed: the speedscope app is not fetched (the browser suite's speedscope test skips)"
	exit 0
fi
mkdir -p "$dest"
tmp=$(mktemp -d "$dir/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && timeout 300 npm pack --silent "speedscope@$VERSION" >/dev/null 2>"$tmp/err"); then
	log "npm pack speedscope@$VERSION failed: $(tail -n 1 "$tmp/err")"
	exit 0
fi
got=$(python3 -c 'import base64,hashlib,sys; print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/speedscope-$VERSION.tgz")
if [ "$got" != "$INTEGRITY" ]; then
	log "speedscope-$VERSION.tgz: integrity $got, expected $INTEGRITY"
	exit 1
fi
tar -xzf "$tmp/speedscope-$VERSION.tgz" -C "$dest"
echo "$dest/package/dist/release"
