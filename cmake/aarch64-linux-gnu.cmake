# Toolchain for aarch64 (64-bit ARM) Linux with Debian's cross compiler
# (g++-aarch64-linux-gnu) and the :arm64 multiarch -dev packages; scripts/cross_arm.sh
# installs them and uses this file. The executables it builds (the tests, and the unit
# test binary that gtest_discover_tests lists at build time) run under qemu-aarch64
# (Debian qemu-user) with the multiarch arm64 libraries as the sysroot (see below).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# find_package looks in /usr/lib/aarch64-linux-gnu/cmake (the :arm64 packages) and
# /usr/share/cmake (architecture-independent ones), never in the build machine's
# /usr/lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Except xtensor: libxtensor-dev:arm64 cannot be installed (it depends on xtl-dev, which
# is architecture "all" without Multi-Arch: foreign). xtensor is header-only and its
# package files name no architecture, so the build machine's package serves.
if(NOT DEFINED xtensor_DIR)
    set(xtensor_DIR /usr/lib/${CMAKE_HOST_SYSTEM_PROCESSOR}-linux-gnu/cmake/xtensor)
endif()

# The arm64 sysroot is / itself: the :arm64 packages bring the multiarch C library
# (libc6:arm64, libstdc++6:arm64) with /lib/ld-linux-aarch64.so.1. Not the cross
# toolchain's /usr/aarch64-linux-gnu: its loader would read the build machine's
# /etc/ld.so.cache and load /lib/aarch64-linux-gnu/libc.so.6 of another glibc build, and
# that pair hangs in the first pthread_create. `-L /` also overrides any
# /etc/qemu-binfmt/aarch64 link.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
