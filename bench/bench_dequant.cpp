// Dequantization throughput per ggml type (GB/s of float32 output, one thread): random
// blocks with finite fp16 scales, 1 Mi elements per call (4 MiB out, the source in L2/L3).
// Before anything is timed, every type is checked bit for bit against gguf-py's values in
// tests/unit/fixtures/gguf/ (the unit test's oracle); a mismatch stops the binary.
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "attn/model/gguf.hpp"

#include <benchmark/benchmark.h>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

namespace {

constexpr std::size_t elements = std::size_t{1} << 20;

/// The types attn dequantizes, and where each block keeps its fp16 scales.
struct TypeCase {
    std::uint32_t type;
    std::vector<std::size_t> scale_offsets;
};
const std::vector<TypeCase> cases = {
    {0, {}},
    {1, {}},
    {30, {}},
    {8, {0}},
    {2, {0}},
    {3, {0, 2}},
    {6, {0}},
    {7, {0, 2}},
    {10, {80, 82}},
    {11, {108}},
    {12, {0, 2}},
    {13, {0, 2}},
    {14, {208}},
};

std::vector<std::uint8_t> random_blocks(const TypeCase& c) {
    const attn::model::GgmlTypeTraits* t = attn::model::ggml_type_traits(c.type);
    const std::size_t n_blocks = elements / t->block;
    std::vector<std::uint8_t> bytes(n_blocks * t->block_bytes);
    std::mt19937 rng(c.type);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : bytes) {
        b = static_cast<std::uint8_t>(byte(rng));
    }
    if (c.type == 0) { // F32: finite values only
        for (std::size_t i = 0; i < elements; ++i) {
            const float v = static_cast<float>(byte(rng) - 128) / 64.0F;
            std::memcpy(bytes.data() + 4 * i, &v, 4);
        }
    }
    for (std::size_t i = 0; i < n_blocks; ++i) {
        for (const std::size_t off : c.scale_offsets) {
            bytes[i * t->block_bytes + off] = static_cast<std::uint8_t>(byte(rng));
            bytes[i * t->block_bytes + off + 1] = 0x20; // fp16 exponent 8: about 0.01
        }
    }
    return bytes;
}

void bm_dequant(benchmark::State& state, TypeCase c) {
    const std::vector<std::uint8_t> src = random_blocks(c);
    std::vector<float> dst(elements);
    for (auto _ : state) {
        attn::model::dequantize_ggml(c.type, src, dst);
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() *
                            static_cast<std::int64_t>(elements * sizeof(float)));
    state.counters["src_bytes_per_elem"] = static_cast<double>(src.size()) / elements;
}

/// Every type against gguf-py's dequantization (the unit test's fixtures).
bool verify() {
    const std::filesystem::path dir =
        std::filesystem::path(ATTN_SOURCE_DIR) / "tests" / "unit" / "fixtures" / "gguf";
    const attn::model::GgufFile file(dir / "quants.gguf");
    std::ifstream in(dir / "quants_expected.npz", std::ios::binary);
    const std::vector<std::uint8_t> npz{std::istreambuf_iterator<char>(in), {}};
    for (const std::string& name : attn::io::npz_members(npz, "expected")) {
        const attn::io::Array want =
            attn::io::parse_npy(attn::io::npz_member_bytes(npz, name, "expected"), name);
        const attn::io::Array got = file.read(name);
        for (std::size_t i = 0; i < got.values.size(); ++i) {
            if (std::bit_cast<std::uint32_t>(got.values[i]) !=
                    std::bit_cast<std::uint32_t>(want.values[i]) &&
                !(std::isnan(got.values[i]) && std::isnan(want.values[i]))) {
                std::fprintf(
                    stderr, "bench_dequant: %s differs from gguf-py at %zu\n", name.c_str(), i);
                return false;
            }
        }
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (!verify()) {
        return 1;
    }
    for (const TypeCase& c : cases) {
        benchmark::RegisterBenchmark(
            ("bm_dequant/" + std::string(attn::model::ggml_type_traits(c.type)->name)).c_str(),
            bm_dequant,
            c);
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
