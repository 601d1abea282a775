// The memory limit and the memory estimate of a decoded problem, --check-finite, and the
// refusal of outputs that would overwrite an input. Pure bookkeeping over shapes and
// paths: nothing here allocates in proportion to the problem or touches an output file.
#include "attn/io/limits.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"

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
#include <unistd.h>

namespace attn::io {

namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = kib * 1024;
constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

std::uint64_t physical_memory() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) {
        return 0;
    }
    return saturating_mul(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page_size));
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
