// `explain`'s plan: see attn/problem/explain.hpp.
#include "attn/problem/explain.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/limits.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "attn/model/weights.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/plan.hpp"
#include "attn/problem/solve.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

namespace attn::problem {

namespace {

using nlohmann::json;
using Dims = std::vector<std::size_t>;

constexpr std::size_t kGridRows = 32; // queries shown in the visibility grid
constexpr std::size_t kGridCols = 64; // keys shown
constexpr std::size_t kLabelWidth = 13;

/// The scale as the kernels resolve it (score_scale), in the problem's precision T.
template <class T> std::string scale_text(const Problem& p, std::size_t d) {
    const T s = score_scale(attention_spec<T>(p), d);
    if constexpr (std::is_same_v<T, float>) {
        return io::format_float(s);
    } else {
        return io::format_double(s);
    }
}

/// Whether the document gave `f` (present and not null).
bool given(const json& doc, const char* f) {
    return doc.contains(f) && !doc[f].is_null();
}

std::string dims(const Dims& d) {
    return shape_string(d);
}

std::string masking_text(const Problem& p) {
    std::vector<std::string> parts;
    const KeyRule rule(p.causal, p.window, p.window_align, p.lq, p.lk);
    if (p.causal == Causal::top_left) {
        parts.emplace_back("causal top-left (query i sees key j iff j <= i)");
    } else if (p.causal == Causal::bottom_right) {
        const std::int64_t shift = rule.diagonal_offset(); // Lk - Lq
        std::string text = "j <= i";
        if (shift != 0) {
            text += (shift > 0 ? " + " : " - ") + std::to_string(shift > 0 ? shift : -shift);
        }
        parts.push_back("causal bottom-right (query i sees key j iff " + text +
                        ": Lk - Lq = " + std::to_string(shift) + ")");
    }
    if (rule.has_window()) {
        const bool bottom_right = rule.alignment() == Align::bottom_right;
        auto side = [](std::int64_t n) {
            return n < 0 ? std::string("unbounded") : std::to_string(n);
        };
        parts.push_back("sliding window [" + side(p.window.left) + ", " + side(p.window.right) +
                        "] keys left and right of the diagonal (" +
                        (bottom_right ? "bottom-right" : "top-left") + ")");
    }
    if (p.mask) {
        parts.push_back("mask " + dims(shape_of(*p.mask)) + " as [B, H, Lq, Lk] (1 broadcasts)");
    }
    if (p.bias) {
        parts.push_back("bias " + dims(shape_of(*p.bias)) + " as [B, H, Lq, Lk] (-inf blocks)");
    }
    if (p.key_padding) {
        std::size_t padded = 0;
        for (std::size_t j = 0; j < p.lk; ++j) {
            padded += (*p.key_padding)(0, 0, 0, j) == 0 ? std::size_t{1} : std::size_t{0};
        }
        parts.push_back("key_padding_mask (" + std::to_string(padded) + " of " +
                        std::to_string(p.lk) + " keys padding" +
                        (p.key_padding->shape()[0] > 1 ? " in batch 0)" : ")"));
        if (p.varlen) {
            std::string counts;
            for (std::size_t b = 0; b < p.key_padding->shape()[0]; ++b) {
                counts += (counts.empty() ? "" : ", ") +
                          std::to_string(real_keys(&*p.key_padding, b, p.lk));
            }
            parts.push_back(
                "varlen (causal, window and ALiBi use each sequence's real keys: " + counts + ")");
        }
    }
    if (parts.empty()) {
        return "none: every query sees every key";
    }
    std::string out;
    for (const auto& s : parts) {
        out += (out.empty() ? "" : " + ") + s;
    }
    return out;
}

void grid(Explanation& r, const Problem& p, const Visibility& vis) {
    const std::size_t rows = std::min(p.lq, kGridRows);
    const std::size_t cols = std::min(p.lk, kGridCols);
    std::string head = "'#' sees, '.' blocked; rows are queries, columns keys";
    if (vis.varies()) {
        head += "; batch 0, head 0 shown";
    }
    r.row("visibility", head);
    // Row labels: index and token (if any), padded to one width.
    const std::size_t index_width = std::to_string(rows == 0 ? 0 : rows - 1).size();
    std::size_t token_width = 0;
    auto token = [&](std::size_t i) -> std::string {
        if (!p.query_tokens) {
            return "";
        }
        const std::string& t = (*p.query_tokens)[i];
        return t.size() > 10 ? t.substr(0, 9) + "~" : t;
    };
    for (std::size_t i = 0; i < rows; ++i) {
        token_width = std::max(token_width, token(i).size());
    }
    const std::size_t label_width = index_width + (token_width > 0 ? token_width + 1 : 0) + 1;
    std::string ruler(label_width, ' ');
    for (std::size_t j = 0; j < cols; ++j) {
        ruler += static_cast<char>('0' + j % 10);
    }
    r.more(ruler);
    for (std::size_t i = 0; i < rows; ++i) {
        std::string idx = std::to_string(i);
        std::string line = std::string(index_width - idx.size(), ' ') + idx;
        if (token_width > 0) {
            const std::string t = token(i);
            line += " " + t + std::string(token_width - t.size(), ' ');
        }
        line += " ";
        for (std::size_t j = 0; j < cols; ++j) {
            line += vis.sees(0, 0, i, j) ? '#' : '.';
        }
        r.more(line);
    }
    if (rows < p.lq || cols < p.lk) {
        r.more("(first " + std::to_string(rows) + " of " + std::to_string(p.lq) + " queries and " +
               std::to_string(cols) + " of " + std::to_string(p.lk) + " keys shown)");
    }
    // Fully masked rows over every batch and head (as compute would warn).
    if (const std::optional<std::size_t> empty = fully_masked_rows(p, vis); empty && *empty > 0) {
        r.more(fully_masked_text(std::to_string(*empty) +
                                 " query row(s) (over all batches and heads)"));
    }
}

/// The checkpoint's layout and every setting with where its value came from.
void checkpoint_rows(Explanation& r, const Problem& p) {
    if (p.layout) {
        r.row("checkpoint",
              std::string(model::layout_name(*p.layout)) + " layout, attention at prefix '" +
                  io::message_text(p.prefix) + "'");
    }
    for (const Setting& s : p.settings) {
        std::string text = s.value + " (" + s.origin + ")";
        if (s.name == "norm" && p.norm) {
            text += "; applied to the input before the projections";
        } else if (s.name == "rope" && p.rope) {
            text += "; rotates Q and K after the head split";
        }
        r.row(s.name, text);
    }
}

/// The projections row: where the weights came from, their shapes, the biases.
std::string projections_text(const json& doc, const Problem& p) {
    if (p.projections) {
        const Projections& w = *p.projections;
        std::string text;
        if (given(doc, "init")) {
            const json& init = doc["init"];
            text = "init, seed " +
                   (init.contains("seed") ? init["seed"].dump() : std::string("0")) + ":";
        } else {
            text = doc["params"].is_string() ? "params " + doc["params"].get<std::string>() + ":"
                                             : std::string("params:");
        }
        std::string biases;
        const std::pair<const char*, const std::optional<Matrix>*> ws[] = {
            {"w_q", &w.w_q}, {"w_k", &w.w_k}, {"w_v", &w.w_v}, {"w_o", &w.w_o}};
        for (const auto& [name, m] : ws) {
            if (m->has_value()) {
                text += std::string(" ") + name + " " + dims(shape_of(**m)) + ",";
            }
        }
        const std::pair<const char*, const std::optional<Vector>*> bs[] = {
            {"b_q", &w.b_q}, {"b_k", &w.b_k}, {"b_v", &w.b_v}, {"b_o", &w.b_o}};
        for (const auto& [name, v] : bs) {
            if (v->has_value()) {
                biases += std::string(biases.empty() ? "" : ", ") + name;
            }
        }
        text += biases.empty() ? " no biases" : " biases " + biases;
        if (!w.w_o) {
            text += "; no output projection";
        }
        return text;
    }
    return "none (Q, K, V are the sources)";
}

/// Sources, projections and Q, K, V as they reach the kernels.
void source_rows(Explanation& r, const json& doc, const Problem& p, const ProblemPlan& plan) {
    if (p.direct_heads) {
        r.row("query", dims(shape_of(p.q4)) + " = [B, H, Lq, D] (direct heads, no projection)");
        r.row("key", dims(shape_of(p.k4)) + " = [B, Hkv, Lk, D]");
        r.row("value", dims(shape_of(p.v4)) + " = [B, Hkv, Lk, Dv]");
    } else {
        const char* q_field = given(doc, "query") ? "query" : "input";
        const char* bl = p.batched ? "[B, " : "[";
        const std::string shared =
            plan.bk == 1 && plan.b > 1 ? " (batch 1: shared by every batch)" : "";
        r.row(q_field,
              dims(user_rank(shape_of(p.query_src), p.batched)) + " = " + bl + "Lq, E]" +
                  (given(doc, "query") ? "" : " (query source)"));
        if (given(doc, "key")) {
            r.row("key",
                  dims(user_rank(shape_of(p.key_src), p.batched)) + " = " + bl + "Lk, E]" + shared);
            r.row("value",
                  dims(user_rank(shape_of(p.value_src), p.batched)) + " = " + bl + "Lk, Ev]" +
                      shared);
        } else if (given(doc, "context")) {
            r.row("context",
                  dims(user_rank(shape_of(p.key_src), p.batched)) + " = " + bl +
                      "Lk, Ec] (key/value source: cross-attention)" + shared);
        } else {
            r.row("key, value", "= input (self-attention)");
        }

        const bool projected = p.projections.has_value();
        r.row("projections", projections_text(doc, p));
        const std::string q_src = given(doc, "query") ? "query" : "input";
        const std::string kv_src =
            given(doc, "key") ? "" : (given(doc, "context") ? "context" : "input");
        auto proj = [&](const std::string& src, const char* w_name, bool has_w) {
            return has_w ? src + "·" + w_name + "ᵀ " : src + " ";
        };
        const Projections none;
        const Projections& w = projected ? *p.projections : none;
        auto three = [](std::size_t a, std::size_t b, std::size_t c) { return dims({a, b, c}); };
        r.row("Q",
              proj(q_src, "w_q", w.w_q.has_value()) + three(plan.b, plan.lq, plan.pq) + " -> " +
                  dims({plan.b, plan.h, plan.lq, plan.d}) + " = [B, H, Lq, D]");
        r.row("K",
              proj(kv_src.empty() ? "key" : kv_src, "w_k", w.w_k.has_value()) +
                  three(plan.bk, plan.lk, plan.pk) + " -> " +
                  dims({plan.bk, plan.hkv, plan.lk, plan.d}) + " = [B, Hkv, Lk, D]");
        r.row("V",
              proj(kv_src.empty() ? "value" : kv_src, "w_v", w.w_v.has_value()) +
                  three(plan.bk, plan.lk, plan.pv) + " -> " +
                  dims({plan.bk, plan.hkv, plan.lk, plan.dv}) + " = [B, Hkv, Lk, Dv]");
    }
}

/// Heads, grouping and head dims.
std::string heads_text(const ProblemPlan& plan) {
    std::string heads;
    if (plan.h == 1) {
        heads = "1 head";
    } else if (plan.hkv == plan.h) {
        heads = std::to_string(plan.h) + " heads, each with its own key/value head";
    } else if (plan.hkv == 1) {
        heads = std::to_string(plan.h) + " query heads share 1 key/value head (multi-query)";
    } else {
        heads = std::to_string(plan.h) + " query heads, " + std::to_string(plan.hkv) +
                " key/value heads: grouped-query, query head h uses key/value head h / " +
                std::to_string(plan.h / plan.hkv);
    }
    heads += "; head dim " + std::to_string(plan.d) +
             (plan.dv != plan.d ? ", value head dim " + std::to_string(plan.dv) : "");
    return heads;
}

/// The scale (as the kernels resolve it), the shapes out, masking and score features.
void score_rows(Explanation& r, const json& doc, const Problem& p, const ProblemPlan& plan) {
    std::string scale = p.precision == io::Precision::f64 ? scale_text<double>(p, plan.d)
                                                          : scale_text<float>(p, plan.d);
    if (p.scale) {
        scale += given(doc, "scale") ? " (given)" : " (variant dot)";
    } else {
        scale += " = 1/sqrt(" + std::to_string(plan.d) + ") (default)";
    }
    r.row("scale", scale);

    if (!p.direct_heads) {
        std::string att = dims({plan.b, plan.h, plan.lq, plan.dv}) + " -> merged " +
                          dims({plan.b, plan.lq, plan.merged});
        if (p.projections && p.projections->w_o) {
            att += " -> ·w_oᵀ " + dims({plan.b, plan.lq, plan.eo});
        }
        r.row("attention", att);
    }
    r.row("output", dims(plan.output));
    std::string wl = plan.weights.size() == 4 ? "[B, H, Lq, Lk]" : "";
    if (wl.empty()) {
        wl = plan.weights.size() == 2 ? "[Lq, Lk]" : (p.batched ? "[B, Lq, Lk]" : "[H, Lq, Lk]");
    }
    r.row("weights", dims(plan.weights) + " = " + wl);
    r.row("masking", masking_text(p));
    std::vector<std::string> scores;
    if (p.softcap) {
        scores.push_back("softcap " + io::format_float(*p.softcap) + " (s = cap·tanh(s / cap))");
    }
    if (!p.alibi_slopes.empty()) {
        scores.push_back("ALiBi, " + std::to_string(p.alibi_slopes.size()) +
                         " slopes (adds -slope·|j - (i + s)|)");
    }
    if (!p.sinks.empty()) {
        scores.push_back("attention sinks, " + std::to_string(p.sinks.size()) +
                         " logits in the softmax denominators (rows may sum to less than 1)");
    }
    if (!scores.empty()) {
        std::string text;
        for (const auto& x : scores) {
            text += (text.empty() ? "" : "; ") + x;
        }
        r.row("scores", text);
    }
    std::vector<std::string> extra;
    if (p.return_lse) {
        extra.emplace_back("lse");
    }
    if (p.return_entropy) {
        extra.emplace_back("entropy");
    }
    if (p.return_argmax) {
        extra.emplace_back("argmax");
    }
    if (p.top_k > 0) {
        extra.push_back("top_k (K = " + std::to_string(p.top_k) + ")");
    }
    if (!extra.empty()) {
        std::string text;
        for (const auto& x : extra) {
            text += (text.empty() ? "" : ", ") + x;
        }
        r.row("also returns", text + " per query row");
    }
}

/// Memory (the estimate solve() checks) and the warnings compute gives.
void memory_rows(Explanation& r, const Problem& p) {
    // Memory: the same estimate that solve() checks against max_memory / memory_limit().
    const MemoryEstimate with = estimate_memory(p, true, 1);
    const MemoryEstimate without = estimate_memory(p, false, 1);
    r.row("memory",
          "~" + io::format_size(with.total) + " with weights: inputs " +
              io::format_size(with.inputs) + ", intermediates " +
              io::format_size(with.intermediates) + ", output " + io::format_size(with.output) +
              ", weights " + io::format_size(with.weights));
    r.more("~" + io::format_size(without.total) + " with " + option_name("no_weights") +
           " (no [Lq, Lk] matrix)");
    if (weights_direct(p)) {
        const MemoryEstimate streamed = estimate_memory(p, true, 1, true);
        r.more("~" + io::format_size(streamed.total) + " with " + option_name("weights") +
               " FILE.npy (float32: written to the file as computed)");
    }
    const std::uint64_t per_thread = estimate_memory(p, true, 2).total - with.total;
    const std::uint64_t per_thread_lean = estimate_memory(p, false, 2).total - without.total;
    r.more("(1 thread; each further thread adds " + io::format_size(per_thread) + ", or " +
           io::format_size(per_thread_lean) + " with " + option_name("no_weights") + ")");
    // The likely mistakes compute warns about, shown by explain too.
    for (std::size_t i = 0; i < p.warnings.size(); ++i) {
        if (i == 0) {
            r.row("warnings", p.warnings[i]);
        } else {
            r.more(p.warnings[i]);
        }
    }
}

} // namespace

Explanation explain(const json& doc, const std::string& name, const Problem& p) {
    const ProblemPlan plan = plan_problem(p);
    plan.check();
    Explanation r;
    std::string title = name;
    if (doc.contains("variant") && doc["variant"].is_string()) {
        title += ", variant " + doc["variant"].get<std::string>();
    }
    r.row("problem", title);
    checkpoint_rows(r, p);
    source_rows(r, doc, p, plan);
    r.row("heads", heads_text(plan));
    score_rows(r, doc, p, plan);
    grid(r, p, Visibility(attention_spec(p), p.lq, p.lk));
    memory_rows(r, p);
    return r;
}

Explanation explain(const json& doc, const std::string& name, const LayerStack& stack) {
    std::string chosen;
    for (const std::size_t l : stack.layers) {
        chosen += (chosen.empty() ? "" : ", ") + std::to_string(l);
    }
    Explanation r;
    r.row("layers",
          std::to_string(stack.layers.size()) + " of " + std::to_string(stack.prefixes.size()) +
              " (" + stack.layout + "): " + chosen + "; layer l attends from hidden_states[l] " +
              shape_string(stack.hidden_states.shape));
    r.more("results gain a leading layer axis; the plan of layer " +
           std::to_string(stack.layers.front()) + " (prefix '" +
           stack.prefixes[stack.layers.front()] + "'), every layer alike:");
    const Explanation first = explain(doc, name, stack.first);
    r.rows.insert(r.rows.end(), first.rows.begin(), first.rows.end());
    return r;
}

/// The "products" row of a model run: the layers' matrices by stored type, and what the
/// run's activations choice does with their inputs (activations_rounding, per type).
void products_rows(Explanation& r, const ModelRun& run) {
    const model::Activations a = run.stack.first.activations;
    std::string types, rounded, roundable;
    for (const auto& [dtype, count] : model::layer_matrix_types(*run.folder, run.spec)) {
        types += (types.empty() ? "" : ", ") + std::to_string(count) + " " + dtype;
        const std::optional<std::uint32_t> t = model::ggml_type_named(dtype);
        const std::string_view to = t ? model::activations_rounding(*t, a) : "";
        if (!to.empty()) {
            rounded += (rounded.empty() ? "" : ", ") + dtype + "'s to " + std::string(to);
        }
        if (t && !model::activations_rounding(*t, model::Activations::q8).empty()) {
            roundable += (roundable.empty() ? "" : ", ") + dtype;
        }
    }
    if (types.empty()) {
        return;
    }
    r.row("products", "the layers' matrices, multiplied as stored: " + types);
    const std::string choice =
        option_name("activations") + " " + std::string(model::activations_name(a)) + ": ";
    if (!rounded.empty()) {
        r.more(choice + "the inputs rounded as llama.cpp rounds them (" + rounded +
               "): not exact; other types' inputs float32");
    } else if (!roundable.empty()) {
        r.more(choice + "float32 inputs (exact); " + option_name("activations") +
               " q8 would round the inputs of the " + roundable +
               " ones as llama.cpp does (integer sums: faster, not exact)");
    } else {
        r.more(choice + "float32 inputs (exact)");
    }
}

Explanation explain(const ModelRun& run) {
    std::string chosen;
    for (const std::size_t l : run.stack.layers) {
        chosen += (chosen.empty() ? "" : ", ") + std::to_string(l);
    }
    Explanation r;
    r.row("model",
          run.folder->path().string() + ": token_ids " +
              shape_string({run.ids.shape()[0], run.ids.shape()[1]}) + " through the forward pass");
    for (const std::string& line : model_run_plan(run)) {
        r.more(line);
    }
    r.row("layers",
          std::to_string(run.stack.layers.size()) + " of " + std::to_string(run.spec.layers) +
              " returned: " + chosen + " (each layer's weights read when it runs)");
    products_rows(r, run);
    // The estimate solve_model_run checks against max_memory / memory_limit().
    const std::size_t n = run.stack.layers.size();
    const ModelMemory with = estimate_model_memory(run, {.want_weights = true, .threads = 1});
    const ModelMemory without = estimate_model_memory(run, {.want_weights = false, .threads = 1});
    r.row("memory", "~" + memory_text(with, n) + " with weights");
    r.more("~" + memory_text(without, n) + " with " + option_name("no_weights"));
    const ModelMemory binary =
        estimate_model_memory(run, {.want_weights = false, .threads = 1, .results_text = false});
    r.more("~" + memory_text(binary, n) + " with " + option_name("no_weights") + " and " +
           option_name("output") + " FILE.npz (binary arrays, no JSON text)");
    r.more("(1 thread; matrices multiplied as stored count their stored bytes, the mapped "
           "file's pages they touch)");
    return r;
}

std::optional<std::size_t>
fully_masked_rows(const Problem& p, const Visibility& vis, double cell_limit) {
    const double cells = static_cast<double>(p.batch) * static_cast<double>(p.num_heads) *
                         static_cast<double>(p.lq) * static_cast<double>(p.lk);
    if (cells > cell_limit) {
        return std::nullopt;
    }
    // Visibility that does not vary by batch and head is counted on one and multiplied.
    const std::size_t nb = vis.varies() ? p.batch : 1;
    const std::size_t nh = vis.varies() ? p.num_heads : 1;
    std::size_t empty = 0;
    for (std::size_t b = 0; b < nb; ++b) {
        for (std::size_t h = 0; h < nh; ++h) {
            for (std::size_t i = 0; i < p.lq; ++i) {
                bool any = false;
                for (std::size_t j = 0; j < p.lk && !any; ++j) {
                    any = vis.sees(b, h, i, j);
                }
                empty += any ? 0 : 1;
            }
        }
    }
    return vis.varies() ? empty : empty * p.batch * p.num_heads;
}

std::string Explanation::str() const {
    std::ostringstream out;
    for (const ExplainRow& r : rows) {
        const std::size_t pad = r.label.empty()                ? kLabelWidth
                                : kLabelWidth > r.label.size() ? kLabelWidth - r.label.size()
                                                               : 1;
        out << r.label << std::string(pad, ' ') << r.text << '\n';
    }
    return out.str();
}

Explanation explain(const json& doc, const std::string& name, const DecodedDocument& d) {
    if (const auto* run = std::get_if<ModelRun>(&d.decoded)) {
        return explain(*run);
    }
    if (const auto* stack = std::get_if<LayerStack>(&d.decoded)) {
        return explain(doc, name, *stack);
    }
    return explain(doc, name, std::get<Problem>(d.decoded));
}

} // namespace attn::problem
