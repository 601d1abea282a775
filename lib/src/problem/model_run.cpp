// The whole model's forward pass: embeddings, every block (attn/block.hpp) with its weights
// read when it runs, the final norm; the selected layers' attention results stacked.
#include "attn/problem/model_run.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/model/hf_config.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/model/store.hpp"
#include "attn/model/weights.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/layer_analysis.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <type_traits>

namespace attn::problem {

namespace fs = std::filesystem;
using io::Array;
using nlohmann::json;

namespace {

/// Fields a model run computes itself: the config and the forward pass give them.
constexpr const char* kModelFields[] = {"input",
                                        "query",
                                        "key",
                                        "value",
                                        "context",
                                        "init",
                                        "rope",
                                        "norm",
                                        "hidden_states",
                                        "num_heads",
                                        "num_kv_heads",
                                        "variant"};

std::string params_file(const json& p) {
    if (p.is_string()) {
        return p.get<std::string>();
    }
    if (p.is_object() && p.contains("file") && p["file"].is_string()) {
        return p["file"].get<std::string>();
    }
    return {};
}

std::optional<std::string> params_text(const json& p, const char* key) {
    if (!p.is_object() || !p.contains(key) || p[key].is_null()) {
        return std::nullopt;
    }
    if (!p[key].is_string()) {
        throw InputError(std::string("params.") + key + ": expected a string, got " +
                         detail::type_name(p[key]));
    }
    return p[key].get<std::string>();
}

fs::path resolve(const std::string& file, const fs::path& base) {
    return fs::path(file).is_absolute() ? fs::path(file) : base / file;
}

TokenIds token_ids_of(const Array& ids) {
    if (ids.shape.size() != 1 && ids.shape.size() != 2) {
        throw InputError("token_ids: expected shape [L] or [B, L], got " + shape_string(ids.shape));
    }
    const std::size_t b = ids.shape.size() == 2 ? ids.shape[0] : 1;
    TokenIds t = TokenIds::from_shape({b, ids.shape.back()});
    if (t.size() == 0) {
        throw InputError("token_ids: no tokens (shape " + shape_string(ids.shape) + ")");
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
        const double v =
            ids.values64.empty() ? static_cast<double>(ids.values[i]) : ids.values64[i];
        if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15) {
            throw InputError("token_ids: value at index " + std::to_string(i) +
                             " is not an integer id");
        }
        t.data()[i] = static_cast<std::int64_t>(v);
    }
    return t;
}

/// RoBERTa's create_position_ids_from_input_ids: pad tokens at padding_idx, the others at
/// padding_idx + (their count of non-pad tokens so far, from 1).
std::vector<std::int64_t> roberta_positions(const TokenIds& ids, std::int64_t pad) {
    std::vector<std::int64_t> out(ids.size());
    const std::size_t l = ids.shape()[1];
    for (std::size_t b = 0; b < ids.shape()[0]; ++b) {
        std::int64_t count = 0;
        for (std::size_t i = 0; i < l; ++i) {
            const bool real = ids(b, i) != pad;
            count += real ? 1 : 0;
            out[b * l + i] = real ? pad + count : pad;
        }
    }
    return out;
}

/// OPT's positions (OPTDecoder.forward): cumsum(attention_mask) · mask − 1 + offset, the
/// mask being the key padding (all ones without one): left padding shifts the real tokens
/// back to offset, offset + 1, ...; pad tokens sit at offset − 1.
std::vector<std::int64_t>
mask_positions(const TokenIds& ids, const std::optional<Mask>& padding, std::size_t offset) {
    const std::size_t b = ids.shape()[0];
    const std::size_t l = ids.shape()[1];
    std::vector<std::int64_t> out(b * l);
    for (std::size_t r = 0; r < b; ++r) {
        const std::size_t pr = padding && padding->shape()[0] > 1 ? r : 0;
        std::int64_t count = 0;
        for (std::size_t i = 0; i < l; ++i) {
            const bool real = !padding || (*padding)(pr, 0, 0, i) != 0;
            count += real ? 1 : 0;
            out[r * l + i] = (real ? count : 0) - 1 + static_cast<std::int64_t>(offset);
        }
    }
    return out;
}

/// The model's input: token (+ type) (+ positions) embeddings, normed, scaled.
/// `input`: the tables with the token rows in use and the ids renumbered to them.
template <class T>
BasicTensor3<T> embed_tokens(const ModelRun& run, model::ModelEmbeddings<T> input) {
    const model::Architecture& a = run.spec.arch;
    BasicEmbeddings<T>& tables = input.tables;
    if (a.positions != model::PositionScheme::roberta &&
        a.positions != model::PositionScheme::attention_mask) {
        BasicTensor3<T> x = embed(input.ids, tables, a.position_offset);
        if (a.embed_scale_sqrt) { // Gemma: the normalizer in the model's dtype
            const T scale = static_cast<T>(std::sqrt(static_cast<double>(run.spec.hidden)));
            for (T& v : x) {
                v = v * scale;
            }
        }
        return x;
    }
    // Per-token positions: the rows of the position table each token adds.
    const BasicMatrix<T> pos = std::move(*tables.position); // the tables are not copied
    const std::optional<BasicNorm<T>> norm = std::move(tables.norm);
    tables.position.reset();
    tables.norm.reset();
    BasicTensor3<T> x = embed(input.ids, tables, 0);
    const std::vector<std::int64_t> at =
        a.positions == model::PositionScheme::roberta
            ? roberta_positions(run.ids, run.spec.pad_token_id)
            : mask_positions(run.ids, run.stack.first.key_padding, a.position_offset);
    const std::size_t e = run.spec.hidden;
    for (std::size_t i = 0; i < at.size(); ++i) {
        if (at[i] < 0 || static_cast<std::size_t>(at[i]) >= pos.shape()[0]) {
            throw InputError("token_ids: position " + std::to_string(at[i]) + " is outside the " +
                             std::to_string(pos.shape()[0]) + " position embeddings");
        }
        for (std::size_t j = 0; j < e; ++j) {
            x.data()[i * e + j] = static_cast<T>(x.data()[i * e + j] + pos(at[i], j));
        }
    }
    return norm ? apply_norm(x, *norm) : x;
}

/// Layer l's own attention settings: the model's sliding window on its sliding layers
/// (when the tokens outrun it and no window was given), Gemma's scale and softcap (unless
/// given), GPT-2's scale_attn_weights and scale_attn_by_inverse_layer_idx.
template <class T>
void layer_attention(BasicAttentionSpec<T>& a,
                     const model::ModelSpec& spec,
                     std::size_t layer,
                     std::size_t tokens) {
    const bool slides = spec.sliding_layers.empty() || spec.sliding_layers[layer];
    if (spec.sliding_window && slides && tokens > *spec.sliding_window && !a.window.bounded()) {
        a.window.left = static_cast<std::int64_t>(*spec.sliding_window) - 1; // i - W < j <= i
    }
    if (spec.attention_scale && !a.scale) { // Gemma 2/3: query_pre_attn_scalar^-0.5
        a.scale = static_cast<T>(*spec.attention_scale);
    }
    if (spec.softcap && !a.softcap) {
        a.softcap = static_cast<T>(*spec.softcap);
    }
    if (spec.arch.alibi && a.alibi_slopes.empty()) { // BLOOM's build_alibi_tensor
        a.alibi_slopes = alibi_default_slopes<T>(spec.heads);
    }
    if (!spec.scale_attn_weights || spec.scale_attn_by_inverse_layer_idx) {
        double scale =
            spec.scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 1.0;
        if (a.scale) {
            scale = static_cast<double>(*a.scale);
        }
        if (spec.scale_attn_by_inverse_layer_idx) {
            scale /= static_cast<double>(layer + 1);
        }
        a.scale = static_cast<T>(scale);
    }
}

/// The selected layers' results, stacked as each layer finishes (in the selection's order:
/// a layer done before its turn waits for the ones given before it), so a run holds its
/// results once, not each layer's and the stack's copy of all of them at the end.
class StackedLayers {
  public:
    explicit StackedLayers(const std::vector<std::size_t>& selected) : selected_(selected) {}

    void add(std::size_t layer, Solution s) {
        waiting_.emplace(layer, std::move(s));
        while (next_ < selected_.size()) {
            const auto it = waiting_.find(selected_[next_]);
            if (it == waiting_.end()) {
                return;
            }
            append_solution(out_, output_, it->second, selected_.size());
            waiting_.erase(it);
            ++next_;
        }
    }

    /// Every selected layer's results (all were added).
    Solution take() {
        ATTN_ASSERT(next_ == selected_.size() && output_);
        out_.output = std::move(*output_);
        return std::move(out_);
    }

  private:
    const std::vector<std::size_t>& selected_;
    std::size_t next_ = 0;
    std::map<std::size_t, Solution> waiting_;
    Solution out_;
    std::optional<Array> output_;
};

/// hidden_states' entries [B, L, E] ([L, E] for unbatched ids), appended as computed.
template <class T> class StackedHidden {
  public:
    StackedHidden(bool batched, std::size_t count) : batched_(batched), count_(count) {}

    void add(const BasicTensor3<T>& h) {
        std::vector<std::size_t> shape(h.shape().begin(), h.shape().end());
        if (!batched_) {
            shape.erase(shape.begin());
        }
        append_layer(stack_, result_array(h, shape), count_);
    }

    std::optional<Array> take() { return std::move(stack_); }

  private:
    bool batched_;
    std::size_t count_;
    std::optional<Array> stack_;
};

template <class T> Solution run_in(const ModelRun& run, const SolveOptions& options) {
    const model::ModelSpec& spec = run.spec;
    const Problem& p = run.stack.first;
    const std::vector<std::size_t>& selected = run.stack.layers;
    const std::size_t last = run.want_hidden_states
                                 ? spec.layers - 1
                                 : *std::max_element(selected.begin(), selected.end());

    BasicLayerSpec<T> ls;
    ls.num_heads = spec.heads;
    ls.num_kv_heads = spec.kv_heads;
    ls.attention = attention_spec<T>(p, options); // a decoder's causal mask in it (decode)
    ls.rope = spec.rope ? &*spec.rope : nullptr;
    ls.qk_norm_scope = spec.arch.qk_norm_scope;
    const BlockSpec block{spec.residual, spec.activation};

    BasicTensor3<T> x =
        embed_tokens(run, model::load_model_embeddings<T>(*run.folder, spec, run.ids));
    std::optional<StackedHidden<T>> hidden;
    if (run.want_hidden_states) {
        hidden.emplace(p.batched, spec.layers + 1);
        hidden->add(x);
    }
    StackedLayers results(selected);
    std::optional<Rollout> rollout; // "rollout": the selected layers in ascending order
    if (p.return_rollout) {
        rollout.emplace(p.rollout_fusion, p.batch, p.lq);
    }
    for (std::size_t l = 0; l <= last; ++l) {
        const bool keep = std::find(selected.begin(), selected.end(), l) != selected.end();
        BasicLayerSpec<T> layer = ls;
        layer_attention(layer.attention, spec, l, run.ids.shape()[1]);
        if (spec.local_rope && !spec.sliding_layers.empty() && spec.sliding_layers[l]) {
            layer.rope = &*spec.local_rope; // Gemma 3's sliding layers
        }
        std::optional<WeightsDestination<T>> slot; // this layer's part of the weights file
        if constexpr (std::is_same_v<T, float>) {
            layer.attention.weights_to = nullptr;
            if (keep && options.weights_to != nullptr) {
                const auto index = static_cast<std::size_t>(
                    std::find(selected.begin(), selected.end(), l) - selected.begin());
                slot = weights_slot(*options.weights_to, index, selected.size());
                layer.attention.weights_to = &*slot;
            }
        }
        if (!keep) { // the attention output only
            layer.attention.want_weights = false;
            layer.attention.want_lse = layer.attention.want_entropy = false;
            layer.attention.want_argmax = false;
            layer.attention.top_k = 0;
        }
        // "head_stats", "rollout": from this layer's weights as its kernel makes them.
        std::optional<LayerAnalysis<T>> analysis;
        if (keep) {
            analysis.emplace(p, &run.ids, rollout ? &*rollout : nullptr);
            layer.attention = analysis->spec(layer.attention);
        }
        BasicBlockResult<T> r;
        std::shared_ptr<const BasicBlockWeights<float>> cached;
        if constexpr (std::is_same_v<T, float>) {
            if (options.block_cache != nullptr) {
                cached = options.block_cache->get(*run.folder, spec, l, p.activations);
                r = transformer_block(x, *cached, block, layer);
            }
        }
        if (!cached) {
            const BasicBlockWeights<T> w =
                model::load_block<T>(*run.folder, spec, l, false, p.activations);
            r = transformer_block(x, w, block, layer);
        } // the layer's weights go here, unless a cache keeps them
        x = std::move(r.hidden);
        if (keep) {
            analysis->after(r.attention.weights);
            Solution s = layer_solution(p, std::move(r.attention));
            analysis->into(s);
            results.add(l, std::move(s));
        }
        if (hidden && l + 1 < spec.layers) {
            hidden->add(x);
        }
        if (options.on_layer) {
            options.on_layer(l + 1, last + 1);
        }
    }
    Solution out = results.take();
    if (rollout) {
        out.rollout = rollout->result(p.batched, p.precision == Precision::f64);
    }
    Array ids;
    ids.shape = {run.ids.shape()[0], run.ids.shape()[1]};
    if (!p.batched) {
        ids.shape.erase(ids.shape.begin());
    }
    ids.values.assign(run.ids.begin(), run.ids.end());
    ids.dtype = "int64";
    out.token_ids = std::move(ids);
    if (hidden) {
        const std::optional<BasicNorm<T>> final_norm = model::load_final_norm<T>(*run.folder, spec);
        hidden->add(final_norm ? apply_norm(x, *final_norm) : x);
        out.hidden_states = hidden->take();
    }
    return out;
}

} // namespace

namespace {

/// A .safetensors file is its folder's model when the document runs token ids (or text)
/// through it and a config.json says what model it is (beside it, or "config"); a
/// "prefix", an input or hidden_states make it one layer's weights instead.
bool is_model_file(const json& doc, const fs::path& file, bool ids_given) {
    const auto has = [&doc](const char* field) {
        return doc.contains(field) && !doc[field].is_null();
    };
    const json& params = doc["params"];
    const bool config_given =
        params.is_object() && params.contains("config") && !params["config"].is_null();
    if (!model::is_safetensors_path(file.string()) || !io::is_regular_file(file) ||
        (params.is_object() && params.contains("prefix")) ||
        !(config_given || model::hf_config_beside(file))) {
        return false;
    }
    for (const char* one_layer : {"input", "query", "key", "value", "context", "hidden_states"}) {
        if (has(one_layer)) {
            return false;
        }
    }
    return ids_given || has("token_ids") || has("text");
}

} // namespace

bool is_model_run(const json& doc, const fs::path& base, bool ids_given) {
    if (!doc.is_object() || !doc.contains("params")) {
        return false;
    }
    const std::string file = params_file(doc["params"]);
    if (file.empty()) {
        return false;
    }
    const fs::path path = model::resolve_model_path(file, base);
    return model::is_model_folder(path) || is_model_file(doc, path, ids_given);
}

namespace {

/// "activations" q8_0 or q8 where it changes something: precision f32, layers holding a
/// type the choice reaches.
void check_activations(const ModelRun& run) {
    const model::Activations a = run.stack.first.activations;
    if (a != model::Activations::f32 && run.stack.first.precision == Precision::f64) {
        throw InputError(option_name("activations") + " " +
                         std::string(model::activations_name(a)) +
                         ": precision f64 multiplies every weight in float64 (expected "
                         "\"f32\" with it)");
    }
    model::check_activations(*run.folder, run.spec, run.stack.first.activations);
}

} // namespace

ModelRun decode_model_run(const json& doc_in, const fs::path& base, ArrayValues given) {
    json doc = doc_in;
    // "text": the model's own tokenizer's ids (a list: with its key padding); the tokens
    // stay with the run as labels.
    Problem text = detail::text_to_token_ids(doc, base);
    for (const char* field : kModelFields) {
        if ((doc.contains(field) && !doc[field].is_null()) || given.count(field) != 0) {
            throw InputError(std::string("params: a model folder computes ") + field +
                             " itself (from config.json and token_ids); drop " + field);
        }
    }
    const json& params = doc["params"];
    const fs::path dir = model::resolve_model_path(params_file(params), base);
    ModelRun run;
    try {
        run.folder = std::make_shared<const model::ModelFolder>(dir);
    } catch (const InputError& e) {
        throw InputError(std::string("params: ") + e.marked());
    }
    std::optional<fs::path> config = run.folder->config();
    if (const auto c = params_text(params, "config")) {
        config = resolve(*c, base);
    }
    const std::optional<std::string> gguf_config = run.folder->gguf_config_text();
    if (gguf_config && !config) { // a GGUF's metadata stands for its config.json
        run.spec = model::model_spec(*gguf_config,
                                     dir.string() + " (GGUF metadata)",
                                     run.folder->names(),
                                     params_text(params, "layout"));
    } else if (!config) {
        throw InputError("params: " + dir.string() +
                         ": no config.json (the model's architecture and sizes); give one "
                         "with --config");
    } else {
        run.spec = model::model_spec(*config, run.folder->names(), params_text(params, "layout"));
    }
    model::check_layer_count(*run.folder, run.spec);

    std::vector<ProblemSource> sources;
    Array ids;
    if (const auto it = given.find("token_ids"); it != given.end()) {
        ids = std::move(it->second);
        ids.copy_borrowed();
        given.erase(it);
    } else if (doc.contains("token_ids") && !doc["token_ids"].is_null()) {
        ids = detail::load_array(
            doc["token_ids"], "token_ids", io::ArrayKind::numeric, base, sources);
    } else {
        throw InputError("params: a model folder needs token_ids (--token-ids FILE) to run on");
    }
    run.ids = token_ids_of(ids);

    const std::size_t n = run.spec.layers;
    if (doc.contains("layers") && !doc["layers"].is_null()) {
        run.stack.layers = layer_selection(doc["layers"]);
        for (const std::size_t l : run.stack.layers) {
            if (l >= n) {
                throw InputError("layers: layer " + std::to_string(l) + " does not exist: the " +
                                 "model has " + std::to_string(n) + " layers (0 to " +
                                 std::to_string(n - 1) + ")");
            }
        }
    } else {
        for (std::size_t l = 0; l < n; ++l) {
            run.stack.layers.push_back(l);
        }
    }

    // The problem every layer shares, decoded from the document with a stand-in query of
    // the right batch, length and heads: masks, causal, "return", tokens, id, precision.
    json shared = doc;
    for (const char* f : {"params", "token_ids", "layers", "hidden_states"}) {
        shared.erase(f);
    }
    if (shared.contains("return") && shared["return"].is_array()) {
        json kept = json::array();
        for (const json& r : shared["return"]) {
            if (r == "hidden_states") {
                run.want_hidden_states = true;
            } else {
                kept.push_back(r);
            }
        }
        shared["return"] = kept;
    }
    shared["num_heads"] = run.spec.heads;
    Array stand_in;
    const std::size_t b = run.ids.shape()[0];
    const std::size_t l = run.ids.shape()[1];
    stand_in.shape = {l, run.spec.heads};
    if (ids.shape.size() == 2) {
        stand_in.shape.insert(stand_in.shape.begin(), b);
    }
    stand_in.values.assign(b * l * run.spec.heads, 0.0f);
    stand_in.values64.assign(stand_in.values.size(), 0.0);
    stand_in.dtype = "float32";
    given["key"] = stand_in;
    given["value"] = stand_in;
    given["query"] = std::move(stand_in);
    run.stack.first = decode_problem(shared, base, std::move(given));
    for (ProblemSource& s : sources) {
        run.stack.first.sources.push_back(std::move(s));
    }
    run.stack.first.num_kv_heads = run.spec.kv_heads;
    check_activations(run);
    if (run.spec.arch.causal && run.stack.first.causal == Causal::none) {
        // The decoder's own mask, in the problem: the kernel, the heatmap's hatching and
        // explain ask it there.
        run.stack.first.causal = Causal::top_left;
    }
    if (text.text_tokens) {
        run.stack.first.text_tokens = std::move(text.text_tokens);
        run.stack.first.text_batched = text.text_batched;
        for (Setting& st : text.settings) {
            run.stack.first.settings.push_back(std::move(st));
        }
    }
    return run;
}

Solution solve_model_run(const ModelRun& run, const SolveOptions& options) {
    check_model_memory(run, options);
    return run.stack.first.precision == Precision::f64 ? run_in<double>(run, options)
                                                       : run_in<float>(run, options);
}

std::vector<std::string> model_run_plan(const ModelRun& run) {
    std::vector<std::string> out = model::describe_model(run.spec);
    const model::Architecture& a = run.spec.arch;
    // "norm(inner)", or inner alone for a norm the block does not have (OLMo 2's pre-norms).
    const auto around = [](const std::string& norm, const std::string& inner) {
        return norm.empty() ? inner : norm + "(" + inner + ")";
    };
    const std::string mlp = a.router.empty() ? "mlp" : "experts";
    out.push_back(
        "every layer: " + model::layer_prefix(run.spec, 0) + " with {} = 0 .. " +
        std::to_string(run.spec.layers - 1) + ": " +
        (run.spec.residual == Residual::post_norm
             ? "h = " + a.attention_norm + "(x + attn(x)); y = " + a.mlp_norm + "(h + " + mlp +
                   "(h))"
         : run.spec.residual == Residual::parallel
             ? "y = x + attn(" + a.attention_norm + "(x)) + " + mlp + "(" +
                   (a.mlp_norm.empty() ? a.attention_norm : a.mlp_norm) + "(x))"
             : "h = x + " +
                   around(a.attention_post_norm, "attn(" + around(a.attention_norm, "x") + ")") +
                   "; y = h + " +
                   around(a.mlp_post_norm, mlp + "(" + around(a.mlp_norm, "h") + ")")));
    out.push_back("final norm: " + (a.final_norm.empty() ? std::string("none") : a.final_norm));
    return out;
}

std::shared_ptr<const BasicBlockWeights<float>> BlockCache::get(const model::ModelFolder& folder,
                                                                const model::ModelSpec& spec,
                                                                std::size_t layer,
                                                                model::Activations activations) {
    const std::lock_guard<std::mutex> lock(mutex_); // each layer read once, by one run
    std::shared_ptr<const BasicBlockWeights<float>>& b = blocks_[{layer, activations}];
    if (!b) {
        b = std::make_shared<const BasicBlockWeights<float>>(
            model::load_block<float>(folder, spec, layer, false, activations));
    }
    return b;
}

} // namespace attn::problem
