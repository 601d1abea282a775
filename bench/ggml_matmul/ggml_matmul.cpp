// ggml's own products on a GGUF's tensors (issue #32's anchor): every layer's 7 matrices of a
// llama-shaped GGUF (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down) times
// random float32 activations of n = L columns through ggml_mul_mat on the CPU backend, as
// llama.cpp's prompt processing does (quantized types quantize the activations to their
// vec_dot type first, inside the timing). The weights are read into memory before timing;
// the first layer is computed once untimed (threads started). Prints the wall and the CPU
// seconds (the process's, all threads) of all layers' products on stdout, the per-layer
// wall split on stderr.
//
// Each weight goes where llama.cpp's loader puts it on a CPU (llama-model.cpp's
// select_weight_buft with its default extra buffer types): into the first of the CPU
// device's extra buffer types (ggml_backend_dev_get_extra_bufts: CPU_REPACK, and AMX where
// built) whose supports_op takes the weight's ggml_mul_mat, else the plain CPU buffer. On
// x86 with AVX2 that repacks Q4_0, Q4_K and IQ4_NL matrices into their 8 x 8 interleaved
// layouts (ggml-cpu/repack.cpp), which llama.cpp runs unless told --no-repack; Q8_0 stays
// plain. With "plain" as the fourth argument every weight stays in the plain CPU buffer
// (llama.cpp's --no-repack).
//
// Not part of the CMake build: ggml (ggml-org/ggml, a checkout G) lives outside the
// repository. Built as llama.cpp builds it, llamafile's sgemm on (bench/README.md):
//   cmake -S G -B G/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
//     -DGGML_LLAMAFILE=ON -DBUILD_SHARED_LIBS=OFF && ninja -C G/build ggml
//   g++ -O2 -std=c++17 bench/ggml_matmul/ggml_matmul.cpp -IG/include -LG/build/src \
//     -lggml -lggml-cpu -lggml-base -fopenmp -o ggml_matmul
// Usage: ggml_matmul FILE.gguf L THREADS [plain]
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "gguf.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
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

using Weights = std::map<std::string, ggml_tensor*>;

std::string weight_name(int64_t layer, const char* product) {
    return "blk." + std::to_string(layer) + "." + product + ".weight";
}

/// The buffer types llama.cpp's loader tries for a CPU weight, in its order: the CPU
/// device's extra ones (unless `plain`), then the CPU buffer itself.
std::vector<ggml_backend_buffer_type_t> buffer_types(bool plain) {
    std::vector<ggml_backend_buffer_type_t> out;
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    auto extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
    if (!plain && extra != nullptr) {
        for (ggml_backend_buffer_type_t* b = extra(ggml_backend_reg_dev_get(reg, 0));
             b != nullptr && *b != nullptr;
             ++b) {
            out.push_back(*b);
        }
    }
    out.push_back(ggml_backend_cpu_buffer_type());
    return out;
}

/// Whether `buft` takes w's ggml_mul_mat with float32 activations of n columns, asked as
/// llama.cpp's weight_buft_supported asks: w in an empty buffer of that type, the device's
/// supports_op on the product.
bool takes(ggml_backend_buffer_type_t buft, ggml_tensor* w, int n) {
    ggml_init_params ip{4 * ggml_tensor_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(ip);
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w->ne[0], n);
    ggml_tensor* op = ggml_mul_mat(ctx, w, x);
    ggml_backend_buffer_t empty = ggml_backend_buft_alloc_buffer(buft, 0);
    w->buffer = empty;
    const bool ok = ggml_backend_dev_supports_op(ggml_backend_buft_get_device(buft), op);
    w->buffer = nullptr;
    ggml_backend_buffer_free(empty);
    ggml_free(ctx);
    return ok;
}

/// Every layer's 7 product weights of `path`, each in the buffer type llama.cpp's loader
/// picks (see the header), their bytes read from the file; prints the placement on stderr.
Weights load(const char* path,
             int n,
             bool plain,
             int64_t* layers,
             std::string* type,
             std::vector<unsigned char>* first) {
    ggml_context* meta = nullptr;
    gguf_context* g = gguf_init_from_file(path, {true, &meta});
    if (g == nullptr) {
        die(std::string("cannot read ") + path);
    }
    *layers = gguf_get_val_u32(g, gguf_find_key(g, "llama.block_count"));
    const std::vector<ggml_backend_buffer_type_t> bufts = buffer_types(plain);
    // one no_alloc context per buffer type, holding the weights placed there
    std::vector<ggml_context*> ctx(bufts.size());
    for (ggml_context*& c : ctx) {
        ggml_init_params ip{
            7 * static_cast<std::size_t>(*layers) * ggml_tensor_overhead(), nullptr, true};
        c = ggml_init(ip);
    }
    Weights w;
    for (int64_t l = 0; l < *layers; ++l) {
        for (const char* p : kProducts) {
            const std::string name = weight_name(l, p);
            ggml_tensor* t = ggml_get_tensor(meta, name.c_str());
            if (t == nullptr) {
                die("no tensor " + name);
            }
            std::size_t b = 0;
            while (b + 1 < bufts.size() && !takes(bufts[b], t, n)) {
                ++b;
            }
            ggml_tensor* copy = ggml_dup_tensor(ctx[b], t);
            ggml_set_name(copy, name.c_str());
            w[name] = copy;
        }
    }
    *type = ggml_type_name(w.begin()->second->type);
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) {
        die(std::string("cannot open ") + path);
    }
    std::vector<unsigned char> bytes;
    for (std::size_t b = 0; b < bufts.size(); ++b) {
        if (ggml_get_first_tensor(ctx[b]) == nullptr) {
            continue;
        }
        if (ggml_backend_alloc_ctx_tensors_from_buft(ctx[b], bufts[b]) == nullptr) {
            die(std::string("cannot allocate ") + ggml_backend_buft_name(bufts[b]));
        }
        int count = 0;
        for (ggml_tensor* t = ggml_get_first_tensor(ctx[b]); t != nullptr;
             t = ggml_get_next_tensor(ctx[b], t), ++count) {
            const int64_t id = gguf_find_tensor(g, ggml_get_name(t));
            const long at =
                static_cast<long>(gguf_get_data_offset(g) + gguf_get_tensor_offset(g, id));
            bytes.resize(ggml_nbytes(t));
            if (std::fseek(f, at, SEEK_SET) != 0 ||
                std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
                die(std::string("cannot read ") + ggml_get_name(t));
            }
            ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size()); // repacks where so typed
            if (std::strcmp(ggml_get_name(t), weight_name(0, kProducts[0]).c_str()) == 0) {
                *first = bytes;
            }
        }
        std::fprintf(stderr, "%d weights in %s\n", count, ggml_backend_buft_name(bufts[b]));
    }
    std::fclose(f);
    gguf_free(g);
    ggml_free(meta);
    return w; // the contexts and buffers live until the process ends
}

/// Before timing: layer 0's attn_q product, as placed, against float64 of its dequantized
/// rows (the file's bytes, ggml's to_float) at a few rows and columns. ggml rounds the
/// activations to 8 bits per block of the weight type's size (Q8_0's 32, Q8_K's 256; scale
/// amax / 127), so each product is off by at most sum_k |w_k| * amax(block of x_k) / 254;
/// the bound used is twice that.
void check(const Weights& weights, const std::vector<unsigned char>& bytes, ggml_tensor* x) {
    ggml_tensor* w = weights.at(weight_name(0, kProducts[0]));
    const int64_t k = w->ne[0];
    const int64_t rows = w->ne[1];
    const int64_t n = x->ne[1];
    ggml_init_params ip{static_cast<std::size_t>(rows * n * 4) + (64U << 20), nullptr, false};
    ggml_context* ctx = ggml_init(ip);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_tensor* y = ggml_mul_mat(ctx, w, x);
    ggml_build_forward_expand(gf, y);
    if (ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS) {
        die("check: compute failed");
    }
    const ggml_type_traits* traits = ggml_get_type_traits(w->type);
    const std::size_t row_bytes = ggml_row_size(w->type, k);
    const int64_t block = ggml_blck_size(w->type);
    std::vector<float> row(static_cast<std::size_t>(k));
    const auto* xs = static_cast<const float*>(x->data);
    for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{7}, rows / 2 + 3, rows - 1}) {
        traits->to_float(bytes.data() + r * row_bytes, row.data(), k);
        for (int64_t c : {int64_t{0}, n / 2, n - 1}) {
            const float* xc = xs + c * k;
            double ref = 0;
            double bound = 0;
            for (int64_t b = 0; b < k; b += block) {
                double amax = 0;
                for (int64_t i = b; i < b + block && i < k; ++i) {
                    amax = std::max(amax, std::abs(static_cast<double>(xc[i])));
                }
                for (int64_t i = b; i < b + block && i < k; ++i) {
                    ref += static_cast<double>(row[i]) * xc[i];
                    bound += std::abs(static_cast<double>(row[i])) * amax / 127;
                }
            }
            const double got = static_cast<const float*>(y->data)[c * rows + r];
            if (!(std::abs(got - ref) <= bound + 1e-6)) {
                die("check: " + std::string(ggml_get_name(w)) + " row " + std::to_string(r) +
                    " column " + std::to_string(c) + ": " + std::to_string(got) + ", float64 " +
                    std::to_string(ref));
            }
        }
    }
    ggml_free(ctx);
}

/// One layer's 7 products as one graph, computed on `threads`; its seconds.
double layer(const Weights& weights, int64_t n, ggml_tensor* x, ggml_tensor* h, int threads) {
    std::size_t out = 0;
    std::vector<ggml_tensor*> w;
    for (const char* p : kProducts) {
        ggml_tensor* t = weights.at(weight_name(n, p));
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
    const bool plain = argc == 5 && std::strcmp(argv[4], "plain") == 0;
    if (argc != 4 && !plain) {
        die("usage: ggml_matmul FILE.gguf L THREADS [plain]");
    }
    const int L = std::atoi(argv[2]);
    const int threads = std::atoi(argv[3]);
    int64_t layers = 0;
    std::string type;
    std::vector<unsigned char> first; // layer 0's attn_q as stored in the file
    const Weights weights = load(argv[1], L, plain, &layers, &type, &first);
    const ggml_tensor* q = weights.at(weight_name(0, "attn_q"));
    const ggml_tensor* down = weights.at(weight_name(0, "ffn_down"));
    ggml_init_params ip{
        static_cast<std::size_t>(q->ne[0] + down->ne[0]) * L * 4 + (1U << 20), nullptr, false};
    ggml_context* act = ggml_init(ip);
    ggml_tensor* x = ggml_new_tensor_2d(act, GGML_TYPE_F32, q->ne[0], L);
    ggml_tensor* h = ggml_new_tensor_2d(act, GGML_TYPE_F32, down->ne[0], L);
    std::mt19937 rng(7);
    fill(x, rng);
    fill(h, rng);
    check(weights, first, x);
    layer(weights, 0, x, h, threads); // threads started, caches warm
    double total = 0;
    const std::clock_t c0 = std::clock();
    for (int64_t n = 0; n < layers; ++n) {
        double s = layer(weights, n, x, h, threads);
        std::fprintf(stderr, "layer %lld: %.3f s\n", static_cast<long long>(n), s);
        total += s;
    }
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    std::printf("%s %s L %d threads %d%s: %.4f %.4f\n",
                argv[1],
                type.c_str(),
                L,
                threads,
                plain ? " plain" : "",
                total,
                cpu);
    ggml_free(act);
    return 0;
}
