#!/usr/bin/env bash
# Print the absolute path of a Python interpreter that can `import torch`.
#
# Order: $INFERSCOPE_PYTHON (when set, it must work: no silent fallback),
# python3 on PATH, /usr/bin/python3, then /usr/bin/python3.X, newest first.
# The path printed is the interpreter's sys.executable, so a pyenv shim is
# resolved to the real binary. Exit 1 with a message when none qualifies.
set -euo pipefail

# has_torch CMD: print sys.executable of CMD when it imports torch.
has_torch() {
	"$1" -c 'import sys, torch; print(sys.executable)' 2>/dev/null
}

if [[ -n ${INFERSCOPE_PYTHON:-} ]]; then
	if exe=$(has_torch "$INFERSCOPE_PYTHON") && [[ -n $exe ]]; then
		printf '%s\n' "$exe"
		exit 0
	fi
	echo "find-python: INFERSCOPE_PYTHON=$INFERSCOPE_PYTHON cannot import torch" >&2
	exit 1
fi

candidates=()
if p=$(command -v python3 2>/dev/null); then
	candidates+=("$p")
fi
candidates+=(/usr/bin/python3)
versioned=()
for p in /usr/bin/python3.[0-9]*; do
	[[ $p =~ /python3\.[0-9]+$ ]] && versioned+=("$p")
done
if ((${#versioned[@]})); then
	while IFS= read -r p; do
		candidates+=("$p")
	done < <(printf '%s\n' "${versioned[@]}" | sort -t. -k2,2nr)
fi

tried=()
for p in "${candidates[@]}"; do
	[[ -x $p ]] || continue
	tried+=("$p")
	if exe=$(has_torch "$p") && [[ -n $exe ]]; then
		printf '%s\n' "$exe"
		exit 0
	fi
done

echo "find-python: no Python interpreter that can 'import torch' (tried: ${tried[*]:-none})" >&2
echo "find-python: run scripts/install-deps.sh (installs python3-torch) or set INFERSCOPE_PYTHON" >&2
exit 1
