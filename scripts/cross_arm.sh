#!/usr/bin/env bash
# Cross-compiles attn's library and unit tests for aarch64 (64-bit ARM) and runs them
# under qemu-aarch64: the ARM check of the kernels, on a machine of another architecture.
#
# Installs what is missing first and prints what: the packages of scripts/setup.sh, the
# cross compiler (g++-aarch64-linux-gnu), qemu-user, and the :arm64 multiarch -dev
# packages of attn's libraries, after `dpkg --add-architecture arm64` (SentencePiece's,
# which cannot sit beside the build machine's, are unpacked into $build/sysroot, not
# installed). That changes the
# machine's apt configuration, which is why scripts/setup.sh does not do it. Needs root
# (or sudo) only when something is missing.
# Builds into build/aarch64 (Debug, warnings as errors, cmake/aarch64-linux-gnu.cmake),
# then runs under qemu-aarch64 the fuzz corpus replays (ctest -L fuzz) and the unit tests
# (in one process, for GoogleTest's summary; `ctest --test-dir build/aarch64` runs them
# one by one, also under qemu).
# Exit status: non-zero if an install, the build or any test fails.
# Usage: scripts/cross_arm.sh            (JOBS=N for the build and ctest, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/aarch64
jobs=${JOBS:-$(nproc)}

# The libraries with compiled code, and the C and C++ run-time libraries that qemu runs
# the tests with. The header-only ones come from scripts/setup.sh (the toolchain file
# says why xtensor's :arm64 package is not used).
# libzip-dev is not Multi-Arch (it cannot sit beside the amd64 one): the runtime libzip4
# is linked with the host's arch-independent headers.
ARM64_PACKAGES="libopenblas-dev libgtest-dev libhwy-dev libzip4 zlib1g-dev libicu-dev libpcre2-dev
    libc6 libstdc++6"
HOST_PACKAGES="g++-aarch64-linux-gnu qemu-user"
# SentencePiece's packages are not Multi-Arch either: installing the :arm64 ones would
# remove the build machine's (and python3-sentencepiece). They are unpacked instead
# (dpkg -x, nothing installed) into $build/sysroot, with their pkg-config file pointed
# there; the binaries find the library by their build RPATH.
ARM64_UNPACKED="libsentencepiece0 libsentencepiece-dev"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

sh scripts/setup.sh

missing=""
for p in $HOST_PACKAGES; do
    installed "$p" || missing="$missing $p"
done
for p in $ARM64_PACKAGES; do
    installed "$p:arm64" || missing="$missing $p:arm64"
done
if [ -n "$missing" ]; then
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        echo "cross_arm: dpkg --add-architecture arm64" >&2
        $SUDO dpkg --add-architecture arm64
    fi
    echo "cross_arm: installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

sysroot="$PWD/$build/sysroot"
pc="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc"
if [ ! -f "$pc" ]; then
    mkdir -p "$build/debs" "$sysroot"
    for p in $ARM64_UNPACKED; do
        (cd "$build/debs" && apt-get download -qq "$p:arm64")
    done
    for deb in "$build"/debs/*.deb; do
        dpkg -x "$deb" "$sysroot"
    done
    sed -i "s|^prefix=.*|prefix=$sysroot/usr|" "$pc"
fi
# pkg-config reads the :arm64 packages' files (and the unpacked SentencePiece's), never
# the build machine's.
export PKG_CONFIG_LIBDIR="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig"

cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
    -DCMAKE_BUILD_TYPE=Debug -DATTN_BUILD_TESTS=ON -DATTN_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build" -j "$jobs"

ctest --test-dir "$build" -j "$jobs" -L fuzz --output-on-failure --no-tests=error
echo "cross_arm: attn_unit_tests under qemu-aarch64 -L / (on $(uname -m)):"
qemu-aarch64 -L / "$build/tests/attn_unit_tests" --gtest_brief=1
