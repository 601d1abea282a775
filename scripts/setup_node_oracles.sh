#!/bin/sh
# Installs the tokenizer tests' npm oracles (tests/tokenizer/package.json, pinned by its
# package-lock.json: Hugging Face's `tokenizers` and `gpt-3-encoder`) into
# tests/tokenizer/node_modules with `npm ci`. Run by scripts/ci.sh (its `oracles` step). Uses the npm on the
# PATH (nodesource's node ships its own); only when there is none does it install Debian's
# nodejs and npm. Idempotent: skipped when the installed lock file is the current one.
set -eu
dir=$(cd "$(dirname "$0")/../tests/tokenizer" && pwd)
stamp="$dir/node_modules/.attn-installed-lock.json"
if [ -f "$stamp" ] && cmp -s "$stamp" "$dir/package-lock.json"; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "setup: installing: nodejs npm (tokenizer test oracles)" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
cp "$dir/package-lock.json" "$stamp"
