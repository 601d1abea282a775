// Checks that run before the big allocations and before any output is touched: the memory
// limit (--max-memory) and what a decoded problem will need, non-finite inputs
// (--check-finite), and output paths that would overwrite an input. Everything here
// throws InputError (exit 2); nothing here decides exit codes or reads flags.
#pragma once

#include "attn/io/problem.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attn::io {

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
std::uint64_t parse_size(std::string_view text, std::string_view name = "--max-memory");

/// "0 B", "512 B", "1.5 KiB", "37.3 GiB" (one decimal from KiB up).
std::string format_size(std::uint64_t bytes);

/// What solving a decoded problem will hold in memory at its peak, by part, in bytes.
/// Arithmetic saturates at UINT64_MAX: hostile shapes give "enormous", never a wrap.
struct MemoryEstimate {
    std::uint64_t inputs = 0;        ///< the decoded arrays: sources or Q/K/V, masks, bias, weights
    std::uint64_t intermediates = 0; ///< projected Q/K/V, head-split copies, kernel scratch
    std::uint64_t output = 0;        ///< attention output, merged heads, output projection,
                                     ///< the result copy and its encoding
    std::uint64_t weights = 0;       ///< [B, H, Lq, Lk] weights, their result copy and their
                                     ///< encoding; 0 without weights
    std::uint64_t total = 0;         ///< the sum
    std::vector<std::size_t> weights_shape; ///< in the contract's form (B, H dropped as solve does)
};

/// Counts the float32 buffers solve() allocates for `problem` (see MemoryEstimate), with the
/// encoded result estimated at 12 bytes per value (JSON text; NPY needs 4). `threads` as in
/// SolveOptions (0: all cores) sizes the per-thread kernel scratch.
MemoryEstimate estimate_memory(const Problem& problem, bool want_weights, unsigned threads = 0);

/// Throws InputError when estimate_memory() exceeds `max_bytes`, naming both figures and,
/// when the weights are what does not fit, suggesting --no-weights:
///   "--max-memory: this problem needs about 74.5 GiB (the weights [4, 100000, 100000]
///    take 74.5 GiB), more than the limit of 11.7 GiB; without weights (--no-weights) it
///    needs 6.1 MiB, which fits"
void check_memory(const Problem& problem,
                  bool want_weights,
                  std::uint64_t max_bytes,
                  unsigned threads = 0);

/// --check-finite: throws InputError for the first non-finite value in the problem's numeric
/// arrays (query, key, value, input, context, params weights and biases; in bias only NaN
/// and +inf, since -inf is how bias blocks), in field order, naming the field, its file and
/// the index in the array's own rank:
///   "key: k.npy: non-finite value nan at [1, 3] (--check-finite)"
/// Masks are not checked (any nonzero value, NaN included, means "may attend").
void check_finite(const Problem& problem);

/// A path the command line reads or writes, and the name to show for it.
struct NamedPath {
    std::string name; ///< "query", "PROBLEM", "--output", ...
    std::filesystem::path path;
};

/// The files `problem` was read from (its array fields and params files), named by field.
std::vector<NamedPath> input_paths(const Problem& problem);

/// Refuses an output that is one of the inputs, or the same file as another output:
///   "--output: q.npy is also the input of query; refusing to overwrite an input"
///   "--weights: o.npy is also the file of --output"
/// Two paths are the same file when std::filesystem::equivalent says so (both exist:
/// hard links and symlinks count), else when their weakly_canonical forms are equal.
/// Outputs that are empty or "-" (stdout) are skipped. Throws InputError.
void check_output_paths(const std::vector<NamedPath>& inputs,
                        const std::vector<NamedPath>& outputs);

} // namespace attn::io
