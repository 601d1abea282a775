#!/usr/bin/env bash
# Lint: every tracked C++ file is clang-format-14 clean (.clang-format), and the tidy preset
# (clang-tidy-14 with .clang-tidy, findings as errors) builds lib/ and app/.
#   bash scripts/lint.sh            both
#   bash scripts/lint.sh format     only the format check (seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z '*.cpp' '*.hpp' '*.h' '*.cc' | xargs -0 clang-format-14 --dry-run --Werror
echo "clang-format-14: clean"
if [[ "${1:-}" == "format" ]]; then
    exit 0
fi
cmake --preset tidy
cmake --build --preset tidy
echo "clang-tidy-14: clean"
