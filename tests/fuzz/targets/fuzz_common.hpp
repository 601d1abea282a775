// What every fuzz target shares: the properties (nothing but attn::InputError escapes, and
// its message is one line; whatever parses round-trips), a small memory limit so that the
// readers' refusals are exercised instead of the machine's memory, and a folder of fixture
// files that problem documents may name. Header-only; no test framework.
#pragma once

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace attn::fuzz {

/// A property failed: print why and abort, which libFuzzer (and the replay runner, through
/// the abort) reports as a crash with the input that caused it.
[[noreturn]] inline void fail(const std::string& why) {
    std::fprintf(stderr, "fuzz property failed: %s\n", why.c_str());
    std::fflush(stderr);
    std::abort();
}

inline void expect(bool ok, const std::string& why) {
    if (!ok) {
        fail(why);
    }
}

/// The one-line rule of the contract: an error message has no line breaks, no NUL and no
/// terminal control characters, and is not empty.
inline void check_message(const std::exception& e) {
    const std::string_view m = e.what();
    expect(!m.empty(), "empty error message");
    for (const char c : m) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            fail("control character " + std::to_string(u) + " in the message: " + std::string(m));
        }
    }
}

/// Bit-equal floats, except that any NaN equals any NaN (payloads may be quieted).
inline bool same_value(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) {
        return std::isnan(a) && std::isnan(b);
    }
    std::uint32_t x = 0;
    std::uint32_t y = 0;
    std::memcpy(&x, &a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    return x == y;
}

inline void expect_same_array(const io::Array& a, const io::Array& b, const std::string& what) {
    expect(a.shape == b.shape,
           what + ": shape " + shape_string(a.shape) + " became " + shape_string(b.shape));
    expect(a.values.size() == b.values.size(), what + ": value count changed");
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        if (!same_value(a.values[i], b.values[i])) {
            fail(what + ": value " + std::to_string(i) + " " + io::format_float(a.values[i]) +
                 " became " + io::format_float(b.values[i]));
        }
    }
}

/// The element count a shape promises (the arrays are small here: no overflow check needed
/// beyond what the readers did).
inline std::size_t element_count(const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (const std::size_t d : shape) {
        n *= d;
    }
    return n;
}

/// Runs `f` and lets only InputError through (after checking its message). Anything else
/// escaping is a failed property: std::terminate would say less about it than this does.
template <class F>
bool only_input_errors(const char* stage, F&& f, std::string* message = nullptr) {
    try {
        f();
        return true;
    } catch (const InputError& e) {
        check_message(e);
        if (message != nullptr) {
            *message = e.what();
        }
        return false;
    } catch (const std::exception& e) {
        fail(std::string(stage) + ": an exception other than InputError escaped: " + e.what());
    }
}

/// The JSON document in `text`, or nothing when io::parse_json_text refuses it (with an
/// InputError only).
inline std::optional<nlohmann::json> parse_json(std::string_view text, const char* name) {
    nlohmann::json j;
    if (!only_input_errors("parse_json_text", [&] { j = io::parse_json_text(text, name); })) {
        return std::nullopt;
    }
    return j;
}

/// `a` through the NPY writer (float32, or float64 with f64) and back: the same shape and
/// values. Returns what was read back.
inline io::Array expect_npy_round_trip(const io::Array& a, bool f64, const std::string& what) {
    const std::vector<std::uint8_t> npy = io::encode_npy(a.shape, a.values.data(), f64);
    io::Array back;
    expect(only_input_errors("npy", [&] { back = io::parse_npy(npy, "rt.npy"); }),
           what + ": our own NPY does not parse");
    expect_same_array(a, back, what);
    return back;
}

/// Removes `path` (and everything below it) when the process exits.
inline void remove_at_exit(const std::filesystem::path& path) {
    // Made before the handler is registered, so the handler runs before it is destroyed.
    static std::vector<std::filesystem::path> paths;
    paths.push_back(path);
    static const bool registered = std::atexit([] {
                                       for (const std::filesystem::path& p : paths) {
                                           std::error_code ec;
                                           std::filesystem::remove_all(p, ec);
                                       }
                                   }) == 0;
    static_cast<void>(registered);
}

/// The memory limit the targets run under: small enough that the readers' refusals are
/// what a hostile size meets, far below libFuzzer's -rss_limit_mb.
inline constexpr std::uint64_t fuzz_memory_limit = std::uint64_t{64} << 20;

inline void set_limits() {
    io::set_memory_limit(fuzz_memory_limit);
}

/// The input as text, after set_limits(): how every target of a text format begins.
inline std::string_view input_text(const std::uint8_t* data, std::size_t size) {
    set_limits();
    return {reinterpret_cast<const char*>(data), size};
}

/// The input as one JSON document (input_text through parse_json), or nothing when
/// io::parse_json_text refuses it.
inline std::optional<nlohmann::json>
input_json(const std::uint8_t* data, std::size_t size, const char* name) {
    return parse_json(input_text(data, size), name);
}

// --- fixture files ---------------------------------------------------------------------------

/// An NPY v1 file with any descr, order and shape text, and the given payload.
inline std::string npy_file(const std::string& descr,
                            bool fortran,
                            const std::string& shape,
                            const std::string& payload,
                            int major = 1) {
    std::string dict = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
    const std::size_t preamble = major == 1 ? 10 : 12;
    std::size_t length = dict.size() + 1;
    length += (64 - (preamble + length) % 64) % 64;
    dict.append(length - dict.size() - 1, ' ');
    dict += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t k = 0; k < preamble - 8; ++k) {
        out += static_cast<char>((length >> (8 * k)) & 0xffu);
    }
    return out + dict + payload;
}

/// Little-endian float32 bytes of the values.
inline std::string f4(const std::vector<float>& values) {
    std::string out(values.size() * 4, '\0');
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

inline std::vector<float> ramp(std::size_t n, float scale = 0.25f) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * scale;
    }
    return v;
}

/// The folder problem documents resolve their relative paths against, filled once per
/// process with small arrays of every kind (and a few broken ones), removed at exit.
/// The seeds of the problem and batch_line corpora name these files.
inline const std::filesystem::path& fixture_dir() {
    static const std::filesystem::path dir = [] {
        namespace fs = std::filesystem;
        fs::path d =
            fs::temp_directory_path() / ("attn_fuzz_fixtures_" + std::to_string(::getpid()));
        fs::create_directories(d / "sub");
        auto put = [&](const std::string& name, const std::string& bytes) {
            std::ofstream(d / name, std::ios::binary) << bytes;
        };
        put("q.npy", npy_file("<f4", false, "(2, 4)", f4(ramp(8))));
        put("k.npy", npy_file("<f4", false, "(3, 4)", f4(ramp(12, 0.5f))));
        put("v.npy", npy_file("<f4", false, "(3, 2)", f4(ramp(6, 1.0f))));
        put("x.npy", npy_file("<f4", false, "(2, 3, 4)", f4(ramp(24))));
        put("ctx.npy", npy_file("<f4", false, "(2, 5, 6)", f4(ramp(60))));
        put("q4.npy", npy_file("<f4", false, "(1, 2, 3, 4)", f4(ramp(24))));
        put("k4.npy", npy_file("<f4", false, "(1, 1, 5, 4)", f4(ramp(20))));
        put("v4.npy", npy_file("<f4", false, "(1, 1, 5, 3)", f4(ramp(15))));
        put("wq.npy", npy_file("<f4", false, "(4, 4)", f4(ramp(16))));
        put("w8.npy", npy_file("<f4", false, "(8, 4)", f4(ramp(32))));
        put("b4.npy", npy_file("<f4", false, "(4,)", f4(ramp(4))));
        put("mask.npy", npy_file("|b1", false, "(2, 3)", std::string("\1\0\1\1\1\0", 6)));
        put("kpm.npy", npy_file("|b1", false, "(3,)", std::string("\1\1\0", 3)));
        put("bias.npy", npy_file("<f8", true, "(2, 3)", std::string(48, '\0')));
        put("be.npy",
            npy_file(
                ">i2", true, "(2, 4)", std::string("\0\1\0\2\xff\xfe\0\4\0\5\0\6\0\7\0\x08", 16)));
        put("f16.npy", npy_file("<f2", false, "(3, 4)", std::string(24, '\x3c')));
        put("u8.npy", npy_file("|u1", false, "(3, 2)", "abcdef"));
        put("v3.npy", npy_file("<f4", false, "(2, 4)", f4(ramp(8)), 3));
        put("nan.npy",
            npy_file("<f4", false, "(3, 4)", f4({0, 1, 2, NAN, 4, 5, INFINITY, 7, 8, 9, 10, 11})));
        put("empty.npy", npy_file("<f4", false, "(0, 4)", ""));
        put("empty_huge.npy", npy_file("<f4", false, "(0, 1099511627776)", ""));
        put("huge.npy", npy_file("<f4", false, "(1000000000, 1000000000)", f4(ramp(4))));
        put("truncated.npy", npy_file("<f4", false, "(3, 4)", f4(ramp(5))));
        put("bad_magic.npy", std::string("\x93NUMPX\1\0", 8));
        put("q.json", "[[1, 0, 1, 0], [0, 1, 0, \"inf\"]]");
        put("ragged.json", "[[1, 2], [3]]");
        put("deep.json", std::string(200, '[') + std::string(200, ']'));
        put("params.json",
            R"({"w_q": "wq.npy", "w_k": "wq.npy", "w_v": "wq.npy", "b_q": "b4.npy"})");
        put("mha.json",
            R"({"in_proj_weight": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1],[1,0,0,0],[0,1,0,0],)"
            R"([0,0,1,0],[0,0,0,1],[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],)"
            R"("out_proj.weight": "wq.npy", "out_proj.bias": "b4.npy"})");
        put("sub/params.json", R"({"w_q": "../wq.npy", "w_o": "../w8.npy"})");
        put("notjson.json", "{\"w_q\": [1, 2");
        remove_at_exit(d);
        return d;
    }();
    return dir;
}

/// What a target needs before its first input: the fixture folder (the targets whose
/// documents name fixture files), or nothing.
enum class Setup { none, fixtures };

/// One target's function, called with each input.
using TargetFunction = int (*)(const std::uint8_t* data, std::size_t size);

/// Records `run` as the target `name` of the one fuzz program (dispatch.cpp, which
/// LLVMFuzzerInitialize and LLVMFuzzerTestOneInput dispatch from); ATTN_FUZZ_TARGET calls
/// it while the program starts. Returns true, for the static that calls it.
bool register_target(const char* name, TargetFunction run, Setup setup);

/// check_decoded_problem's solve on one target, with or without weights: the result
/// document parses back to the same values.
inline void solve_and_check(const problem::Problem& p, Simd simd, bool want_weights) {
    problem::SolveOptions options;
    options.threads = 1;
    options.simd = simd;
    options.want_weights = want_weights;
    problem::Solution s;
    if (!only_input_errors("solve", [&] { s = problem::solve(p, options); })) {
        return;
    }
    expect(s.weights.has_value() == want_weights, "weights present iff asked for");
    const std::string doc = problem::result_document(p, s);
    nlohmann::json r;
    expect(only_input_errors("reparse result", [&] { r = io::parse_json_text(doc, "result"); }),
           "the result document does not parse: " + doc.substr(0, 200));
    const auto expect_field = [&](const char* field, const io::Array& want) {
        io::Array got;
        expect(only_input_errors(
                   field,
                   [&] { got = io::parse_json_array(r.at(field), field, io::ArrayKind::numeric); }),
               std::string("the result's ") + field + " does not parse");
        if (!got.values.empty()) {
            expect_same_array(want, got, std::string("result ") + field + " round trip");
        }
        return got;
    };
    const io::Array out = expect_field("output", s.output);
    expect(out.values.size() == s.output.values.size(), "output values lost");
    if (s.weights) {
        (void)expect_field("weights", *s.weights);
    }
}

/// What every decoded problem goes through: the limit checks (which may only refuse with
/// InputError), the output-path check (an output named like an input must be refused),
/// and, for problems small enough to compute per input, solve() with and without weights
/// and the result document parsed back to the same values.
inline void check_decoded_problem(const problem::Problem& p) {
    const problem::MemoryEstimate m = problem::estimate_memory(p, true, 1);
    const problem::MemoryEstimate lean = problem::estimate_memory(p, false, 1);
    expect(m.total >= m.inputs && m.total >= lean.inputs, "memory estimate below its inputs");
    expect(m.weights >= lean.weights, "weights cost less than no weights");
    only_input_errors("check_memory",
                      [&] { problem::check_memory(p, true, fuzz_memory_limit, 1); });
    only_input_errors("check_finite", [&] { problem::check_finite(p); });

    const std::vector<io::NamedPath> inputs = problem::input_paths(p);
    const std::filesystem::path q = fixture_dir() / "q.npy";
    bool reads_q = false;
    for (const io::NamedPath& in : inputs) {
        std::error_code ec;
        reads_q = reads_q || std::filesystem::equivalent(in.path, q, ec);
    }
    const bool accepted = only_input_errors("check_output_paths", [&] {
        io::check_output_paths(inputs, {{"--output", fixture_dir() / "out.npy"}, {"--weights", q}});
    });
    expect(accepted != reads_q,
           "an output equal to an input was not refused (or one was "
           "refused that is not an input)");

    if (m.total > (std::uint64_t{8} << 20)) {
        return; // correct, but too slow to compute for every input
    }
    // Every SIMD target this CPU runs, not only the best one: an AVX-512 machine also runs
    // the AVX2, SSE4 and fallback paths, so a bug of one target's path (a null pointer plus
    // an offset that only AVX2's tile width forms, say) shows on either machine kind.
    for (const Simd simd : simd_supported()) {
        for (const bool want_weights : {true, false}) {
            solve_and_check(p, simd, want_weights);
        }
    }
}

} // namespace attn::fuzz

/// Defines the fuzz target `name`: the body that follows takes `data` and `size` as
/// LLVMFuzzerTestOneInput would, and is what the program runs when started as
/// `<name>_fuzz` (tests/fuzz/CMakeLists.txt links every target into one program).
#define ATTN_FUZZ_TARGET_WITH(name, setup)                                                         \
    static int attn_fuzz_target_##name(const std::uint8_t* data, std::size_t size);                \
    [[maybe_unused]] static const bool attn_fuzz_registered_##name =                               \
        attn::fuzz::register_target(#name, attn_fuzz_target_##name, setup);                        \
    static int attn_fuzz_target_##name(const std::uint8_t* data, std::size_t size)

#define ATTN_FUZZ_TARGET(name) ATTN_FUZZ_TARGET_WITH(name, attn::fuzz::Setup::none)
