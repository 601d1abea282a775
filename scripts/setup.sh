#!/bin/sh
# Installs the Debian 12 packages attn needs to build and test, and nothing else.
# Idempotent and fast when everything is present: `apt-get update` runs only when a
# package is missing, once. Works as root on a bare (minbase) Debian 12.
set -eu

# clang and libclang-rt-14-dev (libFuzzer) are for the fuzz smoke of the test command;
# clang-format-14 and clang-tidy-14 for its lint (scripts/lint.sh).
# fonts-wqy-microhei is the heatmap's fallback font for glyphs DejaVu lacks (CJK; 5 MB, the
# smallest Debian CJK font with TrueType outlines). zlib1g-dev compresses the HTML view's
# data; chromium (about 110 MB to download) runs the HTML view's browser test headless;
# parallel (GNU parallel) runs the README's split of a batch over processes in
# tests/cli/parallel_test.py.
PACKAGES="g++ cmake ninja-build libcli11-dev nlohmann-json3-dev libstb-dev libxtensor-dev \
libxsimd-dev libopenblas-dev libhwy-dev libgtest-dev libbenchmark-dev fonts-dejavu-core python3 \
python3-numpy fonts-wqy-microhei libzip-dev clang libclang-rt-14-dev clang-format-14 clang-tidy-14 \
git zlib1g-dev chromium parallel"
# Third round: pybind11-dev and python3-dev build the Python module; libpcre2-dev is the
# Unicode regex of the BPE pre-tokenizers; libsentencepiece-dev reads tokenizer.model;
# python3-sentencepiece, python3-torch and python3-pytest are test oracles and runners.
PACKAGES="$PACKAGES pybind11-dev python3-dev libpcre2-dev libsentencepiece-dev \
python3-sentencepiece python3-torch python3-pytest"
PACKAGES="$PACKAGES libicu-dev" # tokenizer normalizers: NFC/NFD/NFKC/NFKD, lowercasing, character classes
PACKAGES="$PACKAGES pkg-config" # CMake finds libpcre2-8 and sentencepiece through it
PACKAGES="$PACKAGES file dpkg-dev" # CPack's .deb (install_test): file and dpkg-shlibdeps find its dependencies
# Fourth round: `pip install --no-build-isolation .` (pyproject.toml, setup.py) in a venv, and
# CI's pip step (tests/python/pip_install_test.py): pip, setuptools and wheel, all offline.
PACKAGES="$PACKAGES python3-pip python3-setuptools python3-wheel python3-venv"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    echo "setup: installing:$missing" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The tokenizer tests' npm oracles are the test suite's, not the build's: scripts/ci.sh
# installs them (scripts/setup_node_oracles.sh), so README's first command needs no npm.
