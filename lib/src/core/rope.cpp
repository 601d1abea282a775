// Rotary position embeddings: the inverse frequencies (default, linear, llama3), a
// cos/sin table per distinct position row, and the in-place rotation of each pair.
// Everything is computed in double and rounded once to the tensor's type; Hugging Face
// computes the angles in float32 (LlamaRotaryEmbedding.forward), so against a float32
// HF run expect differences of about |position|·2^-24 radians at long positions.
// Legend: B batch, H heads, L rows (positions), D head dim, Dr rotary dim, P = Dr/2 pairs.
#include "attn/rope.hpp"

#include "attn/error.hpp"
#include "attn/parallel.hpp"

#include <cmath>
#include <numbers>
#include <string>

namespace attn {

namespace {

std::string number(double x) {
    std::string s = std::to_string(x);
    while (s.size() > 1 && s.back() == '0') {
        s.pop_back();
    }
    if (!s.empty() && s.back() == '.') {
        s.pop_back();
    }
    return s;
}

void check_positive(double x, const char* field) {
    if (!std::isfinite(x) || x <= 0.0) {
        throw InputError(std::string(field) + ": expected a finite number > 0, got " + number(x));
    }
}

template <class T>
void rotate(xt::xtensor<T, 4>& x,
            const RopeSpec& spec,
            std::span<const std::int64_t> positions,
            const char* what,
            unsigned threads) {
    const std::size_t B = x.shape(0), H = x.shape(1), L = x.shape(2), D = x.shape(3);
    check_rope(spec, D);
    if (positions.size() != L && positions.size() != B * L) {
        throw InputError(std::string(what) + ": expected " + std::to_string(L) +
                         " positions (one per row) or " + std::to_string(B * L) +
                         " ([batch, rows]), got " + std::to_string(positions.size()));
    }
    const std::size_t Dr = rope_dim(spec, D);
    const std::size_t P = Dr / 2;
    const std::vector<double> inv_freq = rope_inverse_frequencies(spec, Dr);

    // One cos/sin row per entry of `positions` (L or B·L rows).
    const std::size_t rows = positions.size();
    std::vector<double> cos_t(rows * P), sin_t(rows * P);
    detail::parallel_chunks(
        rows, detail::rows_per_chunk(P * 8), threads, [&](std::size_t r0, std::size_t r1) {
            for (std::size_t r = r0; r < r1; ++r) {
                const auto pos = static_cast<double>(positions[r]);
                for (std::size_t p = 0; p < P; ++p) {
                    const double angle = pos * inv_freq[p];
                    cos_t[r * P + p] = std::cos(angle);
                    sin_t[r * P + p] = std::sin(angle);
                }
            }
        });

    const bool per_batch = rows == B * L && rows != L;
    const std::size_t stride_a = spec.style == RopeStyle::neox ? 1 : 2; // index of pair p's first
    const std::size_t partner = spec.style == RopeStyle::neox ? P : 1;  // offset of its second
    T* data = x.data();
    // Rows (b, h, l) of [B, H, L, D] in fixed chunks.
    detail::parallel_chunks(
        B * H * L, detail::rows_per_chunk(D), threads, [&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) {
                const std::size_t l = i % L;
                const std::size_t b = i / (H * L);
                T* row = data + i * D;
                const std::size_t r = per_batch ? b * L + l : l;
                const double* c = cos_t.data() + r * P;
                const double* s = sin_t.data() + r * P;
                for (std::size_t p = 0; p < P; ++p) {
                    T& x1 = row[p * stride_a];
                    T& x2 = row[p * stride_a + partner];
                    const double a = static_cast<double>(x1);
                    const double e = static_cast<double>(x2);
                    x1 = static_cast<T>(a * c[p] - e * s[p]);
                    x2 = static_cast<T>(e * c[p] + a * s[p]);
                }
            }
        });
}

template <class T>
void rotate_pair(xt::xtensor<T, 4>& q,
                 xt::xtensor<T, 4>& k,
                 const RopeSpec& spec,
                 const RopePositions& positions,
                 unsigned threads) {
    if (q.shape(3) != k.shape(3)) {
        throw InputError::shape("rope: keys", {kAnyDim, kAnyDim, kAnyDim, q.shape(3)}, shape_of(k));
    }
    const RopePositions defaults = rope_positions(q.shape(2), k.shape(2));
    const auto& qp = positions.query.empty() ? defaults.query : positions.query;
    const auto& kp = positions.key.empty() ? defaults.key : positions.key;
    rotate(q, spec, qp, "rope.positions (queries)", threads);
    rotate(k, spec, kp, "rope.positions (keys)", threads);
}

} // namespace

RopePositions rope_positions(std::size_t lq, std::size_t lk, std::optional<std::int64_t> offset) {
    const std::int64_t first =
        offset ? *offset : static_cast<std::int64_t>(lk) - static_cast<std::int64_t>(lq);
    RopePositions p;
    p.query.resize(lq);
    p.key.resize(lk);
    for (std::size_t i = 0; i < lq; ++i) {
        p.query[i] = first + static_cast<std::int64_t>(i);
    }
    for (std::size_t j = 0; j < lk; ++j) {
        p.key[j] = static_cast<std::int64_t>(j);
    }
    return p;
}

std::size_t rope_dim(const RopeSpec& spec, std::size_t head_dim) {
    return spec.dim == 0 ? head_dim : spec.dim;
}

void check_rope(const RopeSpec& spec, std::size_t head_dim) {
    check_positive(spec.theta, "rope.theta");
    const std::size_t dr = rope_dim(spec, head_dim);
    if (dr == 0 || dr % 2 != 0 || dr > head_dim) {
        throw InputError("rope.dim: expected an even number from 2 to the head dim " +
                         std::to_string(head_dim) + ", got " + std::to_string(dr));
    }
    const RopeScaling& s = spec.scaling;
    if (s.type == RopeScalingType::none) {
        return;
    }
    check_positive(s.factor, "rope.scaling.factor");
    if (s.type == RopeScalingType::llama3) {
        check_positive(s.low_freq_factor, "rope.scaling.low_freq_factor");
        check_positive(s.high_freq_factor, "rope.scaling.high_freq_factor");
        check_positive(s.original_max_position_embeddings,
                       "rope.scaling.original_max_position_embeddings");
        if (s.high_freq_factor <= s.low_freq_factor) {
            throw InputError("rope.scaling.high_freq_factor: expected more than low_freq_factor " +
                             number(s.low_freq_factor) + ", got " + number(s.high_freq_factor));
        }
    }
}

std::vector<double> rope_inverse_frequencies(const RopeSpec& spec, std::size_t rotary_dim) {
    const std::size_t P = rotary_dim / 2;
    std::vector<double> inv(P);
    for (std::size_t i = 0; i < P; ++i) {
        inv[i] = 1.0 /
                 std::pow(spec.theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
    }
    const RopeScaling& s = spec.scaling;
    if (s.type == RopeScalingType::linear) {
        for (double& f : inv) {
            f /= s.factor;
        }
    } else if (s.type == RopeScalingType::llama3) {
        // Wavelengths shorter than original/high_freq_factor keep their frequency, longer
        // than original/low_freq_factor divide it by factor; between, a linear blend of the
        // two in original/wavelength.
        const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
        const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
        for (double& f : inv) {
            const double wavelen = 2.0 * std::numbers::pi / f;
            if (wavelen > low_wavelen) {
                f /= s.factor;
            } else if (wavelen >= high_wavelen) {
                const double smooth =
                    (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                    (s.high_freq_factor - s.low_freq_factor);
                f = (1.0 - smooth) * f / s.factor + smooth * f;
            }
        }
    }
    return inv;
}

void apply_rope(Tensor& x,
                const RopeSpec& spec,
                std::span<const std::int64_t> positions,
                const char* what) {
    rotate(x, spec, positions, what, 1);
}

void apply_rope(BasicTensor<double>& x,
                const RopeSpec& spec,
                std::span<const std::int64_t> positions,
                const char* what) {
    rotate(x, spec, positions, what, 1);
}

void apply_rope(
    Tensor& q, Tensor& k, const RopeSpec& spec, const RopePositions& positions, unsigned threads) {
    rotate_pair(q, k, spec, positions, threads);
}

void apply_rope(BasicTensor<double>& q,
                BasicTensor<double>& k,
                const RopeSpec& spec,
                const RopePositions& positions,
                unsigned threads) {
    rotate_pair(q, k, spec, positions, threads);
}

} // namespace attn
