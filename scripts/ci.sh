#!/usr/bin/env bash
# The whole test suite, as CI runs it (README's second command, `.ci/run`), after
# scripts/setup.sh. One build does it all: the `ci` preset (clang 14, ASan + UBSan at -O1,
# warnings as errors, the tests and the libFuzzer targets), then
#   oracles the tokenizer tests' npm oracles (scripts/setup_node_oracles.sh)
#   format  clang-format-14 on every tracked C++ file
#   build   the ci preset (every target a unity build: ATTN_UNITY)
#   tidy    clang-tidy-14 on every source of lib/ and app/ (and python/) with that build's
#           compile commands, and a cheap check set on tests/ (scripts/lint.sh)
#   test    every CTest of that build: unit, oracle, CLI, browser, fuzz-corpus replays
#           (each replay under every SIMD target the CPU runs), all under ASan + UBSan
#   fuzz    libFuzzer on every target from its corpus for 10 s, one target per core
#           (scripts/fuzz_smoke.sh; its corpus is replayed under every SIMD target by the
#           test step too)
#   gcc     the library and the CLI compiled by g++ 12 at -O3 (README's first command's
#           compiler and level), any warning an error; not run again
#   pip     `pip install .` and `pip wheel .` of that g++ build into a fresh venv, nothing
#           compiled again (ATTN_CMAKE_BUILD_DIR=build/gcc), and the installed module and
#           `attn` command checked (tests/python/pip_install_test.py)
# and prints each step's wall time at the end, passed or not, so a CI log shows where the
# time goes, with the CPU time (user + system) of its processes: on a shared machine the
# wall time says how busy the machine was, the CPU time what the step costs. Steps: `bash scripts/ci.sh [STEP...]` runs only those, in this order.
set -uo pipefail
cd "$(dirname "$0")/.."

all=(oracles format build tidy test fuzz gcc pip)
steps=("$@")
if [[ ${#steps[@]} -eq 0 ]]; then
    steps=("${all[@]}")
fi
for s in "${steps[@]}"; do
    if [[ ! " ${all[*]} " == *" $s "* ]]; then
        echo "usage: scripts/ci.sh [${all[*]}]..." >&2
        exit 2
    fi
done

step_oracles() { sh scripts/setup_node_oracles.sh; }
step_format() { bash scripts/lint.sh format; }
step_build() { cmake --preset ci && cmake --build --preset ci; }
step_tidy() { LINT_BUILD=build/ci bash scripts/lint.sh tidy; }
step_test() { ctest --preset ci; }
step_fuzz() { FUZZ_BUILD=ci FUZZ_SECONDS=${FUZZ_SECONDS:-10} bash scripts/fuzz_smoke.sh; }
# g++ at -O3, as README's first command builds: warnings in our code are errors, and the
# GCC 12 false positives that stay warnings (CMakeLists.txt) fail the step too, unless
# cmake/gcc12_false_positives.cmake names their file (README's build is warning-free).
step_gcc() {
    cmake --preset gcc >/dev/null || return 1
    local log rc=0
    log=$(cmake --build --preset gcc 2>&1) || rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "$log"
        return "$rc"
    fi
    # The compiler's warnings (FILE:LINE:COL: warning:), not the linker's notes (an LTO link
    # says "lto-wrapper: warning: using serial compilation"; the module no longer uses LTO).
    local pattern='^[^ :]+:[0-9]+:[0-9]+: warning:'
    if grep -qE "$pattern" <<<"$log"; then
        # Each warning under the object ninja was building, so the log names the file to fix
        # (or to list in cmake/gcc12_false_positives.cmake): the warning's own line names
        # libstdc++'s header when the false positive is one of those.
        awk -v pat="$pattern" '/^\[[0-9]+\/[0-9]+\] /{obj=$0} $0~pat{print obj; print}' <<<"$log"
        echo "gcc: $(grep -cE "$pattern" <<<"$log") warnings in the -O3 build" >&2
        return 1
    fi
    echo "gcc: the -O3 build of lib/ and app/ is warning-free"
}
# The package pip builds, from the gcc step's build folder (setup.py reuses it).
step_pip() { /usr/bin/python3 tests/python/pip_install_test.py build/gcc; }

# cpu_ms: the CPU milliseconds (user + system) of this shell's finished child processes so
# far, from bash's `times` (its second line: children's user and system time, as
# 1m2.345s), run in this shell: in a pipe or $(...) it would count a subshell's children.
cpu_file=$(mktemp)
trap 'rm -f "$cpu_file"' EXIT
cpu_ms=0
count_cpu() {
    times >"$cpu_file"
    local line t m sec ms
    { read -r line && read -r line; } <"$cpu_file"
    cpu_ms=0
    for t in $line; do
        m=${t%%m*}
        sec=${t#*m}
        sec=${sec%s}
        ms=${sec#*.}
        cpu_ms=$((cpu_ms + m * 60000 + 10#${sec%.*} * 1000 + 10#$ms))
    done
}

names=()
times=()
cpus=()
results=()
status=0
start_all=$(date +%s)
for s in "${all[@]}"; do
    [[ " ${steps[*]} " == *" $s "* ]] || continue
    echo "ci: --- $s ---"
    t0=$(date +%s)
    count_cpu
    c0=$cpu_ms
    rc=0
    "step_$s" || rc=$?
    names+=("$s")
    times+=($(($(date +%s) - t0)))
    count_cpu
    cpus+=($(((cpu_ms - c0) / 1000)))
    results+=("$([[ $rc -eq 0 ]] && echo ok || echo "FAILED (exit $rc)")")
    if [[ $rc -ne 0 ]]; then
        status=1
        break
    fi
done

total=$(($(date +%s) - start_all))
echo
echo "ci: step times ($(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)):"
for i in "${!names[@]}"; do
    printf 'ci:   %-8s %5d s  %6d s CPU  %s\n' "${names[$i]}" "${times[$i]}" "${cpus[$i]}" \
        "${results[$i]}"
done
count_cpu
printf 'ci:   %-8s %5d s  %6d s CPU  (%d min %d s)\n' total "$total" $((cpu_ms / 1000)) \
    $((total / 60)) $((total % 60))
exit "$status"
