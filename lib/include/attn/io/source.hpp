// Where one array of a problem came from: a file (or a JSON literal), its shape and its
// first non-finite value. The readers fill it in as they read; --check-finite and the
// output-path check read it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attn::io {

/// One array (or params file) a problem was decoded from: for --check-finite, the
/// output-path check and messages in the user's own terms.
struct ProblemSource {
    std::string field;              ///< "query", "mask", "params.w_q", "params" (a params file)
    std::filesystem::path path;     ///< the file read (resolved against base_dir); empty
                                    ///< for a JSON literal
    std::vector<std::size_t> shape; ///< as given, in the user's rank; empty for a params file
    /// The first value --check-finite refuses, as a C-order flat index: NaN or ±inf in
    /// numeric arrays, NaN or +inf in bias (-inf blocks there); never set for masks.
    std::optional<std::size_t> first_nonfinite;
    float nonfinite_value = 0.0f;
};

} // namespace attn::io
