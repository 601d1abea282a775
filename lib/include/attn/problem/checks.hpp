// Checks on a decoded problem before it is solved and before any output is touched: what
// it will need in memory (--max-memory), non-finite inputs (--check-finite), and the files
// it was read from (for the output-path check in attn/io/limits.hpp). Everything here
// throws InputError (exit 2); nothing here reads flags.
#pragma once

#include "attn/io/limits.hpp"
#include "attn/problem/problem.hpp"

#include <cstdint>
#include <vector>

namespace attn::problem {

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
/// SolveOptions (0: all cores) sizes the per-thread kernel scratch. `weights_streamed`: the
/// weights go to SolveOptions::weights_to as the kernel makes them (a --weights .npy file),
/// so they cost each thread's block of rows, not [B, H, Lq, Lk].
MemoryEstimate estimate_memory(const Problem& problem,
                               bool want_weights,
                               unsigned threads = 0,
                               bool weights_streamed = false);

/// Throws InputError when estimate_memory() exceeds `max_bytes`, naming both figures and,
/// when the weights are what does not fit, suggesting no_weights (options named by
/// option_name):
///   "max_memory: this problem needs about 74.5 GiB (the weights [4, 100000, 100000]
///    take 74.5 GiB), more than the limit of 11.7 GiB; without weights (no_weights) it
///    needs 6.1 MiB, which fits"
void check_memory(const Problem& problem,
                  bool want_weights,
                  std::uint64_t max_bytes,
                  unsigned threads = 0,
                  bool weights_streamed = false);

/// --check-finite: throws InputError for the first non-finite value in the problem's numeric
/// arrays (query, key, value, input, context, params weights and biases; in bias only NaN
/// and +inf, since -inf is how bias blocks), in field order, naming the field, its file and
/// the index in the array's own rank:
///   "key: k.npy: non-finite value nan at [1, 3] (--check-finite)"
/// Masks are not checked (any nonzero value, NaN included, means "may attend").
void check_finite(const Problem& problem);

/// The files `problem` was read from (its array fields and params files), named by field.
std::vector<io::NamedPath> input_paths(const Problem& problem);

} // namespace attn::problem
