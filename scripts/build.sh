#!/usr/bin/env bash
# Configure and compile InferScope with warnings as errors.
#
#   scripts/build.sh [BUILD_DIR [MESON_SETUP_OPTION...]]
#
# BUILD_DIR defaults to "build" (relative to the repository root). An
# existing build directory is reconfigured, so options given here apply.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${1:-build}
shift || true

if [[ -f $build_dir/meson-private/coredata.dat ]]; then
	meson setup --reconfigure "$build_dir" --werror "$@"
else
	meson setup "$build_dir" --werror "$@"
fi
meson compile -C "$build_dir"
