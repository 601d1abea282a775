// Tests of the hostile-input defences: sizes and the memory limit, the memory estimate and
// its refusal, --check-finite, outputs that equal inputs, refusals that happen before any
// allocation (huge declared NPY shapes, deep JSON, files beyond the limit: proved with a
// counting operator new), the chunked NPY file reader, and the removal of temp files by
// the signal handlers (a forked child killed mid-write).
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "unit/test_files.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <new>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// --- the largest single allocation while armed ------------------------------------------------
// Plain builds replace the global operator new; under AddressSanitizer (whose allocator owns
// operator new) the sanitizer's malloc hooks see every allocation instead.

#if defined(__SANITIZE_ADDRESS__)
#define ATTN_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_TEST_UNDER_ASAN 1
#endif
#endif

namespace {
std::atomic<bool> counting{false};
std::atomic<std::size_t> largest_allocation{0};

void note_allocation(std::size_t size) {
    if (counting.load(std::memory_order_relaxed)) {
        std::size_t seen = largest_allocation.load(std::memory_order_relaxed);
        while (size > seen && !largest_allocation.compare_exchange_weak(seen, size)) {
        }
    }
}
} // namespace

#if defined(ATTN_TEST_UNDER_ASAN)
// From <sanitizer/allocator_interface.h>, which g++ does not install.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             std::size_t),
                                                         void (*free_hook)(const volatile void*));
namespace {
void malloc_hook(const volatile void* /*ptr*/, std::size_t size) {
    note_allocation(size);
}
void free_hook(const volatile void* /*ptr*/) {}
[[maybe_unused]] const int hooks_installed =
    __sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook);
} // namespace
#else
// Not inlined: inlined into a caller, GCC 12 at -O2 pairs the caller's `new` with the `free`
// below and reports -Wmismatched-new-delete for this correct replacement pair.
[[gnu::noinline]] void* operator new(std::size_t size) {
    note_allocation(size);
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        return p;
    }
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept {
    std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t /*size*/) noexcept {
    std::free(p);
}
#endif

namespace {

namespace fs = std::filesystem;
using attn::InputError;
using namespace attn::io;
using namespace attn::problem;
using attn::testing::ScopedLimit;

/// The largest allocation `f` makes (it may throw; the exception is swallowed after its
/// message is stored in `message`).
template <class F> std::size_t largest_allocation_of(F f, std::string* message = nullptr) {
    memory_limit(); // the default is computed once (reading cgroup files): not f's doing
    largest_allocation = 0;
    counting = true;
    try {
        f();
    } catch (const std::exception& e) {
        counting = false;
        if (message != nullptr) {
            *message = e.what();
        }
    }
    counting = false;
    return largest_allocation.load();
}

/// An NPY v1 file with any header dict and payload (the header padded as numpy does).
std::string npy_file(const std::string& dict_in, const std::string& payload) {
    std::string dict = dict_in;
    std::size_t length = dict.size() + 1;
    length += (64 - (10 + length) % 64) % 64;
    dict.append(length - dict.size() - 1, ' ');
    dict += '\n';
    std::string out = "\x93NUMPY\x01";
    out += '\0';
    out += static_cast<char>(length & 0xff);
    out += static_cast<char>(length >> 8);
    return out + dict + payload;
}

std::span<const std::uint8_t> as_bytes(const std::string& s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

template <class F> std::string input_error_of(F f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no InputError";
    return {};
}

class Limits : public attn::testing::TempDirTest {};

// --- sizes ------------------------------------------------------------------------------------

TEST(Sizes, ParseSize) {
    EXPECT_EQ(parse_size("100000"), 100000U);
    EXPECT_EQ(parse_size("64k"), 64U * 1024);
    EXPECT_EQ(parse_size("512M"), 512U * 1024 * 1024);
    EXPECT_EQ(parse_size("512MiB"), 512U * 1024 * 1024);
    EXPECT_EQ(parse_size("4G"), std::uint64_t{4} << 30);
    EXPECT_EQ(parse_size("1.5GiB"), std::uint64_t{3} << 29);
    EXPECT_EQ(parse_size("2 tb"), std::uint64_t{2} << 40);
    EXPECT_EQ(parse_size("none"), unlimited_memory);
    EXPECT_EQ(parse_size("Unlimited"), unlimited_memory);
    EXPECT_GT(parse_size("50%"), 0U);
    EXPECT_LE(parse_size("50%"), parse_size("100%"));
    for (const char* bad : {"", "-1", "4X", "1e9", "G", "nan", "inf", "101%", "1..2G"}) {
        const std::string m = input_error_of([&] { parse_size(bad); });
        EXPECT_EQ(m.rfind("max_memory: expected a size", 0), 0U) << bad << ": " << m;
    }
    EXPECT_NE(input_error_of([] { parse_size("99999999999T"); }).find("too large"),
              std::string::npos);
}

TEST(Sizes, FormatSize) {
    EXPECT_EQ(format_size(0), "0 B");
    EXPECT_EQ(format_size(1023), "1023 B");
    EXPECT_EQ(format_size(1536), "1.5 KiB");
    EXPECT_EQ(format_size(std::uint64_t{3} << 30), "3.0 GiB");
    EXPECT_EQ(format_size(unlimited_memory), "more than 16 EiB");
}

TEST(Sizes, DefaultLimitIsASafeShare) {
    const std::uint64_t phys = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                               static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    EXPECT_LE(default_memory_limit(), std::max<std::uint64_t>(phys / 2, 64U << 20));
    EXPECT_GE(default_memory_limit(), 64U << 20);
    const ScopedLimit limit(12345);
    EXPECT_EQ(memory_limit(), 12345U);
}

// --- the memory estimate ------------------------------------------------------------------------

/// Q, K, V of [L, 1] floats given as JSON literals: tiny inputs, L x L weights.
Problem long_problem(std::size_t lq, std::size_t lk) {
    nlohmann::json doc;
    doc["query"] = nlohmann::json::array();
    doc["key"] = nlohmann::json::array();
    for (std::size_t i = 0; i < lq; ++i) {
        doc["query"].push_back({0.5});
    }
    for (std::size_t i = 0; i < lk; ++i) {
        doc["key"].push_back({0.25});
    }
    doc["value"] = doc["key"];
    return decode_problem(doc, fs::current_path());
}

TEST(Memory, EstimateCountsTheWeights) {
    const Problem p = long_problem(300, 200);
    const MemoryEstimate with = estimate_memory(p, true, 1);
    const MemoryEstimate without = estimate_memory(p, false, 1);
    EXPECT_EQ(with.weights, 300U * 200U * 16U); // tensor + result copy + encoding
    EXPECT_EQ(without.weights, 0U);
    EXPECT_EQ(with.weights_shape, (std::vector<std::size_t>{300, 200}));
    EXPECT_GE(with.inputs, (300U + 2 * 200U) * 4U);
    EXPECT_LT(without.total, with.total);
    EXPECT_EQ(with.total, with.inputs + with.intermediates + with.output + with.weights);
}

// precision f64 holds every input twice (float32 and float64) and computes in float64:
// its estimate must grow accordingly, or --max-memory would let it use 3x the limit.
TEST(Memory, PrecisionF64CountsItsDoubles) {
    Problem p = long_problem(300, 200);
    const MemoryEstimate f32 = estimate_memory(p, true, 1);
    nlohmann::json doc;
    doc["query"] = nlohmann::json::array();
    doc["key"] = nlohmann::json::array();
    for (std::size_t i = 0; i < 300; ++i) {
        doc["query"].push_back({0.5});
    }
    for (std::size_t i = 0; i < 200; ++i) {
        doc["key"].push_back({0.25});
    }
    doc["value"] = doc["key"];
    doc["precision"] = "f64";
    const MemoryEstimate f64 = estimate_memory(decode_problem(doc, fs::current_path()), true, 1);
    EXPECT_EQ(f64.inputs, 3 * f32.inputs);
    EXPECT_EQ(f64.weights, 2 * f32.weights);
    EXPECT_GE(f64.total, 2 * f32.total);
}

TEST(Memory, RefusalNamesTheFiguresAndSuggestsNoWeights) {
    const Problem p = long_problem(2000, 3000);
    const std::string m = input_error_of([&] { check_memory(p, true, 10U << 20, 1); });
    EXPECT_EQ(m.rfind("max_memory: this problem needs about ", 0), 0U) << m;
    EXPECT_NE(m.find("the weights [2000, 3000] take 91.6 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("more than the limit of 10.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("without weights (no_weights) it needs"), std::string::npos) << m;
    EXPECT_NO_THROW(check_memory(p, false, 10U << 20, 1));
    // When even the lean path does not fit, there is no suggestion.
    const std::string tight = input_error_of([&] { check_memory(p, true, 1000, 1); });
    EXPECT_EQ(tight.find("no_weights"), std::string::npos) << tight;
}

TEST(Memory, SolveRefusesBeforeAllocatingTheWeights) {
    const Problem p = long_problem(2000, 3000);
    SolveOptions o;
    o.threads = 1;
    o.max_memory = 10U << 20;
    std::string m;
    const std::size_t largest = largest_allocation_of([&] { solve(p, o); }, &m);
    EXPECT_EQ(m.rfind("max_memory:", 0), 0U) << m;
    EXPECT_LT(largest, 1U << 20); // the 24 MB weights were never allocated
}

TEST(Memory, HugeInitIsRefusedBeforeDrawing) {
    // w_q, w_k, w_v of [2^20, 3]: 36 MiB.
    const ScopedLimit limit(16U << 20);
    nlohmann::json doc =
        nlohmann::json::parse(R"({"input": [[1, 2, 3]], "init": {"seed": 1, "dim": 1048576}})");
    std::string m;
    const std::size_t largest =
        largest_allocation_of([&] { decode_problem(doc, fs::current_path()); }, &m);
    EXPECT_EQ(m.rfind("init: random projection weights of dim 1048576", 0), 0U) << m;
    EXPECT_LT(largest, 1U << 20);
}

// --- refusals before allocation -----------------------------------------------------------------

TEST_F(Limits, HugeDeclaredShapeIsRefusedBeforeAllocation) {
    const std::string f = npy_file(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", "0123456789");
    std::string m;
    EXPECT_LT(largest_allocation_of([&] { parse_npy(as_bytes(f), "big.npy"); }, &m), 4096U);
    EXPECT_EQ(m, "big.npy: truncated: header says 40000000000 bytes of data, file has 10");
    const fs::path path = write("big.npy", f);
    EXPECT_LT(largest_allocation_of([&] { read_array_file(path, ArrayKind::numeric); }, &m), 4096U);
    EXPECT_EQ(m, path.string() + ": truncated: header says 40000000000 bytes of data, file has 10");
}

TEST_F(Limits, OverflowingShapeIsRefusedBeforeAllocation) {
    const std::string f = npy_file(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }", "");
    std::string m;
    EXPECT_LT(largest_allocation_of([&] { parse_npy(as_bytes(f), "o.npy"); }, &m), 4096U);
    EXPECT_EQ(m,
              "o.npy: shape (4294967296, 4294967296, 2) is too large (its element count "
              "overflows)");
    // Empty arrays cannot smuggle in dimensions whose product overflows either.
    const std::string empty = npy_file(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", "");
    EXPECT_NE(input_error_of([&] { parse_npy(as_bytes(empty), "e.npy"); }).find("too large"),
              std::string::npos);
}

TEST_F(Limits, HugeHeaderLengthIsRefusedBeforeReading) {
    // A v2 header length of 4 GiB in a 20-byte file, and a 2 MiB header in a real file.
    std::string v2 = "\x93NUMPY\x02";
    v2 += std::string("\0\xff\xff\xff\xff", 5);
    v2 += "{'descr'";
    std::string m;
    EXPECT_LT(largest_allocation_of([&] { parse_npy(as_bytes(v2), "h.npy"); }, &m), 4096U);
    EXPECT_EQ(m, "h.npy: truncated header: it says 4294967295 bytes, the file has 8");
    std::string long_header = "\x93NUMPY\x02";
    long_header += std::string("\0\0\0\x20\0", 5); // 2 MiB
    long_header += std::string(2U << 20, ' ');
    const fs::path path = write("h.npy", long_header);
    EXPECT_LT(largest_allocation_of([&] { read_array_file(path, ArrayKind::numeric); }, &m), 4096U);
    EXPECT_NE(m.find("bad NPY header: 2097152 bytes is too long"), std::string::npos) << m;
}

TEST_F(Limits, ValidArrayBeyondTheLimitIsRefusedBeforeReading) {
    // A sparse 4 GB file with an honest header: refused by the limit, never read.
    const ScopedLimit limit(64U << 20);
    const std::string head =
        npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", "");
    const fs::path path = write("sparse.npy", head);
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(head.size() + 4000000000ULL)), 0);
    std::string m;
    EXPECT_LT(largest_allocation_of([&] { read_array_file(path, ArrayKind::numeric); }, &m), 4096U);
    EXPECT_EQ(m,
              path.string() + ": the array of shape (1000000000,) needs 3.7 GiB as float32, "
                              "more than the memory limit of 64.0 MiB (--max-memory)");
    // read_file refuses by size too, and a device without end by what arrived.
    EXPECT_LT(largest_allocation_of([&] { read_file(path); }, &m), 4096U);
    EXPECT_NE(m.find(": cannot read: the file is 3.7 GiB, more than the memory limit"),
              std::string::npos)
        << m;
    const ScopedLimit small(1U << 20);
    EXPECT_EQ(input_error_of([] { read_file("/dev/zero"); }),
              "/dev/zero: cannot read: the file is at least 1.1 MiB, more than the memory limit "
              "of 1.0 MiB (--max-memory)");
}

TEST_F(Limits, DeepJsonIsRefusedBeforeParsing) {
    const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
    std::string m;
    EXPECT_LT(largest_allocation_of([&] { parse_json_text(deep, "deep.json"); }, &m), 4096U);
    EXPECT_EQ(m, "deep.json: JSON nested deeper than 128 levels (at byte 128)");
    const fs::path path = write("deep.json", deep);
    EXPECT_EQ(input_error_of([&] { read_array_file(path, ArrayKind::numeric); }),
              path.string() + ": JSON nested deeper than 128 levels (at byte 128)");
    // Brackets inside strings do not count; escaped quotes do not end strings.
    EXPECT_NO_THROW(check_json_depth(R"({"a": "[[[[\"[[[[", "b": [[1]]})", "s", 3));
    EXPECT_THROW(check_json_depth("[[[[1]]]]", "s", 3), InputError);
    // Deeper than rank 4 is refused by the array reader without copying anything.
    const nlohmann::json six = nlohmann::json::parse("[[[[[[1]]]]]]");
    EXPECT_LT(largest_allocation_of([&] { parse_json_array(six, "six", ArrayKind::numeric); }, &m),
              1024U);
    EXPECT_EQ(m, "six: the array is nested deeper than rank 4");
}

TEST_F(Limits, NumberOverflowIsAnInputError) {
    EXPECT_EQ(input_error_of([] { parse_json_text("[1e400]", "n.json"); }),
              "n.json: invalid JSON: number overflow parsing '1e400'");
    const fs::path path = write("n.json", "[[1e400]]");
    EXPECT_EQ(input_error_of([&] { read_array_file(path, ArrayKind::numeric); }),
              path.string() + ": invalid JSON: number overflow parsing '1e400'");
}

TEST_F(Limits, MessagesQuoteControlCharactersSafely) {
    EXPECT_EQ(message_text("a\nb\x1b[31m\x7f\xc3\xa9"), "a\\x0ab\\x1b[31m\\x7f\xc3\xa9");
    EXPECT_EQ(message_text(std::string(300, 'x'), 10), "xxxxxxxxxx...");
    const auto doc =
        nlohmann::json::parse(R"({"query": [[1]], "key": [[1]], "value": [[1]], "a\nb": 1})");
    EXPECT_EQ(input_error_of([&] { decode_problem(doc, dir_); }),
              "problem: unknown field 'a\\x0ab'");
    const auto bad_path =
        nlohmann::json::parse(R"({"query": "line\nbreak.npy", "key": [[1]], "value": [[1]]})");
    const std::string m = input_error_of([&] { decode_problem(bad_path, dir_); });
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

// --- the chunked file reader
// ----------------------------------------------------------------------

TEST_F(Limits, ChunkedFortranReadMatchesTheInMemoryReader) {
    // 3 x 5 x 70001 int16, Fortran order: 2.1 MB of payload, read in three chunks.
    const std::size_t n = std::size_t{3} * 5 * 70001;
    std::string payload(n * 2, '\0');
    for (std::size_t i = 0; i < n; ++i) {
        const auto v = static_cast<std::uint16_t>(i * 2654435761U);
        payload[2 * i] = static_cast<char>(v & 0xff);
        payload[2 * i + 1] = static_cast<char>(v >> 8);
    }
    const std::string f =
        npy_file("{'descr': '<i2', 'fortran_order': True, 'shape': (3, 5, 70001), }", payload);
    const fs::path path = write("f.npy", f);
    const Array from_file = read_array_file(path, ArrayKind::numeric);
    const Array in_memory = parse_npy(as_bytes(f), "f.npy");
    ASSERT_EQ(from_file.shape, (std::vector<std::size_t>{3, 5, 70001}));
    ASSERT_EQ(from_file.values, in_memory.values);
    // Element [i, j, k] sits at Fortran offset i + 3 j + 15 k.
    auto at = [&](std::size_t i, std::size_t j, std::size_t k) {
        const std::size_t off = i + 3 * j + 15 * k;
        return static_cast<float>(
            static_cast<std::int16_t>(static_cast<std::uint16_t>(off * 2654435761U)));
    };
    EXPECT_EQ(from_file.values[(2 * 5 + 4) * 70001 + 70000], at(2, 4, 70000));
    EXPECT_EQ(from_file.values[(1 * 5 + 3) * 70001 + 12345], at(1, 3, 12345));
    // A trailing byte is refused by both.
    const fs::path longer = write("g.npy", f + "x");
    EXPECT_NE(
        input_error_of([&] { read_array_file(longer, ArrayKind::numeric); }).find("trailing bytes"),
        std::string::npos);
}

// --- --check-finite
// -------------------------------------------------------------------------------

TEST_F(Limits, CheckFiniteNamesFieldFileAndIndex) {
    const auto literal = nlohmann::json::parse(
        R"({"query": [[1, 2, 3], [4, 5, "nan"]], "key": [[1, 2, 3]], "value": [[1]]})");
    const Problem p = decode_problem(literal, dir_);
    EXPECT_EQ(input_error_of([&] { check_finite(p); }),
              "query: non-finite value nan at [1, 2] (check_finite)");

    const std::string k =
        npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                 std::string("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x80\xff\0\0\0\0", 24));
    write("k.npy", k);
    const auto from_file =
        nlohmann::json::parse(R"({"query": [[1, 2, 3]], "key": "k.npy", "value": [[1], [2]]})");
    const Problem q = decode_problem(from_file, dir_);
    EXPECT_EQ(input_error_of([&] { check_finite(q); }),
              "key: " + (dir_ / "k.npy").string() +
                  ": non-finite value -inf at [1, 1] (check_finite)");

    // -inf in bias blocks (allowed); NaN or +inf in bias is refused; masks are not checked.
    auto ok = nlohmann::json::parse(R"({"query": [[1.0]], "key": [[1.0], [2.0]],
        "value": [[1.0], [2.0]], "bias": [[0, "-inf"]], "mask": [[1, 1]]})");
    EXPECT_NO_THROW(check_finite(decode_problem(ok, dir_)));
    ok["bias"] = nlohmann::json::parse(R"([["inf", 0]])");
    EXPECT_EQ(input_error_of([&] { check_finite(decode_problem(ok, dir_)); }),
              "bias: non-finite value inf at [0, 0] (check_finite)");
    ok["bias"] = nlohmann::json::parse("[[0, 0]]");
    ok["params"] = nlohmann::json::parse(R"({"w_q": [["nan"]], "w_k": null, "w_v": null})");
    EXPECT_EQ(input_error_of([&] { check_finite(decode_problem(ok, dir_)); }),
              "params.w_q: non-finite value nan at [0, 0] (check_finite)");
}

// --- outputs that are inputs
// -------------------------------------------------------------------------

TEST_F(Limits, OutputEqualToAnInputIsRefused) {
    const fs::path q = write("q.npy",
                             npy_file("{'descr': '<f4', 'fortran_order': False, "
                                      "'shape': (1, 1), }",
                                      std::string(4, '\0')));
    fs::create_directories(dir_ / "sub");
    const auto doc =
        nlohmann::json::parse(R"({"query": "sub/../q.npy", "key": "q.npy", "value": "q.npy"})");
    const Problem p = decode_problem(doc, dir_);
    const std::vector<NamedPath> inputs = input_paths(p);
    ASSERT_EQ(inputs.size(), 3U);
    EXPECT_EQ(inputs[0].name, "query");

    EXPECT_EQ(input_error_of([&] {
                  check_output_paths(inputs, {{"--output", q}});
              }),
              "--output: " + q.string() +
                  " is also the input of query; refusing to overwrite an input");
    // Through a symlink, a hard link, and a path spelled differently.
    fs::create_symlink(q, dir_ / "link.npy");
    fs::create_hard_link(q, dir_ / "hard.npy");
    for (const fs::path& same :
         {dir_ / "link.npy", dir_ / "hard.npy", dir_ / "sub" / ".." / "q.npy"}) {
        EXPECT_THROW(check_output_paths(inputs, {{"--weights", same}}), InputError) << same;
    }
    // Distinct files, stdout and devices pass.
    EXPECT_NO_THROW(check_output_paths(
        inputs, {{"--output", dir_ / "o.npy"}, {"--weights", "-"}, {"--heatmap", ""}}));
    EXPECT_NO_THROW(
        check_output_paths(inputs, {{"--output", "/dev/null"}, {"--weights", "/dev/null"}}));
    // Two outputs naming one (new) file.
    EXPECT_EQ(input_error_of([&] {
                  check_output_paths(
                      inputs, {{"--output", dir_ / "o.npy"}, {"--weights", dir_ / "sub/../o.npy"}});
              }),
              "--weights: " + (dir_ / "sub/../o.npy").string() + " is also the file of --output");
    // The PROBLEM file is an input like any other.
    EXPECT_THROW(
        check_output_paths({{"PROBLEM", dir_ / "p.json"}}, {{"--output", dir_ / "p.json"}}),
        InputError);
}

// --- temp files and signals
// ----------------------------------------------------------------------------

TEST_F(Limits, UncommittedWriterLeavesNothing) {
    const fs::path out = write("out.npy", "old");
    {
        AtomicWriter w(out);
        w.write(as_bytes(std::string("new content")));
        EXPECT_TRUE(fs::exists(w.temp_path()));
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
    std::ifstream in(out);
    std::string content;
    in >> content;
    EXPECT_EQ(content, "old");
    {
        AtomicWriter w(out);
        w.write(as_bytes(std::string("new")));
        w.commit();
        EXPECT_TRUE(w.temp_path().empty());
    }
    std::ifstream again(out);
    again >> content;
    EXPECT_EQ(content, "new");
    EXPECT_THROW(AtomicWriter("/dev/null"), attn::SystemError);
}

/// The child's message on `fd` up to its end, or nothing when none came within `seconds`.
std::optional<std::string> read_within(int fd, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::string text;
    char buffer[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
        const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready <= 0) {
            return std::nullopt;
        }
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) {
            return text;
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
}

/// Whether `child` exited within `seconds` (its status in `status`); else it is killed.
bool reaped_within(pid_t child, int seconds, int& status) {
    for (int i = 0; i < seconds * 100; ++i) {
        if (::waitpid(child, &status, WNOHANG) == child) {
            return true;
        }
        ::usleep(10000);
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    return false;
}

/// Forks a child that installs the cleanup handlers, starts an atomic write of `out` and
/// waits; kills it with `sig` once the temp file exists; returns the temp path and checks
/// that the child died of the signal. Nothing when the child never said where its temp file
/// is: a child forked from this program (its thread pools, OpenBLAS's threads) can block
/// for good on a lock another thread held at the fork, which the CLI, one process, never
/// meets (seen twice in a whole unsharded run); the caller tries again.
std::optional<std::string> kill_mid_write(const fs::path& out, int sig) {
    int fds[2];
    if (::pipe(fds) != 0) {
        ADD_FAILURE() << "pipe";
        return std::string();
    }
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        ::sigprocmask(SIG_UNBLOCK, &set, nullptr); // a mask inherited from the forking thread
        install_signal_cleanup();
        AtomicWriter w(out);
        w.write(as_bytes(std::string(100000, 'x')));
        const std::string& temp = w.temp_path();
        if (::write(fds[1], temp.c_str(), temp.size()) < 0) {
            ::_exit(3);
        }
        ::close(fds[1]);
        for (;;) {
            ::pause();
        }
    }
    ::close(fds[1]);
    const std::optional<std::string> temp = read_within(fds[0], 30);
    ::close(fds[0]);
    int status = 0;
    if (!temp) {
        reaped_within(child, 0, status);
        return std::nullopt;
    }
    EXPECT_TRUE(fs::exists(*temp)) << *temp;
    ::kill(child, sig);
    EXPECT_TRUE(reaped_within(child, 30, status)) << "signal " << sig << " did not end the child";
    EXPECT_TRUE(WIFSIGNALED(status)) << status;
    if (WIFSIGNALED(status)) {
        EXPECT_EQ(WTERMSIG(status), sig);
    }
    return temp;
}

TEST_F(Limits, SignalsRemoveTheTempFileAndKeepTheOldOutput) {
    const fs::path out = write("out.npy", "old");
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        std::optional<std::string> got;
        for (int attempt = 0; attempt < 3 && !got; ++attempt) {
            got = kill_mid_write(out, sig);
        }
        ASSERT_TRUE(got) << "signal " << sig << ": the forked child never started its write";
        const std::string& temp = *got;
        EXPECT_FALSE(temp.empty());
        EXPECT_FALSE(fs::exists(temp)) << "signal " << sig << " left " << temp;
        std::ifstream in(out);
        std::string content;
        in >> content;
        EXPECT_EQ(content, "old");
        EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
    }
}

} // namespace
