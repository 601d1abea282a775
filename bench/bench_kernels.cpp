// Kernel benchmarks: attend_streaming on the best SIMD target and, in a sweep, on every
// target this CPU runs; attend_materialized (weights on), into one reused result and, in
// the sweep, also into a fresh one per call; the float64 test reference as a
// floor; and OpenBLAS sgemm on the same shapes (Q·Kᵀ then P·V) as the roofline, all in one
// binary. Every attention row's label names the Highway target it ran. Each benchmark first checks
// sampled output rows against a float64 computation and calls SkipWithError on a mismatch; only
// then is it timed. No assertion here is about speed.
//
// Legend: B batch (1 here), H heads, L = Lq = Lk, D = Dv features. FLOPs per call are the
// dense 4·B·H·Lq·Lk·D for every variant (causal included), so GFLOP/s compare like for like
// and a causal run's figure is its speed-up over dense work.
//
// Without --benchmark_filter a short default set runs (see kDefaultFilter); pass
// --benchmark_filter=. for everything.
#include "attn/attention.hpp"
#include "attn/kernels.hpp"
#include "reference/naive_attention.hpp"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using attn::AttentionSpec;
using attn::Causal;
using attn::Simd;
using attn::Tensor;

/// The default run: the headline shape and its baselines, 2 threads.
constexpr const char* kDefaultFilter =
    "^(bm_streaming|bm_materialized|bm_sgemm_shapes)/L:(1024|4096)/D:64/H:8/"
    "(causal:[01]/)?threads:2/|^bm_sgemm_square/N:2048/threads:2/|^bm_target/";

/// FLOPs of one attention call counted as dense GEMMs: Q·Kᵀ (2·Lq·Lk·D) + P·V (2·Lq·Lk·Dv).
double
attention_flops(std::size_t b, std::size_t h, std::size_t lq, std::size_t lk, std::size_t d) {
    return 4.0 * static_cast<double>(b) * static_cast<double>(h) * static_cast<double>(lq) *
           static_cast<double>(lk) * static_cast<double>(d);
}

Tensor random_tensor(std::mt19937& rng, attn::Shape s) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Tensor t = Tensor::from_shape(s);
    for (auto& x : t) {
        x = dist(rng);
    }
    return t;
}

struct Problem {
    Tensor q, k, v;
};

Problem make_problem(std::size_t h, std::size_t l, std::size_t d) {
    std::mt19937 rng(42);
    Problem p;
    p.q = random_tensor(rng, {1, h, l, d});
    p.k = random_tensor(rng, {1, h, l, d});
    p.v = random_tensor(rng, {1, h, l, d});
    return p;
}

/// Checks output rows (h, i) for a few sampled heads and rows against float64 sums.
/// Returns an empty string when every sampled element is within float32 tolerance.
std::string verify_rows(const Problem& p, const Tensor& out, Causal causal) {
    const std::size_t h_n = p.q.shape()[1], l = p.q.shape()[2], d = p.q.shape()[3];
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const double tol = 16 * 1.2e-7 * std::sqrt(static_cast<double>(l)) + 1e-6;
    for (std::size_t h : {std::size_t{0}, h_n - 1}) {
        for (std::size_t i : {std::size_t{0}, l / 3, l / 2 + 1, l - 1}) {
            const std::size_t n = causal == Causal::none ? l : i + 1;
            std::vector<double> s(n);
            double mx = -INFINITY;
            for (std::size_t j = 0; j < n; ++j) {
                double acc = 0.0;
                for (std::size_t x = 0; x < d; ++x) {
                    acc +=
                        static_cast<double>(p.q(0, h, i, x)) * static_cast<double>(p.k(0, h, j, x));
                }
                s[j] = acc * scale;
                mx = std::max(mx, s[j]);
            }
            double sum = 0.0;
            for (auto& x : s) {
                x = std::exp(x - mx);
                sum += x;
            }
            for (std::size_t x = 0; x < d; ++x) {
                double o = 0.0;
                for (std::size_t j = 0; j < n; ++j) {
                    o += s[j] / sum * static_cast<double>(p.v(0, h, j, x));
                }
                const double got = static_cast<double>(out(0, h, i, x));
                if (!(std::abs(got - o) <= tol * (1.0 + std::abs(o)))) {
                    return "mismatch at h=" + std::to_string(h) + " i=" + std::to_string(i) +
                           " x=" + std::to_string(x) + ": got " + std::to_string(got) + ", want " +
                           std::to_string(o);
                }
            }
        }
    }
    return {};
}

enum class Kernel { streaming, materialized };

/// Where an attention row's result lives across iterations: `reused`, one result that
/// every call writes into (attend_into's caller-owned buffers, as the sgemm rows reuse C),
/// or `fresh`, a new result per call (what one `attn compute` pays: a fresh [B, H, L, L]
/// weights tensor is 512 MB at L = 4096, H = 8, whose first-touch page faults and unmapping
/// cost about as much CPU time as the arithmetic).
enum class Buffers { fresh, reused };

/// Args: L, D, H, causal, threads.
void run_attention(benchmark::State& state,
                   Kernel kernel,
                   Buffers buffers,
                   Simd simd = Simd::best) {
    const auto l = static_cast<std::size_t>(state.range(0));
    const auto d = static_cast<std::size_t>(state.range(1));
    const auto h = static_cast<std::size_t>(state.range(2));
    const Causal causal = state.range(3) != 0 ? Causal::top_left : Causal::none;
    const auto threads = static_cast<unsigned>(state.range(4));
    const Problem p = make_problem(h, l, d);
    const AttentionSpec spec{.causal = causal,
                             .want_weights = kernel == Kernel::materialized,
                             .threads = threads,
                             .simd = simd};
    attn::AttentionResult r;
    auto call = [&] {
        if (buffers == Buffers::fresh) {
            r = attn::AttentionResult{}; // the previous result is freed first, as in a loop
        }
        if (kernel == Kernel::materialized) {
            attn::attend_materialized_into(p.q, p.k, p.v, spec, r);
        } else {
            attn::attend_streaming_into(p.q, p.k, p.v, spec, r);
        }
    };
    // Verify, then time.
    call();
    const std::string err = verify_rows(p, r.output, causal);
    if (!err.empty()) {
        state.SkipWithError(err.c_str());
        return;
    }
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(r.output.data());
        benchmark::ClobberMemory();
    }
    state.counters["flop"] = benchmark::Counter(attention_flops(1, h, l, l, d),
                                                benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(attn::simd_name(simd));
}

void bm_streaming(benchmark::State& state) {
    run_attention(state, Kernel::streaming, Buffers::fresh);
}
void bm_materialized(benchmark::State& state) {
    run_attention(state, Kernel::materialized, Buffers::reused);
}

/// The test reference (float64, unblocked): the floor. Args: L, D, H.
void bm_naive(benchmark::State& state) {
    const auto l = static_cast<std::size_t>(state.range(0));
    const auto d = static_cast<std::size_t>(state.range(1));
    const auto h = static_cast<std::size_t>(state.range(2));
    const Problem p = make_problem(h, l, d);
    for (auto _ : state) {
        auto r = attn::reference::naive_attention(p.q, p.k, p.v, {});
        benchmark::DoNotOptimize(r.output.data());
    }
    state.counters["flop"] = benchmark::Counter(attention_flops(1, h, l, l, d),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

/// The roofline: per head, S = Q·Kᵀ [L, L] then O = S·V [L, D] with OpenBLAS sgemm on
/// `threads` threads (no softmax). Args: L, D, H, causal (unused: 0), threads.
void bm_sgemm_shapes(benchmark::State& state) {
    const auto l = static_cast<std::size_t>(state.range(0));
    const auto d = static_cast<std::size_t>(state.range(1));
    const auto h = static_cast<std::size_t>(state.range(2));
    const int threads = static_cast<int>(state.range(4));
    const Problem p = make_problem(h, l, d);
    std::vector<float> s(l * l);
    Tensor o = Tensor::from_shape({1, h, l, d});
    const int li = static_cast<int>(l), di = static_cast<int>(d);
    openblas_set_num_threads(threads);
    for (auto _ : state) {
        for (std::size_t hh = 0; hh < h; ++hh) {
            const float* q = p.q.data() + hh * l * d;
            const float* k = p.k.data() + hh * l * d;
            const float* v = p.v.data() + hh * l * d;
            cblas_sgemm(CblasRowMajor,
                        CblasNoTrans,
                        CblasTrans,
                        li,
                        li,
                        di,
                        1.0f,
                        q,
                        di,
                        k,
                        di,
                        0.0f,
                        s.data(),
                        li);
            cblas_sgemm(CblasRowMajor,
                        CblasNoTrans,
                        CblasNoTrans,
                        li,
                        di,
                        li,
                        1.0f,
                        s.data(),
                        li,
                        v,
                        di,
                        0.0f,
                        o.data() + hh * l * d,
                        di);
        }
        benchmark::DoNotOptimize(o.data());
        benchmark::ClobberMemory();
    }
    openblas_set_num_threads(1); // the portable attention kernels expect single-threaded BLAS
    state.counters["flop"] = benchmark::Counter(attention_flops(1, h, l, l, d),
                                                benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(openblas_get_corename());
}

/// The best case for sgemm on this machine: square N x N x N. Args: N, threads.
void bm_sgemm_square(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const int threads = static_cast<int>(state.range(1));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (auto& x : a) {
        x = dist(rng);
    }
    for (auto& x : b) {
        x = dist(rng);
    }
    const int ni = static_cast<int>(n);
    openblas_set_num_threads(threads);
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor,
                    CblasNoTrans,
                    CblasNoTrans,
                    ni,
                    ni,
                    ni,
                    1.0f,
                    a.data(),
                    ni,
                    b.data(),
                    ni,
                    0.0f,
                    c.data(),
                    ni);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    openblas_set_num_threads(1);
    state.counters["flop"] = benchmark::Counter(2.0 * static_cast<double>(n) *
                                                    static_cast<double>(n) * static_cast<double>(n),
                                                benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(openblas_get_corename());
}

const std::vector<std::string> kAttentionArgs = {"L", "D", "H", "causal", "threads"};

BENCHMARK(bm_streaming)
    ->ArgNames(kAttentionArgs)
    ->ArgsProduct({{256, 1024, 4096, 16384}, {64, 128}, {1, 8}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_materialized)
    ->ArgNames(kAttentionArgs)
    ->ArgsProduct({{256, 1024, 4096}, {64, 128}, {1, 8}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_sgemm_shapes)
    ->ArgNames(kAttentionArgs)
    ->ArgsProduct({{256, 1024, 4096, 16384}, {64, 128}, {1, 8}, {0}, {1, 2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_sgemm_square)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{1024, 2048, 4096}, {1, 2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_naive)
    ->ArgNames({"L", "D", "H"})
    ->Args({256, 64, 1})
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

/// The target sweeps at L = 4096, D = 64, H = 8, full and causal, on each SIMD target this
/// CPU runs, 1 and 2 threads: bm_streaming as bm_target/<TARGET>/..., and bm_materialized
/// (the weights path) as bm_target_weights/<TARGET>/... (one result reused, as sgemm's C)
/// and bm_target_weights_fresh/<TARGET>/... (a new result per call, as one `attn compute`).
void register_target_sweep() {
    struct Family {
        const char* name;
        Kernel kernel;
        Buffers buffers;
    };
    for (const Family& family :
         {Family{"bm_target/", Kernel::streaming, Buffers::fresh},
          Family{"bm_target_weights/", Kernel::materialized, Buffers::reused},
          Family{"bm_target_weights_fresh/", Kernel::materialized, Buffers::fresh}}) {
        for (const Simd simd : attn::simd_supported()) {
            const std::string name = family.name + std::string(attn::simd_name(simd));
            benchmark::RegisterBenchmark(name.c_str(),
                                         [simd, family](benchmark::State& state) {
                                             run_attention(
                                                 state, family.kernel, family.buffers, simd);
                                         })
                ->ArgNames(kAttentionArgs)
                ->ArgsProduct({{4096}, {64}, {8}, {0, 1}, {1, 2}})
                ->UseRealTime()
                ->MeasureProcessCPUTime()
                ->Unit(benchmark::kMillisecond);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    std::vector<char*> args(argv, argv + argc);
    std::string filter = std::string("--benchmark_filter=") + kDefaultFilter;
    bool has_filter = false;
    for (int i = 1; i < argc; ++i) {
        has_filter = has_filter || std::strncmp(argv[i], "--benchmark_filter", 18) == 0;
    }
    if (!has_filter) {
        args.push_back(filter.data());
    }
    register_target_sweep();
    int n = static_cast<int>(args.size());
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) {
        return 1;
    }
    benchmark::AddCustomContext("openblas_core", openblas_get_corename());
    benchmark::AddCustomContext("attn_simd", attn::simd_name(Simd::best));
    std::string targets;
    for (const Simd simd : attn::simd_compiled()) {
        targets += (targets.empty() ? "" : " ") + std::string(attn::simd_name(simd));
    }
    benchmark::AddCustomContext("attn_simd_compiled", targets);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
