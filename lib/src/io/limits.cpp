// The memory limit and the memory estimate of a decoded problem, --check-finite, and the
// refusal of outputs that would overwrite an input. Pure bookkeeping over shapes and
// paths: nothing here allocates in proportion to the problem or touches an output file.
#include "attn/io/limits.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/problem.hpp"
#include "attn/kernels.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace attn::io {

namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = kib * 1024;
constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

/// a * b and a + b, saturating at UINT64_MAX: hostile shapes give "enormous", never a wrap.
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > max_u64 / a) {
        return max_u64;
    }
    return a * b;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
    return a > max_u64 - b ? max_u64 : a + b;
}
std::uint64_t sat_prod(std::initializer_list<std::uint64_t> factors) {
    std::uint64_t out = 1;
    for (const std::uint64_t f : factors) {
        out = sat_mul(out, f);
    }
    return out;
}

/// Bytes of an xtensor container of float32 or uint8.
template <class E> std::uint64_t bytes_of(const E& e) {
    std::uint64_t n = sizeof(typename E::value_type);
    for (const std::size_t d : e.shape()) {
        n = sat_mul(n, d);
    }
    return n;
}

std::uint64_t physical_memory() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) {
        return 0;
    }
    return sat_mul(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page_size));
}

/// The first number in a cgroup file ("max" and unreadable files give 0: no limit).
std::uint64_t cgroup_limit(const char* file) {
    std::ifstream in(file);
    std::string text;
    if (!(in >> text)) {
        return 0;
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        return 0;
    }
    return value;
}

std::atomic<std::uint64_t> configured_limit{0};
std::atomic<bool> limit_configured{false};

/// [a, b, c] with kAnyDim-free entries (for weights shapes in messages).
std::string dims_text(const std::vector<std::size_t>& dims) {
    return shape_string(dims);
}

/// The C-order multi-index of a flat index into `shape`.
std::vector<std::size_t> unravel(std::size_t flat, const std::vector<std::size_t>& shape) {
    std::vector<std::size_t> index(shape.size(), 0);
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (shape[k] != 0) {
            index[k] = flat % shape[k];
            flat /= shape[k];
        }
    }
    return index;
}

/// True for devices and FIFOs: written in place, never replaced by a rename.
bool is_special(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

bool same_file(const fs::path& a, const fs::path& b) {
    std::error_code ec_a;
    std::error_code ec_b;
    if (fs::exists(a, ec_a) && fs::exists(b, ec_b)) {
        std::error_code ec;
        const bool same = fs::equivalent(a, b, ec);
        return !ec && same;
    }
    std::error_code ec;
    const fs::path ca = fs::weakly_canonical(a, ec);
    if (ec) {
        return fs::absolute(a, ec).lexically_normal() == fs::absolute(b, ec).lexically_normal();
    }
    const fs::path cb = fs::weakly_canonical(b, ec);
    return !ec && ca == cb;
}

} // namespace

std::uint64_t default_memory_limit() {
    static const std::uint64_t value = [] {
        std::uint64_t limit = physical_memory() / 2;
        for (const char* file :
             {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
            const std::uint64_t cg = cgroup_limit(file);
            if (cg != 0 && (limit == 0 || cg / 2 < limit)) {
                limit = cg / 2;
            }
        }
        struct rlimit as {};
        if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
            const auto cap = static_cast<std::uint64_t>(as.rlim_cur) / 2;
            if (limit == 0 || cap < limit) {
                limit = cap;
            }
        }
        if (limit == 0) {
            limit = 4 * kib * mib; // sysconf failed and nothing else says: 4 GiB
        }
        return std::max(limit, 64 * mib);
    }();
    return value;
}

std::uint64_t memory_limit() {
    return limit_configured.load(std::memory_order_acquire)
               ? configured_limit.load(std::memory_order_relaxed)
               : default_memory_limit();
}

void set_memory_limit(std::uint64_t bytes) {
    configured_limit.store(bytes, std::memory_order_relaxed);
    limit_configured.store(true, std::memory_order_release);
}

std::uint64_t parse_size(std::string_view text, std::string_view name) {
    auto fail = [&]() -> InputError {
        return InputError(std::string(name) +
                          ": expected a size such as 4G, 512M, 1.5GiB, 100000 (bytes) or 50% "
                          "(of physical memory), or 'none', got '" +
                          message_text(text, 60) + "'");
    };
    std::string s;
    for (const char c : text) {
        if (c != ' ') {
            s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    if (s == "none" || s == "unlimited") {
        return unlimited_memory;
    }
    double number = 0.0;
    const char* first = s.data();
    const char* last = s.data() + s.size();
    const auto [end, ec] = std::from_chars(first, last, number, std::chars_format::fixed);
    if (ec != std::errc() || end == first || !std::isfinite(number) || number < 0.0 ||
        (end != last && *end == 'e')) {
        throw fail();
    }
    const std::string suffix(end, last);
    double scale = 0.0;
    if (suffix == "%") {
        if (number > 100.0) {
            throw fail();
        }
        const std::uint64_t phys = physical_memory();
        return static_cast<std::uint64_t>(static_cast<double>(phys) * (number / 100.0));
    }
    static const std::pair<const char*, double> units[] = {
        {"", 1.0},
        {"b", 1.0},
        {"k", 1024.0},
        {"kb", 1024.0},
        {"kib", 1024.0},
        {"m", 1024.0 * 1024.0},
        {"mb", 1024.0 * 1024.0},
        {"mib", 1024.0 * 1024.0},
        {"g", 1024.0 * 1024.0 * 1024.0},
        {"gb", 1024.0 * 1024.0 * 1024.0},
        {"gib", 1024.0 * 1024.0 * 1024.0},
        {"t", 1024.0 * 1024.0 * 1024.0 * 1024.0},
        {"tb", 1024.0 * 1024.0 * 1024.0 * 1024.0},
        {"tib", 1024.0 * 1024.0 * 1024.0 * 1024.0}};
    for (const auto& [unit, factor] : units) {
        if (suffix == unit) {
            scale = factor;
        }
    }
    if (scale == 0.0) {
        throw fail();
    }
    const double bytes = std::floor(number * scale);
    if (bytes >= 18446744073709551616.0) { // 2^64
        throw InputError(std::string(name) + ": " + message_text(text, 60) + " is too large");
    }
    return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
    if (bytes == max_u64) {
        return "more than 16 EiB";
    }
    if (bytes < kib) {
        return std::to_string(bytes) + " B";
    }
    static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes) / 1024.0;
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    std::array<char, 32> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%.1f %s", value, units[unit]);
    return buffer.data();
}

MemoryEstimate estimate_memory(const Problem& p, bool want_weights, unsigned threads) {
    constexpr std::uint64_t f32 = sizeof(float);
    constexpr std::uint64_t encoded = 12; // bytes per value of the result: copy + JSON text
    const std::uint64_t n_threads =
        threads != 0 ? threads : std::max<std::uint64_t>(1, std::thread::hardware_concurrency());

    MemoryEstimate m;
    // Inputs: everything the decoded problem holds.
    m.inputs = sat_add(m.inputs, bytes_of(p.q4));
    m.inputs = sat_add(m.inputs, bytes_of(p.k4));
    m.inputs = sat_add(m.inputs, bytes_of(p.v4));
    m.inputs = sat_add(m.inputs, bytes_of(p.query_src));
    m.inputs = sat_add(m.inputs, bytes_of(p.key_src));
    m.inputs = sat_add(m.inputs, bytes_of(p.value_src));
    if (p.mask) {
        m.inputs = sat_add(m.inputs, bytes_of(*p.mask));
    }
    if (p.bias) {
        m.inputs = sat_add(m.inputs, bytes_of(*p.bias));
    }
    if (p.key_padding) {
        m.inputs = sat_add(m.inputs, bytes_of(*p.key_padding));
    }
    if (p.projections) {
        const Projections& w = *p.projections;
        for (const auto* mat : {&w.w_q, &w.w_k, &w.w_v, &w.w_o}) {
            if (*mat) {
                m.inputs = sat_add(m.inputs, bytes_of(**mat));
            }
        }
        for (const auto* vec : {&w.b_q, &w.b_k, &w.b_v, &w.b_o}) {
            if (*vec) {
                m.inputs = sat_add(m.inputs, bytes_of(**vec));
            }
        }
    }

    // The attention problem in rank 4: [B, H, Lq, D] x [Bk, Hkv, Lk, D] -> [B, H, Lq, Dv].
    std::uint64_t b = p.batch;
    std::uint64_t h = std::max<std::size_t>(p.num_heads, 1);
    std::uint64_t hkv = std::max<std::size_t>(p.num_kv_heads, 1);
    std::uint64_t bk = 1;
    std::uint64_t lq = p.lq;
    std::uint64_t lk = p.lk;
    std::uint64_t d = 0;
    std::uint64_t dv = 0;
    std::uint64_t out_features = 0; // of the final output row
    if (p.direct_heads) {
        b = p.q4.shape()[0];
        h = p.q4.shape()[1];
        d = p.q4.shape()[3];
        bk = p.k4.shape()[0];
        hkv = p.k4.shape()[1];
        dv = p.v4.shape()[3];
        out_features = dv;
    } else {
        bk = p.key_src.shape()[0];
        const Projections* w = p.projections ? &*p.projections : nullptr;
        const std::uint64_t dq = w && w->w_q ? w->w_q->shape()[0] : p.query_src.shape()[2];
        const std::uint64_t dk = w && w->w_k ? w->w_k->shape()[0] : p.key_src.shape()[2];
        const std::uint64_t dvv = w && w->w_v ? w->w_v->shape()[0] : p.value_src.shape()[2];
        d = dq / h;
        dv = dvv / hkv;
        // Projected (or copied) Q, K, V, then their head-split copies.
        const std::uint64_t qkv = sat_add(sat_prod({b, lq, dq}),
                                          sat_add(sat_prod({bk, lk, dk}), sat_prod({bk, lk, dvv})));
        m.intermediates = sat_add(m.intermediates, sat_mul(2 * f32, qkv));
        // Merged heads, then the output projection.
        const std::uint64_t merged = sat_prod({b, lq, h, dv});
        m.output = sat_add(m.output, sat_mul(f32, merged));
        out_features = sat_mul(h, dv);
        if (w && w->w_o) {
            out_features = w->w_o->shape()[0];
            m.output = sat_add(m.output, sat_prod({f32, b, lq, out_features}));
        }
    }
    // The attention output [B, H, Lq, Dv] and the final output with its copy and encoding.
    m.output = sat_add(m.output, sat_prod({f32, b, h, lq, dv}));
    m.output = sat_add(m.output, sat_prod({encoded, b, lq, out_features}));
    if (want_weights) {
        // The weights tensor, then the result's copy and its encoding.
        m.weights = sat_prod({f32 + encoded, b, h, lq, lk});
        m.weights_shape = {static_cast<std::size_t>(b),
                           static_cast<std::size_t>(h),
                           static_cast<std::size_t>(lq),
                           static_cast<std::size_t>(lk)};
        if (h == 1) {
            m.weights_shape.erase(m.weights_shape.begin() + 1);
        }
        if (!p.batched) {
            m.weights_shape.erase(m.weights_shape.begin());
        }
    }
    if (p.exact) {
        // precision f64: each input is held in float32 and float64 (4 + 8 bytes a value);
        // everything computed is float64, and its results keep both too (and longer text).
        m.inputs = sat_mul(3, m.inputs);
        m.intermediates = sat_mul(2, m.intermediates);
        m.output = sat_mul(2, m.output);
        m.weights = sat_mul(2, m.weights);
    }
    // Kernel scratch, already in the problem's precision: what the core says the kernel
    // attend() picks allocates (packed Kᵀ, per-thread score blocks).
    const Shape qs{b, h, lq, d};
    const Shape ks{bk, hkv, lk, d};
    const Shape vs{bk, hkv, lk, dv};
    const SolveOptions options{.want_weights = want_weights, .threads = threads};
    const Workspace workspace =
        p.exact ? attend_workspace(qs, ks, vs, attention_spec<double>(p, options))
                : attend_workspace(qs, ks, vs, attention_spec<float>(p, options));
    m.intermediates = sat_add(m.intermediates, workspace.total(static_cast<unsigned>(n_threads)));
    m.total = sat_add(sat_add(m.inputs, m.intermediates), sat_add(m.output, m.weights));
    return m;
}

void check_memory(const Problem& p, bool want_weights, std::uint64_t max_bytes, unsigned threads) {
    const MemoryEstimate m = estimate_memory(p, want_weights, threads);
    if (m.total <= max_bytes) {
        return;
    }
    std::string message = "--max-memory: this problem needs about " + format_size(m.total);
    if (want_weights && m.weights > 0) {
        message +=
            " (the weights " + dims_text(m.weights_shape) + " take " + format_size(m.weights) + ")";
    } else {
        message += " (inputs " + format_size(m.inputs) + ", intermediates " +
                   format_size(m.intermediates) + ", output " + format_size(m.output) + ")";
    }
    message += ", more than the limit of " + format_size(max_bytes);
    if (want_weights) {
        const MemoryEstimate lean = estimate_memory(p, false, threads);
        if (lean.total <= max_bytes) {
            message += "; without weights (--no-weights) it needs " + format_size(lean.total) +
                       ", which fits";
        }
    }
    throw InputError(message);
}

void check_finite(const Problem& p) {
    for (const ProblemSource& s : p.sources) {
        if (!s.first_nonfinite) {
            continue;
        }
        std::string where = s.field;
        if (!s.path.empty()) {
            where += ": " + message_text(s.path.string());
        }
        throw InputError(where + ": non-finite value " + format_float(s.nonfinite_value) + " at " +
                         shape_string(unravel(*s.first_nonfinite, s.shape)) + " (--check-finite)");
    }
}

std::vector<NamedPath> input_paths(const Problem& p) {
    std::vector<NamedPath> out;
    for (const ProblemSource& s : p.sources) {
        if (!s.path.empty()) {
            out.push_back({s.field, s.path});
        }
    }
    return out;
}

void check_output_paths(const std::vector<NamedPath>& inputs,
                        const std::vector<NamedPath>& outputs) {
    auto skipped = [](const NamedPath& o) {
        return o.path.empty() || o.path == "-" || is_special(o.path);
    };
    for (std::size_t k = 0; k < outputs.size(); ++k) {
        const NamedPath& o = outputs[k];
        if (skipped(o)) {
            continue;
        }
        for (const NamedPath& in : inputs) {
            if (!in.path.empty() && in.path != "-" && same_file(o.path, in.path)) {
                throw InputError(o.name + ": " + message_text(o.path.string()) +
                                 " is also the input of " + in.name +
                                 "; refusing to overwrite an input");
            }
        }
        for (std::size_t j = 0; j < k; ++j) {
            if (!skipped(outputs[j]) && same_file(o.path, outputs[j].path)) {
                throw InputError(o.name + ": " + message_text(o.path.string()) +
                                 " is also the file of " + outputs[j].name);
            }
        }
    }
}

} // namespace attn::io
