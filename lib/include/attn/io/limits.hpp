// Checks that run before the big allocations and before any output is touched: the memory
// limit (--max-memory), sizes in its text form, and output paths that would overwrite an
// input. What a decoded problem needs: attn/problem/checks.hpp. Everything here throws
// InputError (exit 2); nothing here decides exit codes or reads flags.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

/// a * b, a + b and a product, saturating at UINT64_MAX: for sizes computed from hostile
/// shapes, which must give "enormous", never a wrap.
inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
    constexpr std::uint64_t max = static_cast<std::uint64_t>(-1);
    return a != 0 && b > max / a ? max : a * b;
}
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    constexpr std::uint64_t max = static_cast<std::uint64_t>(-1);
    return a > max - b ? max : a + b;
}
inline std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors) {
    std::uint64_t out = 1;
    for (const std::uint64_t f : factors) {
        out = saturating_mul(out, f);
    }
    return out;
}

/// No limit (parse_size("none")).
inline constexpr std::uint64_t unlimited_memory = static_cast<std::uint64_t>(-1);

/// The default --max-memory: half of physical memory (sysconf), or half of the cgroup's
/// memory.max when that is smaller, or the address-space limit (RLIMIT_AS) when that is
/// smaller still; never below 64 MiB.
std::uint64_t default_memory_limit();

/// The process-wide memory limit that the readers (read_file, read_array_file, parse_npy),
/// decode_problem (random init weights) and solve() respect. default_memory_limit() until
/// set_memory_limit() is called. Thread-safe.
std::uint64_t memory_limit();
void set_memory_limit(std::uint64_t bytes);

/// Parses a SIZE: "4G", "512M", "1.5GiB", "64k", "100000" (bytes), with K, M, G, T as
/// powers of 1024 (an optional "B" or "iB" after them; case-insensitive), "25%" (of
/// physical memory), or "none"/"unlimited" (unlimited_memory). Throws
/// InputError("NAME: expected a size such as 4G, 512M or 50%, got 'TEXT'").
std::uint64_t parse_size(std::string_view text, std::string_view name = "max_memory");

/// "0 B", "512 B", "1.5 KiB", "37.3 GiB" (one decimal from KiB up).
std::string format_size(std::uint64_t bytes);

/// A path the command line reads or writes, and the name to show for it.
struct NamedPath {
    std::string name; ///< "query", "PROBLEM", the CLI's output flag, ...
    std::filesystem::path path;
};

/// Refuses an output that is one of the inputs, or the same file as another output:
///   "NAME: q.npy is also the input of query; refusing to overwrite an input"
///   "NAME: o.npy is also the file of OTHER" (OTHER: the other output's name)
/// Two paths are the same file when std::filesystem::equivalent says so (both exist:
/// hard links and symlinks count), else when their weakly_canonical forms are equal.
/// Outputs that are empty or "-" (stdout) are skipped. Throws InputError.
void check_output_paths(const std::vector<NamedPath>& inputs,
                        const std::vector<NamedPath>& outputs);

} // namespace attn::io
