#!/bin/bash
# The release build of README's first command must be warning-free with the compiler the
# README names (g++ 12 on Debian 12). This builds the `release` preset into
# build/release-warnings (ccache when present) and fails, listing them, on any compiler
# warning. Run from the repository root: bash scripts/release_warnings.sh
set -euo pipefail
dir=build/release-warnings
launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake --preset release -B "$dir" "${launcher[@]}" >/dev/null
# Every object again, so that warnings replayed from the cache are seen too.
log=$(cmake --build "$dir" --clean-first -- -j"${JOBS:-2}" 2>&1) || { echo "$log"; exit 1; }
if grep -q 'warning:' <<<"$log"; then
    grep -E 'warning:' <<<"$log" | sort | uniq -c
    echo "release build: $(grep -c 'warning:' <<<"$log") warnings" >&2
    exit 1
fi
echo "release build: no warnings"
