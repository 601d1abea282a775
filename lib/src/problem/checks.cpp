// The memory estimate of a decoded problem and its check against the limit, --check-finite,
// and the files a problem was read from. Pure bookkeeping over shapes: nothing here
// allocates in proportion to the problem.
#include "attn/problem/checks.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/kernels.hpp"
#include "attn/problem/plan.hpp"
#include "attn/problem/solve.hpp"

#include <algorithm>
#include <thread>

namespace attn::problem {

using io::format_size;

namespace {

/// Bytes of an xtensor container of float32 or uint8.
template <class E> std::uint64_t bytes_of(const E& e) {
    std::uint64_t n = sizeof(typename E::value_type);
    for (const std::size_t d : e.shape()) {
        n = io::saturating_mul(n, d);
    }
    return n;
}

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

} // namespace

MemoryEstimate
estimate_memory(const Problem& p, bool want_weights, unsigned threads, bool weights_streamed) {
    constexpr std::uint64_t f32 = sizeof(float);
    constexpr std::uint64_t encoded = 12; // bytes per value of the result: copy + JSON text
    const std::uint64_t n_threads =
        threads != 0 ? threads : std::max<std::uint64_t>(1, std::thread::hardware_concurrency());

    MemoryEstimate m;
    // Inputs: everything the decoded problem holds.
    m.inputs = io::saturating_add(m.inputs, bytes_of(p.q4));
    m.inputs = io::saturating_add(m.inputs, bytes_of(p.k4));
    m.inputs = io::saturating_add(m.inputs, bytes_of(p.v4));
    m.inputs = io::saturating_add(m.inputs, bytes_of(p.query_src));
    m.inputs = io::saturating_add(m.inputs, bytes_of(p.key_src));
    m.inputs = io::saturating_add(m.inputs, bytes_of(p.value_src));
    if (p.mask) {
        m.inputs = io::saturating_add(m.inputs, bytes_of(*p.mask));
    }
    if (p.bias) {
        m.inputs = io::saturating_add(m.inputs, bytes_of(*p.bias));
    }
    if (p.key_padding) {
        m.inputs = io::saturating_add(m.inputs, bytes_of(*p.key_padding));
    }
    if (p.projections) {
        const Projections& w = *p.projections;
        for (const auto* mat : {&w.w_q, &w.w_k, &w.w_v, &w.w_o}) {
            if (*mat) {
                m.inputs = io::saturating_add(m.inputs, bytes_of(**mat));
            }
        }
        for (const auto* vec : {&w.b_q, &w.b_k, &w.b_v, &w.b_o}) {
            if (*vec) {
                m.inputs = io::saturating_add(m.inputs, bytes_of(**vec));
            }
        }
    }

    // The attention problem in rank 4: [B, H, Lq, D] x [Bk, Hkv, Lk, D] -> [B, H, Lq, Dv].
    const ProblemPlan plan = plan_problem(p);
    const std::uint64_t b = plan.b;
    const std::uint64_t h = plan.h;
    const std::uint64_t hkv = plan.hkv;
    const std::uint64_t bk = plan.bk;
    const std::uint64_t lq = plan.lq;
    const std::uint64_t lk = plan.lk;
    const std::uint64_t d = plan.d;
    const std::uint64_t dv = plan.dv;
    const std::uint64_t out_features = plan.eo; // of the final output row
    if (!p.direct_heads) {
        // Projected (or copied) Q, K, V, then their head-split copies.
        const std::uint64_t qkv =
            io::saturating_add(io::saturating_product({b, lq, plan.pq}),
                               io::saturating_add(io::saturating_product({bk, lk, plan.pk}),
                                                  io::saturating_product({bk, lk, plan.pv})));
        m.intermediates = io::saturating_add(m.intermediates, io::saturating_mul(2 * f32, qkv));
        // Merged heads, then the output projection.
        const std::uint64_t merged = io::saturating_product({b, lq, h, dv});
        m.output = io::saturating_add(m.output, io::saturating_mul(f32, merged));
        if (p.projections && p.projections->w_o) {
            m.output =
                io::saturating_add(m.output, io::saturating_product({f32, b, lq, out_features}));
        }
    }
    // The attention output [B, H, Lq, Dv] and the final output with its copy and encoding.
    m.output = io::saturating_add(m.output, io::saturating_product({f32, b, h, lq, dv}));
    m.output = io::saturating_add(m.output, io::saturating_product({encoded, b, lq, out_features}));
    if (want_weights && !weights_streamed) {
        // The weights tensor, then the result's copy and its encoding: the selected heads
        // and rows only ("select_heads", "query_rows": picked as the kernel makes them),
        // but all of one layer's for rollout, which fuses every head.
        const std::uint64_t kept =
            io::saturating_product({b,
                                    p.select_heads.empty() ? h : p.select_heads.size(),
                                    p.query_rows ? (*p.query_rows)[1] - (*p.query_rows)[0] : lq,
                                    lk});
        m.weights = io::saturating_mul(f32 + encoded, kept);
        m.weights_shape = plan.weights;
        if (p.return_rollout && kept != io::saturating_product({b, h, lq, lk})) {
            m.intermediates =
                io::saturating_add(m.intermediates, io::saturating_product({f32, b, h, lq, lk}));
        }
    }
    if (p.precision == Precision::f64) {
        // precision f64: each input is held in float32 and float64 (4 + 8 bytes a value);
        // everything computed is float64, and its results keep both too (and longer text).
        m.inputs = io::saturating_mul(3, m.inputs);
        m.intermediates = io::saturating_mul(2, m.intermediates);
        m.output = io::saturating_mul(2, m.output);
        m.weights = io::saturating_mul(2, m.weights);
    }
    // Kernel scratch, already in the problem's precision: what the core says the kernel
    // attend() picks allocates (packed Kᵀ, per-thread score blocks).
    const Shape qs{b, h, lq, d};
    const Shape ks{bk, hkv, lk, d};
    const Shape vs{bk, hkv, lk, dv};
    // Streamed weights: the kernel writes each block of rows to the destination from its
    // per-thread scratch (which attend_workspace counts when the spec has a destination).
    const SolveOptions options{.want_weights = want_weights, .threads = threads};
    const auto workspace_in = [&]<class T>(BasicAttentionSpec<T> spec) {
        const WeightsDestination<T> sink{};
        if (weights_streamed) {
            spec.weights_to = &sink;
        }
        return attend_workspace(qs, ks, vs, spec);
    };
    const Workspace workspace = p.precision == Precision::f64
                                    ? workspace_in(attention_spec<double>(p, options))
                                    : workspace_in(attention_spec<float>(p, options));
    m.intermediates =
        io::saturating_add(m.intermediates, workspace.total(static_cast<unsigned>(n_threads)));
    m.total = io::saturating_add(io::saturating_add(m.inputs, m.intermediates),
                                 io::saturating_add(m.output, m.weights));
    return m;
}

void check_memory(const Problem& p,
                  bool want_weights,
                  std::uint64_t max_bytes,
                  unsigned threads,
                  bool weights_streamed) {
    const MemoryEstimate m = estimate_memory(p, want_weights, threads, weights_streamed);
    if (m.total <= max_bytes) {
        return;
    }
    std::string message =
        option_name("max_memory") + ": this problem needs about " + format_size(m.total);
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
            message += "; without weights (" + option_name("no_weights") + ") it needs " +
                       format_size(lean.total) + ", which fits";
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
            where += ": " + io::message_text(s.path.string());
        }
        throw InputError(where + ": non-finite value " + io::format_float(s.nonfinite_value) +
                         " at " + shape_string(unravel(*s.first_nonfinite, s.shape)) + " (" +
                         option_name("check_finite") + ")");
    }
}

std::vector<io::NamedPath> input_paths(const Problem& p) {
    std::vector<io::NamedPath> out;
    for (const ProblemSource& s : p.sources) {
        if (!s.path.empty()) {
            out.push_back({s.field, s.path});
        }
    }
    return out;
}

} // namespace attn::problem
