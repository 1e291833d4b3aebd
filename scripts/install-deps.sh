#!/usr/bin/env bash
# Install InferScope's build, test and runtime dependencies from Debian's
# packages. Idempotent: when every package is already installed it does
# nothing but say so. Uses sudo when not run as root.
#
#   scripts/install-deps.sh [--tests]
#
# --tests adds what only the test suites need and a user does not: a JSON
# Schema validator (python3-jsonschema: tests/lib/validate_findings.py), a
# headless browser and its WebDriver for the `browser` suite (scripts/test.sh
# passes it; profile-example.sh does not).
#
# libdw-dev, libelf-dev and g++ (for libstdc++'s __cxa_demangle): the offline
# unwinder of native stacks (lib/native).
#
# libopenblas0-pthread matters: without an optimized BLAS, Debian's
# python3-torch falls back to the reference BLAS, about 70x slower.
set -euo pipefail

PACKAGES=(
	meson ninja-build pkg-config gcc
	libzstd-dev zstd zlib1g-dev libcjson-dev libcmark-dev libnuma-dev libyaml-dev
	bats jq time
	python3-dev python3-torch libopenblas0-pthread
	python3-zstandard python3-yaml
	libdw-dev libelf-dev g++
)
TEST_PACKAGES=(chromium chromium-driver python3-jsonschema)

case ${1:-} in
--tests) PACKAGES+=("${TEST_PACKAGES[@]}") ;;
"") ;;
*)
	echo "usage: $0 [--tests]" >&2
	exit 2
	;;
esac

log() { printf 'install-deps: %s\n' "$*" >&2; }

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	log "this script needs a Debian-based system (apt-get, dpkg-query)"
	log "install these packages by other means: ${PACKAGES[*]}"
	exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	[[ $status == ii* ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
	log "all ${#PACKAGES[@]} packages present"
	exit 0
fi

SUDO=()
if ((EUID != 0)); then
	if ! command -v sudo >/dev/null 2>&1; then
		log "not root and sudo is not installed; run as root or install: ${missing[*]}"
		exit 1
	fi
	SUDO=(sudo)
fi

apt_log=$(mktemp "${TMPDIR:-/tmp}/install-deps.XXXXXX")
trap 'rm -f "$apt_log"' EXIT

apt() {
	if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0 "$@" \
		>"$apt_log" 2>&1; then
		cat "$apt_log" >&2
		log "apt-get $1 failed"
		exit 1
	fi
}

log "installing ${#missing[@]} package(s): ${missing[*]}"
apt update
apt install --no-install-recommends "${missing[@]}"
log "done"
