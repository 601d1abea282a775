#!/usr/bin/env bash
# Runs attn's unit tests and a whole quantized model on an x86-64 CPU this machine is not,
# under qemu-x86_64's emulation of its CPUID and instruction set: by default an AMD EPYC
# Zen 3 (qemu's EPYC-Milan: AVX2, FMA, F16C, no AVX-512, no AVX-VNNI), the kind of CPU that
# runs the AVX2 target with maddubs. qemu has no AVX-512 at all, so an AVX-512 (or VNNI)
# instruction reached on that CPU stops the run with SIGILL. Per CPU:
#   1. `attn --version` names the target and the integer products the CPU must get
#      (EPYC-Milan, EPYC-Rome, Haswell: AVX2 and maddubs; Westmere: SSE4, Nehalem: SSSE3,
#      both portable);
#   2. the unit tests, all but the two that hold the choice to the host's /proc/cpuinfo
#      (qemu-user shows the host's file, not the emulated CPU's flags);
#   3. the tiny quantized llama of tests/unit/fixtures (every weight type in one file),
#      every layer, with the f32 products and with --activations q8: its output on the
#      emulated CPU (the target it picks itself) equals bit for bit the same run here
#      with --simd naming that target.
# qemu emulates the instructions; it does not time them: nothing here says anything of
# speed. Installs qemu-user if it is missing (root or sudo).
# Usage: scripts/emulated_cpu.sh [CPU ...]     (BUILD=build/dev: a build with the tests)
# Exit status: non-zero if any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD:-build/dev}
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(EPYC-Milan)

if ! command -v qemu-x86_64 >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "emulated_cpu: installing qemu-user" >&2
    $SUDO apt-get install -y -qq --no-install-recommends qemu-user >/dev/null
fi

attn="$build/app/attn"
tests="$build/tests/attn_unit_tests"
model=tests/unit/fixtures/gguf/quant_models/llama.gguf
for f in "$attn" "$tests"; do
    [ -x "$f" ] || { echo "emulated_cpu: no $f: build $build with its tests first" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# qemu-user warns once per feature its TCG lacks (pcid, sha-ni, ...): not ours to show.
emulated() { local cpu=$1; shift; qemu-x86_64 -cpu "$cpu" "$@" 2> >(grep -v "TCG doesn't support" >&2); }

status=0
fail() { echo "emulated_cpu: $1: FAILED: $2" >&2; status=1; }

for cpu in "${cpus[@]}"; do
    case $cpu in
        EPYC-Milan | EPYC-Rome | Haswell* | Broadwell* | Skylake-Client*) want=(AVX2 maddubs) ;;
        Westmere*) want=(SSE4 portable) ;;
        Nehalem*) want=(SSSE3 portable) ;; # Highway's SSE4 target also needs AES and CLMUL
        *) want=() ;;
    esac
    version=$(emulated "$cpu" "$attn" --version)
    target=$(sed -n 's/^SIMD target this CPU uses: //p' <<<"$version")
    int8=$(sed -n 's/^Integer products (activations q8): //p' <<<"$version")
    echo "emulated_cpu: $cpu: target $target, integer products $int8"
    if [ ${#want[@]} -gt 0 ] && [ "$target $int8" != "${want[*]}" ]; then
        fail "$cpu" "attn --version: want ${want[*]}"
    fi

    echo "emulated_cpu: $cpu: attn_unit_tests"
    emulated "$cpu" "$tests" --gtest_brief=1 \
        --gtest_filter='-Q8MatmulInstructions.*:Bf16MatmulKernels.FollowTheCpuFlags' ||
        fail "$cpu" "unit tests"

    for activations in f32 q8; do
        args=(compute --params "$model" --text "a b ab ba bb a b ab ba bb a" --quiet --threads 2
              --activations "$activations")
        emulated "$cpu" "$attn" "${args[@]}" -o "$work/emulated.npy"
        "$attn" "${args[@]}" --simd "$target" -o "$work/native.npy"
        if cmp -s "$work/emulated.npy" "$work/native.npy"; then
            echo "emulated_cpu: $cpu: the model with --activations $activations: the same bits as --simd $target here"
        else
            fail "$cpu" "the model with --activations $activations differs from --simd $target"
        fi
    done
done
exit $status
