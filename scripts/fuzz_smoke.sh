#!/usr/bin/env bash
# Fuzz smoke for CI: builds the `fuzz` preset (clang, libFuzzer, ASan + UBSan) into
# build/fuzz, or takes the targets of the build FUZZ_BUILD names (CI: `ci`, which has
# built them already), and runs every fuzz target for FUZZ_SECONDS (default 20) from its
# committed corpus and regressions, mutating a scratch copy (the repository is never
# written to). Every input that reaches solve() runs under every SIMD target the CPU has.
# A crash, leak, sanitizer report or failed property fails the script; the input that did
# it is kept in build/fuzz/fuzz-artifacts/<target>/ for tests/fuzz/regressions/<target>/.
# Targets run FUZZ_JOBS at a time (default: one per core), each on one core, so on 2 cores
# the smoke takes half the wall time of one after another for the same fuzzing per target
# (-max_total_time is wall time).
# Needs clang and libclang-rt-14-dev (scripts/setup.sh installs them).
# Usage: scripts/fuzz_smoke.sh [TARGET...]      e.g. FUZZ_SECONDS=600 scripts/fuzz_smoke.sh npy
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-20}
preset=${FUZZ_BUILD:-fuzz}
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(npy json_array problem batch_line heatmap_input safetensors npz token_list
        safetensors_index gguf gguf_dequant tokenizer_json tokenize ollama_manifest census_texts)
fi

if [[ -z "${FUZZ_BUILD:-}" ]]; then
    cmake --preset fuzz >/dev/null
fi
# One program holds every target (tests/fuzz/CMakeLists.txt); <target>_fuzz links to it.
cmake --build --preset "$preset" --target attn_fuzz

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export preset seconds work
# One target: its line (and its log's tail when it fails) printed together, whatever runs
# beside it.
fuzz_one() {
    local t=$1
    local artifacts="build/$preset/fuzz-artifacts/$t"
    mkdir -p "$work/$t" "$artifacts"
    local log="$work/$t.log"
    if OPENBLAS_NUM_THREADS=1 "build/$preset/tests/fuzz/${t}_fuzz" "$work/$t" \
        "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" \
        -max_total_time="$seconds" -max_len=4096 -artifact_prefix="$artifacts/" \
        -print_final_stats=1 >"$log" 2>&1; then
        local done_line
        done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 | tr -s ' \t' ' ' || true)
        echo "fuzz_smoke: $t: ok (${seconds}s): $done_line"
    else
        echo "fuzz_smoke: $t: FAILED; the input is in $artifacts/" >&2
        tail -n 60 "$log" >&2
        return 1
    fi
}
export -f fuzz_one
status=0
printf '%s\n' "${targets[@]}" |
    parallel --will-cite --halt never -j "${FUZZ_JOBS:-$(nproc)}" fuzz_one || status=1
exit "$status"
