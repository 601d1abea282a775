// A whole model's memory estimate, checked before the forward pass allocates anything:
// the embedding rows in use, one layer's weights (as stored where the products read them in
// place), one layer's activations and attention, and every result kept (the selected
// layers' arrays, the hidden states). Shapes and stored types only, nothing read.
#include "attn/error.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/weights.hpp"
#include "attn/parallel.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/model_run.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace attn::problem {

namespace {

using io::saturating_add;
using io::saturating_mul;
using io::saturating_product;

std::uint64_t elements(const model::TensorInfo& e) {
    std::uint64_t n = 1;
    for (const std::size_t d : e.shape) {
        n = saturating_mul(n, d);
    }
    return n;
}

/// The bytes a run holds of the tensors whose names start with `prefix`, and the largest dim
/// among them (the MLP's width, for the activations). A matrix a float32 run multiplies where
/// the file maps it (`in_place`, model::multiplied_in_place) costs its stored bytes (the
/// mapping's pages it touches); every other tensor `per_value` bytes a value (read as float32,
/// held in T, fused ones split into copies). Of a mixture's experts (names under `experts`,
/// when set) only expert 0's count: the block holds one routed expert at a time.
std::pair<std::uint64_t, std::uint64_t> tensors_under(const model::ModelFolder& f,
                                                      const std::string& prefix,
                                                      const std::string& experts,
                                                      bool in_place,
                                                      std::uint64_t per_value) {
    std::uint64_t bytes = 0;
    std::uint64_t widest = 0;
    for (const std::string& name : f.names()) {
        if (name.compare(0, prefix.size(), prefix) != 0) {
            continue;
        }
        if (!experts.empty() && name.compare(0, experts.size(), experts) == 0 &&
            name.compare(experts.size(), 2, "0.") != 0) {
            continue;
        }
        if (const model::TensorInfo* e = f.find(name)) {
            const std::optional<model::StoredTensor> st =
                in_place ? f.stored(name) : std::optional<model::StoredTensor>();
            bytes = saturating_add(bytes,
                                   st && model::multiplied_in_place(*st, false)
                                       ? st->bytes.size()
                                       : saturating_mul(elements(*e), per_value));
            for (const std::size_t d : e->shape) {
                widest = std::max<std::uint64_t>(widest, d);
            }
        }
    }
    return {bytes, widest};
}

std::uint64_t
table_values(const model::ModelFolder& f, const model::ModelSpec& s, const std::string& n) {
    const model::TensorInfo* e = n.empty() ? nullptr : f.find(s.root + n);
    return e == nullptr ? 0 : elements(*e);
}

} // namespace

ModelMemory estimate_model_memory(const ModelRun& run, const SolveOptions& options) {
    const model::ModelSpec& s = run.spec;
    const Problem& p = run.stack.first;
    const bool f64 = p.precision == Precision::f64;
    const std::uint64_t t = f64 ? 8 : 4;     // a value computed with
    const std::uint64_t kept = f64 ? 12 : 4; // a result value: float32 (+ float64)
    const std::uint64_t encoded = options.results_text ? 12 : 4; // its copy (and text) out
    const std::uint64_t rows = run.ids.size();                   // B · L
    const std::uint64_t n = run.stack.layers.size();
    ModelMemory m;

    // The tables (read as float32, then held in T): of the token table only the rows of
    // the distinct ids (model::load_model_embeddings); one layer's weights (tensors_under).
    const model::Architecture& a = s.arch;
    std::vector<std::int64_t> ids(run.ids.begin(), run.ids.end());
    std::sort(ids.begin(), ids.end());
    const auto distinct =
        static_cast<std::uint64_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
    const std::uint64_t tables =
        saturating_add(saturating_mul(distinct, s.hidden),
                       saturating_add(table_values(*run.folder, s, a.position_embedding),
                                      table_values(*run.folder, s, a.token_type_embedding)));
    m.embeddings = saturating_mul(tables, 4 + t);
    // The largest layer: a mixture's layers may differ (Qwen2-MoE's dense mlp_only_layers).
    std::uint64_t widest = 0;
    for (std::size_t l = 0; l < s.layers; ++l) {
        const std::string prefix = model::layer_prefix(s, l);
        const std::string experts =
            a.router.empty() ? std::string() : prefix + a.expert.substr(0, a.expert.find("{}"));
        const auto [bytes, wide] = tensors_under(*run.folder, prefix, experts, !f64, 4 + 2 * t);
        m.layer_weights = std::max(m.layer_weights, bytes);
        widest = std::max(widest, wide);
    }

    // One layer's activations per token: the residual stream and its norms and sums (8 E),
    // Q, K, V and their head-split (and rotated) copies, merged heads, the MLP's up, gate
    // and activated rows.
    const std::uint64_t qkv = (s.heads + 2 * s.kv_heads) * s.head_dim;
    const std::uint64_t per_token = saturating_add(
        saturating_add(saturating_mul(8, s.hidden), saturating_mul(3, qkv)),
        saturating_add(saturating_mul(2, s.heads * s.head_dim), saturating_mul(3, widest)));
    m.activations = saturating_product({t, rows, per_token});
    if (p.activations != model::Activations::f32) {
        const std::uint64_t panel_threads = attn::detail::resolve_threads(options.threads, 64);
        // The integer products' rounded inputs (a byte a value, scales and block sums: at
        // most 1.25 bytes) and each thread's packed panel of 64 weight rows: 2 bytes a value
        // of the widest input. The BF16 pair products': the rounded inputs as BF16 pairs,
        // or as float32 where the CPU lacks AVX512_BF16 (4 bytes a value at most), and
        // each thread's packed chunk of 64 rows (at most 64 x 1024 float32, under 4 bytes
        // a value of the widest input).
        const std::uint64_t value_bytes = p.activations == model::Activations::bf16 ? 4 : 2;
        m.activations = saturating_add(
            m.activations,
            saturating_product({value_bytes, saturating_add(rows, 64 * panel_threads), widest}));
    }

    // One layer's attention (its weights when kept, the kernel's scratch) from the shared
    // problem's estimate; every kept layer's results in the stack, appended as each layer
    // finishes (run_in's StackedLayers): held once, with one layer's own copy while it is
    // appended, or with every layer's while they wait for their turn in a selection not in
    // ascending order.
    // "rollout" makes each layer's weights whole (one layer at a time) and holds R and one
    // Â (8-byte values); "head_stats" 7 values and flags per query row and head (63 bytes).
    const MemoryEstimate one = estimate_memory(p,
                                               options.want_weights || p.return_rollout,
                                               options.threads,
                                               options.weights_to != nullptr);
    const std::uint64_t weights_values = options.want_weights ? one.weights / (f64 ? 32 : 16) : 0;
    m.attention = saturating_add(one.intermediates, one.weights);
    if (p.return_rollout) {
        m.attention = saturating_add(m.attention,
                                     saturating_product({8, run.ids.shape()[0] + 1, p.lq, p.lq}));
    }
    if (p.return_head_stats) {
        m.attention = saturating_add(m.attention, saturating_product({63, rows, s.heads}));
    }
    const std::uint64_t diag_values =
        saturating_product({rows, s.heads, 3 + 2 * static_cast<std::uint64_t>(p.top_k)});
    const std::uint64_t layer_values =
        saturating_add(saturating_add(weights_values, diag_values), saturating_mul(rows, s.hidden));
    const std::vector<std::size_t>& chosen = run.stack.layers;
    const bool in_order = std::is_sorted(chosen.begin(), chosen.end());
    m.results = saturating_add(saturating_product({kept + encoded, n, layer_values}),
                               saturating_product({kept, in_order ? 1 : n, layer_values}));
    if (run.want_hidden_states) { // each entry appended as computed
        m.results = saturating_add(
            m.results, saturating_product({kept + encoded, s.layers + 1, rows, s.hidden}));
    }
    m.total = saturating_add(saturating_add(saturating_add(m.embeddings, m.layer_weights),
                                            saturating_add(m.activations, m.attention)),
                             m.results);
    return m;
}

std::string memory_text(const ModelMemory& m, std::size_t layers) {
    return io::format_size(m.total) + " (embeddings " + io::format_size(m.embeddings) +
           ", one layer's weights " + io::format_size(m.layer_weights) + ", activations " +
           io::format_size(saturating_add(m.activations, m.attention)) + ", results of " +
           std::to_string(layers) + " layers " + io::format_size(m.results) + ")";
}

void check_model_memory(const ModelRun& run, const SolveOptions& options) {
    const std::uint64_t limit = options.max_memory != 0 ? options.max_memory : io::memory_limit();
    const ModelMemory m = estimate_model_memory(run, options);
    if (m.total <= limit) {
        return;
    }
    std::string message = option_name("max_memory") + ": this model run needs about " +
                          memory_text(m, run.stack.layers.size()) + ", more than the limit of " +
                          io::format_size(limit);
    if (options.want_weights) {
        SolveOptions lean = options;
        lean.want_weights = false;
        const ModelMemory without = estimate_model_memory(run, lean);
        if (without.total <= limit) {
            message += "; without weights (" + option_name("no_weights") + ") it needs " +
                       io::format_size(without.total) + ", which fits";
        }
    }
    throw InputError(message);
}

bool BlockCache::fits(const ModelRun& run, std::uint64_t budget) {
    SolveOptions f32;
    const ModelMemory m = estimate_model_memory(run, f32);
    return run.stack.first.precision == Precision::f32 &&
           saturating_mul(m.layer_weights, run.spec.layers) <= budget;
}

} // namespace attn::problem
