// ggml's flash attention (ggml_flash_attn_ext, CPU backend) as a whole process, the
// comparison for `attn compute -q q.npy -k k.npy -v v.npy --no-weights --output o.npy`:
// reads the same float32 .npy files (C order, [B, H, L, D] or [H, L, D]) straight into the
// ggml tensors, computes softmax(Q·Kᵀ/√D)·V with no mask, writes o.npy as [B, H, L, Dv]
// (ggml's result is [B, L, H, Dv]; the rows are reordered while writing) and prints each
// phase's time to stderr. K and V stay float32 unless --kv-f16 (llama.cpp's default KV
// cache type; the conversion is timed apart).
//
// Not part of the CMake build: ggml lives outside the repository. Build (bench/README.md):
//   git clone https://github.com/ggml-org/ggml G && cmake -S G -B G/build -G Ninja \
//     -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF && ninja -C G/build
//   g++ -O2 -std=c++17 bench/ggml_flash/ggml_flash_attn.cpp -IG/include -LG/build/src \
//     -lggml -lggml-cpu -lggml-base -fopenmp -o ggml_flash_attn
// Usage: ggml_flash_attn Q.npy K.npy V.npy OUT.npy THREADS [--kv-f16]
#include "ggml-cpu.h"
#include "ggml.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "ggml_flash_attn: %s\n", what.c_str());
    std::exit(1);
}

/// A float32 C-order .npy: its shape, with the file positioned at the payload.
struct Npy {
    FILE* f = nullptr;
    std::vector<long> shape;
};

Npy open_npy(const char* path) {
    Npy n;
    n.f = std::fopen(path, "rb");
    if (n.f == nullptr) {
        die(std::string("cannot open ") + path);
    }
    unsigned char pre[10];
    if (std::fread(pre, 1, 10, n.f) != 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
        die(std::string(path) + ": not a .npy");
    }
    std::size_t len = pre[8] | (pre[9] << 8);
    if (pre[6] != 1) { // versions 2 and 3: a 4-byte header length
        unsigned char more[2];
        if (std::fread(more, 1, 2, n.f) != 2) {
            die(std::string(path) + ": short header");
        }
        len |= (std::size_t(more[0]) << 16) | (std::size_t(more[1]) << 24);
    }
    std::string head(len, '\0');
    if (std::fread(head.data(), 1, len, n.f) != len) {
        die(std::string(path) + ": short header");
    }
    if (head.find("'<f4'") == std::string::npos ||
        head.find("'fortran_order': False") == std::string::npos) {
        die(std::string(path) + ": only float32 C-order arrays");
    }
    const std::size_t open = head.find('(');
    const std::size_t close = head.find(')', open);
    std::string dims = head.substr(open + 1, close - open - 1);
    for (char* p = dims.data(); *p != '\0';) {
        char* end = nullptr;
        const long v = std::strtol(p, &end, 10);
        if (end == p) {
            ++p;
            continue;
        }
        n.shape.push_back(v);
        p = end;
    }
    if (n.shape.size() == 3) {
        n.shape.insert(n.shape.begin(), 1);
    }
    if (n.shape.size() != 4) {
        die(std::string(path) + ": want [B, H, L, D] or [H, L, D]");
    }
    return n;
}

/// ggml tensor of a [B, H, L, D] array: ne = {D, L, H, B}, the same bytes.
ggml_tensor* tensor_of(ggml_context* ctx, const Npy& n) {
    return ggml_new_tensor_4d(ctx, GGML_TYPE_F32, n.shape[3], n.shape[2], n.shape[1], n.shape[0]);
}

void read_payload(Npy& n, ggml_tensor* t) {
    const std::size_t bytes = ggml_nbytes(t);
    if (std::fread(t->data, 1, bytes, n.f) != bytes) {
        die("short payload");
    }
    std::fclose(n.f);
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        die("usage: ggml_flash_attn Q.npy K.npy V.npy OUT.npy THREADS [--kv-f16]");
    }
    const int threads = std::atoi(argv[5]);
    const bool f16 = argc > 6 && std::strcmp(argv[6], "--kv-f16") == 0;
    const auto t_start = Clock::now();
    ggml_cpu_init();

    Npy qn = open_npy(argv[1]);
    Npy kn = open_npy(argv[2]);
    Npy vn = open_npy(argv[3]);
    const long b = qn.shape[0], h = qn.shape[1], lq = qn.shape[2], d = qn.shape[3];
    const long hkv = kn.shape[1], lk = kn.shape[2], dv = vn.shape[3];
    const std::size_t in_bytes =
        4 * (std::size_t(b) * h * lq * d + std::size_t(b) * hkv * lk * (d + dv));
    ggml_init_params ip{};
    ip.mem_size = 2 * in_bytes + 4 * std::size_t(b) * h * lq * dv + (64u << 20);
    ip.mem_buffer = nullptr;
    ip.no_alloc = false;
    ggml_context* ctx = ggml_init(ip);

    ggml_tensor* q = tensor_of(ctx, qn);
    ggml_tensor* k = tensor_of(ctx, kn);
    ggml_tensor* v = tensor_of(ctx, vn);
    read_payload(qn, q);
    read_payload(kn, k);
    read_payload(vn, v);
    const double t_read = since(t_start);

    auto t0 = Clock::now();
    if (f16) {
        ggml_tensor* k16 = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, d, lk, hkv, b);
        ggml_tensor* v16 = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, dv, lk, hkv, b);
        ggml_fp32_to_fp16_row(
            static_cast<float*>(k->data), static_cast<ggml_fp16_t*>(k16->data), ggml_nelements(k));
        ggml_fp32_to_fp16_row(
            static_cast<float*>(v->data), static_cast<ggml_fp16_t*>(v16->data), ggml_nelements(v));
        k = k16;
        v = v16;
    }
    const double t_convert = since(t0);

    ggml_tensor* out =
        ggml_flash_attn_ext(ctx, q, k, v, nullptr, 1.0f / std::sqrt(float(d)), 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    t0 = Clock::now();
    if (ggml_graph_compute_with_ctx(ctx, gf, threads) != GGML_STATUS_SUCCESS) {
        die("compute failed");
    }
    const double t_compute = since(t0);

    // out: ne = {Dv, H, Lq, B}, i.e. [B, Lq, H, Dv]; written as [B, H, Lq, Dv].
    t0 = Clock::now();
    FILE* f = std::fopen(argv[4], "wb");
    if (f == nullptr) {
        die(std::string("cannot write ") + argv[4]);
    }
    std::string head = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(b) +
                       ", " + std::to_string(h) + ", " + std::to_string(lq) + ", " +
                       std::to_string(dv) + "), }";
    head.append(63 - (10 + head.size()) % 64, ' ');
    head.push_back('\n');
    const unsigned char pre[10] = {0x93,
                                   'N',
                                   'U',
                                   'M',
                                   'P',
                                   'Y',
                                   1,
                                   0,
                                   static_cast<unsigned char>(head.size() & 0xff),
                                   static_cast<unsigned char>(head.size() >> 8)};
    std::fwrite(pre, 1, 10, f);
    std::fwrite(head.data(), 1, head.size(), f);
    const auto* o = static_cast<const float*>(out->data);
    for (long bi = 0; bi < b; ++bi) {
        for (long hi = 0; hi < h; ++hi) {
            for (long i = 0; i < lq; ++i) {
                std::fwrite(o + ((bi * lq + i) * h + hi) * dv, 4, dv, f);
            }
        }
    }
    if (std::fclose(f) != 0) {
        die("write failed");
    }
    const double t_write = since(t0);
    std::fprintf(stderr,
                 "ggml read %.4f convert %.4f compute %.4f write %.4f total %.4f s\n",
                 t_read,
                 t_convert,
                 t_compute,
                 t_write,
                 since(t_start));
    ggml_free(ctx);
    return 0;
}
