// ggml's own products on a GGUF's tensors (issue #32's anchor): every layer's 7 matrices of a
// llama-shaped GGUF (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down) times
// random float32 activations of n = L columns through ggml_mul_mat on the CPU backend, as
// llama.cpp's prompt processing does (quantized types quantize the activations to their
// vec_dot type first, inside the timing). The weights are read into memory before timing;
// the first layer is computed once untimed (threads started). Prints the wall and the CPU
// seconds (the process's, all threads) of all layers' products on stdout, the per-layer
// wall split on stderr.
//
// Not part of the CMake build: ggml (ggml-org/ggml, a checkout G) lives outside the
// repository. Built as llama.cpp builds it, llamafile's sgemm on (bench/README.md):
//   cmake -S G -B G/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
//     -DGGML_LLAMAFILE=ON -DBUILD_SHARED_LIBS=OFF && ninja -C G/build ggml
//   g++ -O2 -std=c++17 bench/ggml_matmul/ggml_matmul.cpp -IG/include -LG/build/src \
//     -lggml -lggml-cpu -lggml-base -fopenmp -o ggml_matmul
// Usage: ggml_matmul FILE.gguf L THREADS
#include "ggml-cpu.h"
#include "ggml.h"
#include "gguf.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "ggml_matmul: %s\n", what.c_str());
    std::exit(1);
}

const char* const kProducts[] = {
    "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

void fill(ggml_tensor* t, std::mt19937& rng) {
    std::normal_distribution<float> n(0.0F, 1.0F);
    auto* p = static_cast<float*>(t->data);
    for (int64_t i = 0; i < ggml_nelements(t); ++i) {
        p[i] = n(rng);
    }
}

/// One layer's 7 products as one graph, computed on `threads`; its seconds.
double layer(ggml_context* weights, int n, ggml_tensor* x, ggml_tensor* h, int threads) {
    std::size_t out = 0;
    std::vector<ggml_tensor*> w;
    for (const char* p : kProducts) {
        std::string name = "blk." + std::to_string(n) + "." + p + ".weight";
        ggml_tensor* t = ggml_get_tensor(weights, name.c_str());
        if (t == nullptr) {
            die("no tensor " + name);
        }
        w.push_back(t);
        out += static_cast<std::size_t>(t->ne[1]) * static_cast<std::size_t>(x->ne[1]) * 4;
    }
    ggml_init_params ip{out + (64U << 20), nullptr, false}; // outputs + graph + work
    ggml_context* ctx = ggml_init(ip);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    for (ggml_tensor* t : w) {
        ggml_build_forward_expand(gf, ggml_mul_mat(ctx, t, t->ne[0] == x->ne[0] ? x : h));
    }
    auto t0 = std::chrono::steady_clock::now();
    if (ggml_graph_compute_with_ctx(ctx, gf, threads) != GGML_STATUS_SUCCESS) {
        die("compute failed");
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ggml_free(ctx);
    return s;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        die("usage: ggml_matmul FILE.gguf L THREADS");
    }
    const int L = std::atoi(argv[2]);
    const int threads = std::atoi(argv[3]);
    ggml_context* weights = nullptr;
    gguf_context* g = gguf_init_from_file(argv[1], {false, &weights});
    if (g == nullptr) {
        die(std::string("cannot read ") + argv[1]);
    }
    const int64_t layers = gguf_get_val_u32(g, gguf_find_key(g, "llama.block_count"));
    ggml_tensor* q = ggml_get_tensor(weights, "blk.0.attn_q.weight");
    ggml_tensor* down = ggml_get_tensor(weights, "blk.0.ffn_down.weight");
    ggml_init_params ip{
        static_cast<std::size_t>(q->ne[0] + down->ne[0]) * L * 4 + (1U << 20), nullptr, false};
    ggml_context* act = ggml_init(ip);
    ggml_tensor* x = ggml_new_tensor_2d(act, GGML_TYPE_F32, q->ne[0], L);
    ggml_tensor* h = ggml_new_tensor_2d(act, GGML_TYPE_F32, down->ne[0], L);
    std::mt19937 rng(7);
    fill(x, rng);
    fill(h, rng);
    layer(weights, 0, x, h, threads); // threads started, caches warm
    double total = 0;
    const std::clock_t c0 = std::clock();
    for (int64_t n = 0; n < layers; ++n) {
        double s = layer(weights, static_cast<int>(n), x, h, threads);
        std::fprintf(stderr, "layer %lld: %.3f s\n", static_cast<long long>(n), s);
        total += s;
    }
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    std::printf("%s %s L %d threads %d: %.4f %.4f\n",
                argv[1],
                ggml_type_name(q->type),
                L,
                threads,
                total,
                cpu);
    ggml_free(act);
    gguf_free(g);
    return 0;
}
