// Rotary position embeddings (RoPE, Su et al. 2021) applied in place to per-head
// tensors [B, H, L, D], the way Hugging Face (`rotate_half`, "neox") and GPT-J /
// llama.cpp (interleaved pairs) apply them, with linear and llama-3 frequency scaling.
// Inverse frequencies, angles, cos/sin and the rotation itself are computed in double
// and rounded once to the tensor's type. Reading configs and JSON is attn/io's job.
#pragma once

#include "attn/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace attn {

/// Which features form a rotated pair (Dr = the rotary dim).
enum class RopeStyle {
    neox,        ///< Hugging Face rotate_half: (x[i], x[i + Dr/2]), i < Dr/2
    interleaved, ///< GPT-J rotate_every_two, llama.cpp: (x[2i], x[2i + 1])
};

/// Frequency scaling (Hugging Face `rope_scaling`): none ("default"), "linear" (every
/// inverse frequency / factor, i.e. positions / factor) or "llama3"
/// (_compute_llama3_parameters: low frequencies / factor, high ones kept, a smooth
/// interpolation between).
enum class RopeScalingType { none, linear, llama3 };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::none;
    double factor = 1.0;                              ///< linear, llama3
    double low_freq_factor = 1.0;                     ///< llama3
    double high_freq_factor = 4.0;                    ///< llama3
    double original_max_position_embeddings = 8192.0; ///< llama3
};

/// One model's rotation. It holds no tensor; the ones it makes, for heads of dim D with
/// Dr = rope_dim() rotated features:
///   inverse frequencies  [Dr/2]  (rope_inverse_frequencies)
///   rotated              x [B, H, L, D]: features 0 … Dr−1 rotate, Dr … D−1 stay
struct RopeSpec {
    double theta = 10000.0; ///< the base (`rope_theta`)
    RopeStyle style = RopeStyle::neox;
    std::size_t dim = 0; ///< rotary dim Dr (even; the first Dr features rotate); 0: the head dim
    RopeScaling scaling{};
};

/// Positions of the rows of a [B, H, L, D] tensor: L values shared by every batch row, or
/// B·L values (row-major [B, L]) for per-sequence positions (packed or left-padded
/// batches, as Hugging Face's position_ids [B, L]). For q [B, H, Lq, D], k [Bk, Hkv, Lk, D]:
///   query  [Lq] or [B·Lq]
///   key    [Lk] or [Bk·Lk]
struct RopePositions {
    std::vector<std::int64_t> query;
    std::vector<std::int64_t> key;
};

/// The contract's default positions: keys 0 … Lk−1, queries offset … offset+Lq−1 where
/// offset (query 0's position) defaults to Lk − Lq (a KV cache: the queries are the last
/// Lq positions; 0 when Lq = Lk). A negative offset is allowed (rotations are defined for
/// any integer position).
RopePositions
rope_positions(std::size_t lq, std::size_t lk, std::optional<std::int64_t> offset = {});

/// Checks a spec against the head dim: theta finite and > 0; Dr even, > 0 and at most
/// the head dim; scaling factors finite and > 0; llama3's high_freq_factor >
/// low_freq_factor. Throws InputError naming the field ("rope.dim: ...").
void check_rope(const RopeSpec& spec, std::size_t head_dim);

/// The rotary dim a spec gives for a head dim (spec.dim, or head_dim when 0).
std::size_t rope_dim(const RopeSpec& spec, std::size_t head_dim);

/// The inverse frequencies [Dr/2]: 1 / theta^(2i/Dr), then scaled. Double precision.
std::vector<double> rope_inverse_frequencies(const RopeSpec& spec, std::size_t rotary_dim);

/// Rotates x [B, H, L, D] in place: row (b, h, l) by angles pos·inv_freq, pos =
/// positions[l] (L values) or positions[b·L + l] (B·L values). Features Dr … D−1 are
/// left as they are. Throws InputError (check_rope, or "rope.positions: expected L or
/// B·L positions, got N", with `what` naming the list).
void apply_rope(Tensor& x,
                const RopeSpec& spec,
                std::span<const std::int64_t> positions,
                const char* what = "rope.positions");
void apply_rope(BasicTensor<double>& x,
                const RopeSpec& spec,
                std::span<const std::int64_t> positions,
                const char* what = "rope.positions");

/// Rotates queries q [B, H, Lq, D] and keys k [Bk, Hkv, Lk, D] in place at their
/// positions (positions.query, positions.key). Empty position lists take
/// rope_positions(Lq, Lk)'s defaults. Rows in fixed chunks on `threads` threads (0: every
/// hardware thread; the same values for any count). Throws InputError.
void apply_rope(Tensor& q,
                Tensor& k,
                const RopeSpec& spec,
                const RopePositions& positions,
                unsigned threads = 1);
void apply_rope(BasicTensor<double>& q,
                BasicTensor<double>& k,
                const RopeSpec& spec,
                const RopePositions& positions,
                unsigned threads = 1);

} // namespace attn
