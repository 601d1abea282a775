// Matrix products on stored ggml types (attn::model::stored_matmul) against OpenBLAS sgemm
// on the same shapes in float32: Llama-3.2-1B's products at L = 512 (x [512, 2048]; W
// [2048, 2048] for q/o, [512, 2048] for k/v, [8192, 2048] for gate/up), 1 and 2 threads,
// per ggml type and SIMD target (best, and AVX2 where the CPU runs it). Before anything is
// timed, every type's product on a small shape is checked against float64 of the
// dequantized weights (the unit test's bound); a miss stops the binary. bm_stored_q8: Q8_0
// and Q4_0 with the activations rounded to Q8_0, Q4_K, Q5_K and Q6_K with them rounded to
// Q8_K (--activations q8: integer products; checked by the unit tests); on a CPU with
// AVX-VNNI, bm_stored_q8_maddubs/TYPE/AVX2 the same with the AVX2 target's maddubs (vnni
// false). bm_stored_bf16: BF16 with the activations rounded to BF16 (--activations bf16:
// vdpbf16ps pair products on AVX3_DL with AVX512_BF16, float32 FMAs in its order
// elsewhere; checked by the unit tests).
#include "attn/attention.hpp"
#include "attn/kernels.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "unit/ggml_blocks.hpp"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using attn::model::ggml_type_traits;

/// F32 (the kernel without a dequantization to speak of: a copy), F16, BF16, Q8_0, Q4_0,
/// Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, by ggml number.
const std::vector<std::uint32_t> kTypes = {0, 1, 30, 8, 2, 3, 6, 7, 10, 11, 12, 13, 14};

constexpr std::size_t kRowsX = 512; // L
constexpr std::size_t kCols = 2048; // hidden

std::vector<float> random_x(std::size_t count) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    std::vector<float> x(count);
    for (float& v : x) {
        v = dist(rng);
    }
    return x;
}

/// One product of x [512, 2048] with W [M, 2048] of `type`, x as float32 or rounded to
/// Q8_0 or Q8_K (`activations` q8: the integer products). Args: M, threads.
void bm_stored_vnni(benchmark::State& state,
                    std::uint32_t type,
                    attn::Simd simd,
                    attn::model::Activations activations,
                    bool vnni) {
    const auto m = static_cast<std::size_t>(state.range(0));
    const auto threads = static_cast<unsigned>(state.range(1));
    const std::vector<std::uint8_t> w = attn::testing::random_ggml_blocks(type, m * kCols, 2);
    const std::vector<float> x = random_x(kRowsX * kCols);
    std::vector<float> y(kRowsX * m);
    for (auto _ : state) {
        attn::model::stored_matmul(
            x,
            kRowsX,
            {type, m, kCols, w, {}},
            y,
            {.threads = threads, .simd = simd, .activations = activations, .vnni = vnni});
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOPS"] = benchmark::Counter(2.0 * kRowsX * static_cast<double>(m) * kCols *
                                                      static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate,
                                                  benchmark::Counter::kIs1000);
    state.SetLabel(attn::simd_name(simd));
}

/// bm_stored_vnni with AVX-VNNI where the CPU has it (the library's default).
void bm_stored(benchmark::State& state,
               std::uint32_t type,
               attn::Simd simd,
               attn::model::Activations activations) {
    bm_stored_vnni(state, type, simd, activations, true);
}

/// The limit: cblas_sgemm y = x · Wᵀ with W float32. Args: M, threads.
void bm_sgemm(benchmark::State& state) {
    const auto m = static_cast<std::size_t>(state.range(0));
    const int threads = static_cast<int>(state.range(1));
    const std::vector<float> w = random_x(m * kCols);
    const std::vector<float> x = random_x(kRowsX * kCols);
    std::vector<float> y(kRowsX * m);
    openblas_set_num_threads(threads);
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor,
                    CblasNoTrans,
                    CblasTrans,
                    static_cast<int>(kRowsX),
                    static_cast<int>(m),
                    static_cast<int>(kCols),
                    1.0F,
                    x.data(),
                    static_cast<int>(kCols),
                    w.data(),
                    static_cast<int>(kCols),
                    0.0F,
                    y.data(),
                    static_cast<int>(m));
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    openblas_set_num_threads(1);
    state.counters["GFLOPS"] = benchmark::Counter(2.0 * kRowsX * static_cast<double>(m) * kCols *
                                                      static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate,
                                                  benchmark::Counter::kIs1000);
    state.SetLabel(openblas_get_corename());
}

/// Every type and target on x [3, 512] · W [70, 512]ᵀ against float64 (the unit test's
/// summation bound, γ_K · Σ|x·w|).
bool verify(const std::vector<attn::Simd>& targets) {
    const std::size_t n = 3;
    const std::size_t m = 70;
    const std::size_t k = 512;
    const std::vector<float> x = random_x(n * k);
    for (const std::uint32_t type : kTypes) {
        const std::vector<std::uint8_t> bytes = attn::testing::random_ggml_blocks(type, m * k, 3);
        std::vector<float> w(m * k);
        attn::model::dequantize_ggml(type, bytes, w);
        for (const attn::Simd simd : targets) {
            std::vector<float> y(n * m);
            attn::model::stored_matmul(x, n, {type, m, k, bytes, {}}, y, {.simd = simd});
            for (std::size_t e = 0; e < y.size(); ++e) {
                double sum = 0;
                double abs = 0;
                for (std::size_t p = 0; p < k; ++p) {
                    const double v = static_cast<double>(x[e / m * k + p]) *
                                     static_cast<double>(w[e % m * k + p]);
                    sum += v;
                    abs += std::fabs(v);
                }
                const double ku = static_cast<double>(k) * std::ldexp(1.0, -24);
                if (std::fabs(static_cast<double>(y[e]) - sum) > ku / (1 - ku) * abs) {
                    std::fprintf(stderr,
                                 "bench_matmul: %s on %s differs from float64 at %zu\n",
                                 std::string(ggml_type_traits(type)->name).c_str(),
                                 attn::simd_name(simd),
                                 e);
                    return false;
                }
            }
        }
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<attn::Simd> targets = {attn::Simd::best};
    for (const attn::Simd t : attn::simd_supported()) {
        if (std::string(attn::simd_name(t)) == "AVX2") {
            targets.push_back(t);
        }
    }
    if (!verify(targets)) {
        return 1;
    }
    const auto shapes = [](benchmark::internal::Benchmark* b) {
        // Process CPU time (all threads) beside the wall time: on a shared machine the
        // CPU time per product is the figure that does not include the wait for a core.
        b->ArgNames({"M", "threads"})
            ->UseRealTime()
            ->MeasureProcessCPUTime()
            ->Unit(benchmark::kMillisecond);
        for (const int threads : {1, 2}) {
            for (const int m : {2048, 512, 8192}) {
                b->Args({m, threads});
            }
        }
    };
    shapes(benchmark::RegisterBenchmark("bm_sgemm", bm_sgemm));
    for (const attn::Simd simd : targets) {
        const std::string target = simd == attn::Simd::best ? "best" : attn::simd_name(simd);
        for (const std::uint32_t type : kTypes) {
            shapes(benchmark::RegisterBenchmark(
                ("bm_stored/" + std::string(ggml_type_traits(type)->name) + "/" + target).c_str(),
                bm_stored,
                type,
                simd,
                attn::model::Activations::f32));
        }
        // Q8_0, Q4_0 with Q8_0 activations; Q4_K, Q5_K, Q6_K with Q8_K ones
        for (const std::uint32_t type : {8U, 2U, 12U, 13U, 14U}) {
            shapes(benchmark::RegisterBenchmark(
                ("bm_stored_q8/" + std::string(ggml_type_traits(type)->name) + "/" + target)
                    .c_str(),
                bm_stored,
                type,
                simd,
                attn::model::Activations::q8));
        }
        // The AVX2 target's maddubs where it takes AVX-VNNI (an AVX2-only CPU's products).
        if (target == "AVX2" && attn::model::int8_products(simd) != "maddubs") {
            for (const std::uint32_t type : {8U, 2U, 12U, 13U, 14U}) {
                shapes(benchmark::RegisterBenchmark(
                    ("bm_stored_q8_maddubs/" + std::string(ggml_type_traits(type)->name) + "/AVX2")
                        .c_str(),
                    bm_stored_vnni,
                    type,
                    simd,
                    attn::model::Activations::q8,
                    false));
            }
        }
        shapes(benchmark::RegisterBenchmark(("bm_stored_bf16/BF16/" + target).c_str(),
                                            bm_stored,
                                            30U,
                                            simd,
                                            attn::model::Activations::bf16));
    }
    // bf16 on AVX3 too: AVX-512 float32 FMAs in vdpbf16ps's order (the same bits), against
    // the instruction itself on AVX3_DL.
    for (const attn::Simd t : attn::simd_supported()) {
        if (std::string(attn::simd_name(t)) == "AVX3") {
            shapes(benchmark::RegisterBenchmark(
                "bm_stored_bf16/BF16/AVX3", bm_stored, 30U, t, attn::model::Activations::bf16));
        }
    }
    benchmark::AddCustomContext("openblas_core", openblas_get_corename());
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
