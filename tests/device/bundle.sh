#!/usr/bin/env bash
# tests/device/bundle.sh DIR: build InferScope and install it under DIR/root
# (bin/, lib/..., relocatable: the tools find their agents beside them),
# with the shared libraries it needs beyond glibc, libstdc++ and CUPTI
# copied into DIR/lib, for a GPU machine that has none of our Debian
# dependencies.  There, put DIR/lib and the folder of libcupti.so.13 on
# LD_LIBRARY_PATH and run tests/device/check.sh DIR/root/bin.  The build
# (DIR/build) is not needed there.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: bundle.sh DIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
if [[ -f $dir/build/build.ninja ]]; then
	meson setup --reconfigure "$dir/build" "$src" >/dev/null
else
	meson setup "$dir/build" "$src" --prefix=/ --buildtype=release -Dcupti=enabled >/dev/null
fi
meson compile -C "$dir/build" >/dev/null
rm -rf "$dir/root" "$dir/lib"
DESTDIR=$dir/root meson install -C "$dir/build" >/dev/null
mkdir -p "$dir/lib"
# every ELF file installed, its libraries but those every machine (or CUDA) has
find "$dir/root" -type f \( -perm -u+x -o -name '*.so' \) -print0 | xargs -0 file | grep ELF | cut -d: -f1 |
	xargs -n1 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
	while read -r name path; do
		case $name in
		libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libutil.so* | libgcc_s.so* | \
			libstdc++.so* | ld-linux* | libcupti.so* | libcuda.so* | libnvidia-ml.so*) ;;
		*) cp -L "$path" "$dir/lib/$name" ;;
		esac
	done
echo "$dir/root/bin $(du -sh "$dir/root" "$dir/lib" | awk '{printf "%s ", $1}')"
