// The checkpoint layouts (attn, torch-mha, gpt2, llama, bert): how a layer's attention tensors
// are named after its prefix, how a layout is recognized, and how its tensors become
// nn.Linear-layout Projections. One table holds every layout: adding one is one entry
// (its names, and a mapper when its tensors are not one weight and bias per projection).
#include "attn/error.hpp"
#include "attn/model/architecture.hpp"
#include "attn/model/safetensors.hpp"
#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace attn::model {
namespace {

namespace fs = std::filesystem;
using detail::quote_name;
using nlohmann::json;

Matrix as_matrix(const io::Array& a) {
    Matrix m = Matrix::from_shape({a.shape[0], a.shape[1]});
    std::copy(a.values.begin(), a.values.end(), m.begin());
    return m;
}

Vector as_vector(const io::Array& a) {
    Vector v = Vector::from_shape({a.shape[0]});
    std::copy(a.values.begin(), a.values.end(), v.begin());
    return v;
}

/// Rows [r0, r0 + n) of a matrix.
Matrix rows_of(const Matrix& m, std::size_t r0, std::size_t n) {
    const std::size_t cols = m.shape()[1];
    Matrix out = Matrix::from_shape({n, cols});
    std::copy(m.data() + r0 * cols, m.data() + (r0 + n) * cols, out.data());
    return out;
}

/// Columns [c0, c0 + n) of a Conv1D weight [in, out], transposed to nn.Linear's [n, in].
Matrix columns_transposed(const Matrix& m, std::size_t c0, std::size_t n) {
    const std::size_t in = m.shape()[0];
    const std::size_t cols = m.shape()[1];
    Matrix out = Matrix::from_shape({n, in});
    for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < in; ++i) {
            out.data()[r * in + i] = m.data()[i * cols + c0 + r];
        }
    }
    return out;
}

Vector slice(const Vector& v, std::size_t start, std::size_t n) {
    Vector out = Vector::from_shape({n});
    std::copy(v.data() + start, v.data() + start + n, out.data());
    return out;
}

/// The tensors of one layer, with messages that give the tensor's full name.
class LayerTensors {
  public:
    LayerTensors(const std::map<std::string, io::Array>& tensors,
                 std::string_view what,
                 std::string_view prefix)
        : tensors_(tensors), what_(what), prefix_(prefix) {}

    bool has(std::string_view key) const { return tensors_.count(std::string(key)) != 0; }

    /// "WHAT: tensor 'NAME'": the tensor in messages.
    std::string where_name(std::string_view key) const {
        return what_ + ": tensor " + quote_name(prefix_ + std::string(key));
    }
    std::string where(std::string_view key) const { return where_name(key) + ": "; }

    [[noreturn]] void missing(std::string_view key, std::string_view layout) const {
        throw InputError(what_ + ": layout " + std::string(layout) + ": missing tensor " +
                         quote_name(prefix_ + std::string(key)));
    }

    /// A rank-2 weight; `form` names the expected layout in messages.
    std::optional<Matrix> matrix(std::string_view key, const char* form = "[out, in]") const {
        const auto it = tensors_.find(std::string(key));
        if (it == tensors_.end()) {
            return std::nullopt;
        }
        if (it->second.shape.size() != 2) {
            throw InputError::rank(
                where_name(key), 2, std::string(form) + " weight", it->second.shape);
        }
        return as_matrix(it->second);
    }

    std::optional<Vector> vector(std::string_view key) const {
        const auto it = tensors_.find(std::string(key));
        if (it == tensors_.end()) {
            return std::nullopt;
        }
        if (it->second.shape.size() != 1) {
            throw InputError::rank(where_name(key), 1, "[out] bias", it->second.shape);
        }
        return as_vector(it->second);
    }

    /// `count` must split in three (q, k, v stacked).
    std::size_t third(std::string_view key, std::size_t count, const char* what) const {
        if (count % 3 != 0) {
            throw InputError(where(key) + what + " " + std::to_string(count) +
                             " does not split in three (q, k, v stacked)");
        }
        return count / 3;
    }

  private:
    const std::map<std::string, io::Array>& tensors_;
    std::string what_;
    std::string prefix_;
};

struct LayoutInfo;

void map_torch_mha(const LayerTensors& t, const LayoutInfo& /*info*/, Projections& p) {
    for (const char* key : {"bias_k", "bias_v"}) {
        if (t.has(key)) {
            throw InputError(t.where(key) +
                             "add_bias_kv (an extra learned key/value row) is not supported");
        }
    }
    const bool fused = t.has("in_proj_weight");
    const bool separate =
        t.has("q_proj_weight") || t.has("k_proj_weight") || t.has("v_proj_weight");
    if (fused && separate) {
        throw InputError(t.where("q_proj_weight") +
                         "both in_proj_weight and q/k/v_proj_weight give the input projections");
    }
    if (fused) {
        const Matrix w = *t.matrix("in_proj_weight", "[3·E, E]");
        const std::size_t e = t.third("in_proj_weight", w.shape()[0], "first dimension");
        p.w_q = rows_of(w, 0, e);
        p.w_k = rows_of(w, e, e);
        p.w_v = rows_of(w, 2 * e, e);
    } else {
        for (const char* key : {"q_proj_weight", "k_proj_weight", "v_proj_weight"}) {
            if (!t.has(key)) {
                t.missing(key, "torch-mha");
            }
        }
        p.w_q = t.matrix("q_proj_weight");
        p.w_k = t.matrix("k_proj_weight");
        p.w_v = t.matrix("v_proj_weight");
    }
    if (const auto b = t.vector("in_proj_bias")) {
        // With separate q/k/v weights (kdim, vdim != embed_dim) the bias is still fused.
        const std::size_t e = t.third("in_proj_bias", b->shape()[0], "length");
        p.b_q = slice(*b, 0, e);
        p.b_k = slice(*b, e, e);
        p.b_v = slice(*b, 2 * e, e);
    }
    p.w_o = t.matrix("out_proj.weight");
    p.b_o = t.vector("out_proj.bias");
}

void map_gpt2(const LayerTensors& t, const LayoutInfo& /*info*/, Projections& p) {
    // Conv1D computes y = x·W + b with W [in, out]: nn.Linear's weight is Wᵀ.
    if (!t.has("c_attn.weight")) {
        t.missing("c_attn.weight", "gpt2");
    }
    const Matrix w = *t.matrix("c_attn.weight", "[in, 3·out] (Conv1D)");
    const std::size_t e = t.third("c_attn.weight", w.shape()[1], "second dimension");
    p.w_q = columns_transposed(w, 0, e);
    p.w_k = columns_transposed(w, e, e);
    p.w_v = columns_transposed(w, 2 * e, e);
    if (const auto b = t.vector("c_attn.bias")) {
        const std::size_t eb = t.third("c_attn.bias", b->shape()[0], "length");
        p.b_q = slice(*b, 0, eb);
        p.b_k = slice(*b, eb, eb);
        p.b_v = slice(*b, 2 * eb, eb);
    }
    if (const auto wo = t.matrix("c_proj.weight", "[in, out] (Conv1D)")) {
        p.w_o = columns_transposed(*wo, 0, wo->shape()[1]);
    }
    p.b_o = t.vector("c_proj.bias");
}

/// The names of a layout with one weight (and optional bias) per projection.
struct ProjectionNames {
    std::string_view w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o;
};

using Mapper = void (*)(const LayerTensors& t, const LayoutInfo& info, Projections& p);

/// One layout: its name, the names that mark it, every tensor it reads, and its mapper.
struct LayoutInfo {
    ParamsLayout layout;
    std::string_view name;
    std::vector<std::string_view> signatures; ///< any of these names marks the layout
    std::vector<std::string_view> tensors;    ///< every name the layout reads
    Mapper map;
    ProjectionNames names{};  ///< for map_projections
    bool require_qkv = false; ///< map_projections: w_q, w_k, w_v must be present
};

/// One weight and optional bias per projection, [out, in] as nn.Linear: copied as they are.
void map_projections(const LayerTensors& t, const LayoutInfo& info, Projections& p) {
    const ProjectionNames& n = info.names;
    // Once one input projection is there, a missing one is an error, never an identity.
    if (info.require_qkv || t.has(n.w_q) || t.has(n.w_k) || t.has(n.w_v)) {
        for (const std::string_view key : {n.w_q, n.w_k, n.w_v}) {
            if (!t.has(key)) {
                t.missing(key, info.name);
            }
        }
    }
    p.w_q = t.matrix(n.w_q);
    p.w_k = t.matrix(n.w_k);
    p.w_v = t.matrix(n.w_v);
    p.w_o = t.matrix(n.w_o);
    p.b_q = t.vector(n.b_q);
    p.b_k = t.vector(n.b_k);
    p.b_v = t.vector(n.b_v);
    p.b_o = t.vector(n.b_o);
}

/// A layout of map_projections: it reads its eight names.
LayoutInfo projections_layout(ParamsLayout layout,
                              std::string_view name,
                              std::vector<std::string_view> signatures,
                              const ProjectionNames& n,
                              bool require_qkv) {
    return {layout,
            name,
            std::move(signatures),
            {n.w_q, n.w_k, n.w_v, n.w_o, n.b_q, n.b_k, n.b_v, n.b_o},
            map_projections,
            n,
            require_qkv};
}

/// Every layout, in ParamsLayout order (detection reports them in this order).
const std::vector<LayoutInfo>& layouts() {
    static const std::vector<LayoutInfo> table = {
        projections_layout(ParamsLayout::attn,
                           "attn",
                           {"w_q", "w_k", "w_v", "w_o"},
                           {"w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"},
                           false),
        {ParamsLayout::torch_mha,
         "torch-mha",
         {"in_proj_weight", "q_proj_weight", "out_proj.weight"},
         {"in_proj_weight",
          "in_proj_bias",
          "q_proj_weight",
          "k_proj_weight",
          "v_proj_weight",
          "out_proj.weight",
          "out_proj.bias",
          "bias_k",
          "bias_v"},
         map_torch_mha},
        {ParamsLayout::gpt2,
         "gpt2",
         {"c_attn.weight"},
         {"c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"},
         map_gpt2},
        projections_layout(ParamsLayout::llama,
                           "llama",
                           {"q_proj.weight"},
                           {"q_proj.weight",
                            "k_proj.weight",
                            "v_proj.weight",
                            "o_proj.weight",
                            "q_proj.bias",
                            "k_proj.bias",
                            "v_proj.bias",
                            "o_proj.bias"},
                           true),
        projections_layout(ParamsLayout::bert,
                           "bert",
                           {"self.query.weight"},
                           {"self.query.weight",
                            "self.key.weight",
                            "self.value.weight",
                            "output.dense.weight",
                            "self.query.bias",
                            "self.key.bias",
                            "self.value.bias",
                            "output.dense.bias"},
                           true),
        projections_layout(ParamsLayout::opt,
                           "opt",
                           {"q_proj.weight"},
                           {"q_proj.weight",
                            "k_proj.weight",
                            "v_proj.weight",
                            "out_proj.weight",
                            "q_proj.bias",
                            "k_proj.bias",
                            "v_proj.bias",
                            "out_proj.bias"},
                           true),
    };
    return table;
}

const LayoutInfo& layout_info(ParamsLayout layout) {
    for (const LayoutInfo& info : layouts()) {
        if (info.layout == layout) {
            return info;
        }
    }
    ATTN_ASSERT(false);
    return layouts().front();
}

/// "\"attn\", \"torch-mha\", \"gpt2\", \"llama\" or \"bert\"", from the table.
std::string layout_names_text() {
    std::string out;
    const std::vector<LayoutInfo>& all = layouts();
    for (std::size_t i = 0; i < all.size(); ++i) {
        out += i == 0 ? "" : i + 1 == all.size() ? " or " : ", ";
        out += "\"" + std::string(all[i].name) + "\"";
    }
    return out;
}

ParamsLayout parse_layout(const json& j) {
    if (j.is_string()) {
        for (const LayoutInfo& info : layouts()) {
            if (info.name == j.get<std::string>()) {
                return info.layout;
            }
        }
    }
    throw InputError("params.layout: expected " + layout_names_text() + ", got " +
                     io::message_text(j.dump(-1, ' ', false, json::error_handler_t::replace), 80));
}

/// The prefixes at which `names` hold a signature of one of `candidates`, sorted.
std::set<std::string> prefixes_with(const std::vector<std::string>& names,
                                    const std::vector<const LayoutInfo*>& candidates) {
    std::set<std::string> out;
    for (const std::string& n : names) {
        for (const LayoutInfo* info : candidates) {
            for (const std::string_view sig : info->signatures) {
                if (n.size() >= sig.size() &&
                    n.compare(n.size() - sig.size(), sig.size(), sig) == 0 &&
                    (n.size() == sig.size() || n[n.size() - sig.size() - 1] == '.')) {
                    out.insert(n.substr(0, n.size() - sig.size()));
                }
            }
        }
    }
    return out;
}

/// Names of `names` that start with `prefix`, with the prefix removed.
std::vector<std::string> names_at(const std::vector<std::string>& names,
                                  const std::string& prefix) {
    std::vector<std::string> out;
    for (const std::string& n : names) {
        if (n.size() >= prefix.size() && n.compare(0, prefix.size(), prefix) == 0) {
            out.push_back(n.substr(prefix.size()));
        }
    }
    return out;
}

/// Records the first non-finite value of a weight, for --check-finite.
void note_first_nonfinite(const io::Array& a, io::ProblemSource& s) {
    const auto bad =
        std::find_if(a.values.begin(), a.values.end(), [](float x) { return !std::isfinite(x); });
    if (bad != a.values.end()) {
        s.first_nonfinite = static_cast<std::size_t>(bad - a.values.begin());
        s.nonfinite_value = *bad;
    }
}

/// q_proj/k_proj/v_proj/out_proj names fit OPT-like models (no RoPE) and GPT-J/CodeGen
/// (rotary): taken as opt only when config.json's model_type (`type`) is one without RoPE.
void check_out_proj_model(const std::string& type,
                          const std::string& what,
                          const std::string& prefix) {
    for (const char* plain : {"opt",
                              "bart",
                              "mbart",
                              "whisper",
                              "clip",
                              "clip_text_model",
                              "clip_vision_model",
                              "vit",
                              "marian",
                              "pegasus",
                              "blenderbot"}) {
        if (type == plain) {
            return;
        }
    }
    throw InputError(what + ": the tensors at prefix " + quote_name(prefix) +
                     " (q_proj, k_proj, v_proj, out_proj) fit several layouts: opt (OPT, BART, "
                     "Whisper, CLIP, ViT: no RoPE) and gptj (rotary)" +
                     (type.empty() ? std::string(" and no config.json says which")
                                   : ": config.json's model_type '" + io::message_text(type, 40) +
                                         "' is neither") +
                     ": set --layout (e.g. --layout opt)");
}

/// What config.json's model_type `type` does in a layer's attention that the layouts (their
/// projections, pre-norm and RoPE) do not: Gemma's (1 + w) RMSNorm, Gemma 2/3's
/// query_pre_attn_scalar and logit softcap, Granite's attention_multiplier, Cohere's
/// LayerNorm and interleaved RoPE. Empty when nothing is known to differ.
std::string attention_beyond_layout(const std::string& type) {
    if (type == "gemma2" || type == "gemma3_text" || type == "gemma3") {
        return "normalizes with (1 + w) and scales its scores by query_pre_attn_scalar^-0.5 "
               "(Gemma 2: capped by attn_logit_softcapping)";
    }
    if (const Architecture* a = find_architecture(type); a && a->norm_weight_offset != 0.0) {
        return "normalizes with (1 + w)";
    }
    if (type == "granite" || type == "granitemoe") {
        return "scales its scores by attention_multiplier";
    }
    if (type == "cohere" || type == "cohere2") {
        return "normalizes with LayerNorm and rotates interleaved pairs";
    }
    return {};
}

/// One layer's weights at a prefix compute a plain attention: refused, never silently
/// wrong, when config.json's model_type says the model's attention is more.
void check_layer_model_type(const std::string& type,
                            const std::string& what,
                            const std::string& prefix) {
    const std::string extra = attention_beyond_layout(type);
    if (!extra.empty()) {
        throw InputError(what + ": config.json's model_type '" + io::message_text(type, 40) + "' " +
                         extra + ", which one layer's weights at prefix " + quote_name(prefix) +
                         " do not apply: run the whole model (params: its folder, with "
                         "token_ids)");
    }
}

/// The checkpoint's fields: a path, or {"file", "prefix", "layout"} ("config" is read by
/// the caller).
struct CheckpointFields {
    std::string file;
    std::string prefix;
    std::optional<ParamsLayout> layout;
};

CheckpointFields checkpoint_fields(const nlohmann::json& params) {
    CheckpointFields f;
    if (params.is_string()) {
        f.file = params.get<std::string>();
    } else if (params.is_object()) {
        for (const auto& [key, value] : params.items()) {
            if (key == "file" || key == "prefix") {
                if (!value.is_string()) {
                    throw InputError("params." + key + ": expected a string, got " +
                                     std::string(value.type_name()));
                }
                (key == "file" ? f.file : f.prefix) = value.get<std::string>();
            } else if (key == "layout") {
                if (!value.is_null()) {
                    f.layout = parse_layout(value);
                }
            } else if (key != "config") { // config.json: read by the caller
                throw InputError("params: unknown field " + quote_name(key) +
                                 " of a checkpoint (expected file, prefix, layout, config)");
            }
        }
        if (!params.contains("file")) {
            throw InputError("params: a checkpoint needs \"file\" (the .safetensors path)");
        }
    } else {
        throw InputError("params: expected the path of a .safetensors file or an object "
                         "{\"file\", \"prefix\", \"layout\"}, got " +
                         std::string(params.type_name()));
    }
    return f;
}

/// The message when no layout's tensors are at `prefix`: what was looked for, and the
/// prefixes that do hold them.
std::string no_weights_message(const std::string& what,
                               const std::optional<ParamsLayout>& layout,
                               const std::string& prefix,
                               const std::vector<std::string>& names,
                               const std::vector<const LayoutInfo*>& candidates) {
    std::string looked;
    std::set<std::string_view> seen; // opt and llama share q_proj.weight
    for (const LayoutInfo* info : candidates) {
        for (const std::string_view sig : info->signatures) {
            if (seen.insert(sig).second) {
                looked += (looked.empty() ? "" : ", ") + std::string(sig);
            }
        }
    }
    std::string message = what + ": no " + (layout ? std::string(layout_name(*layout)) + " " : "") +
                          "attention weights at prefix " + quote_name(prefix) + " (looked for " +
                          looked + ")";
    const std::set<std::string> elsewhere = prefixes_with(names, candidates);
    if (!elsewhere.empty()) {
        message += "; the file has them at prefix ";
        std::size_t shown = 0;
        for (const std::string& pre : elsewhere) {
            if (shown == 3) {
                message += ", ...";
                break;
            }
            message += (shown > 0 ? ", " : "") + quote_name(pre);
            ++shown;
        }
        if (elsewhere.size() > 1) {
            message += " (" + std::to_string(elsewhere.size()) + " prefixes)";
        }
        message += ": set \"prefix\" (and \"layout\" if several fit) for one layer, or "
                   "give the model's folder with its config.json for the whole model";
    } else {
        message += "; the file's " + std::to_string(names.size()) + " tensors hold none";
    }
    return message;
}

/// The one layout whose tensors are at `prefix` (`layout` when given), adding the '.' the
/// prefix may lack. Throws InputError when none or several fit.
ParamsLayout choose_layout(const std::vector<std::string>& names,
                           const std::optional<ParamsLayout>& layout,
                           std::string& prefix,
                           const std::string& what) {
    std::vector<const LayoutInfo*> candidates;
    for (const LayoutInfo& info : layouts()) {
        if (!layout || info.layout == *layout) {
            candidates.push_back(&info);
        }
    }
    auto found_at = [&](const std::string& pre) {
        std::vector<ParamsLayout> found = detect_layouts(names_at(names, pre));
        if (layout) {
            const bool ok = std::find(found.begin(), found.end(), *layout) != found.end();
            found.assign(ok ? 1 : 0, *layout);
        }
        return found;
    };
    std::vector<ParamsLayout> found = found_at(prefix);
    if (found.empty() && !prefix.empty() && prefix.back() != '.' &&
        !found_at(prefix + ".").empty()) {
        prefix += '.';
        found = found_at(prefix);
    }
    if (found.empty()) {
        throw InputError(no_weights_message(what, layout, prefix, names, candidates));
    }
    if (found.size() > 1) {
        std::string list;
        for (const ParamsLayout l : found) {
            list += (list.empty() ? "" : " and ") + std::string(layout_name(l));
        }
        throw InputError(what + ": the tensors at prefix " + quote_name(prefix) +
                         " match the layouts " + list + ": set \"layout\"");
    }
    return found.front();
}

/// The chosen layout's tensors at `prefix` (those present), each noted in `sources`.
std::map<std::string, io::Array> read_layout_tensors(const SafetensorsFile& st,
                                                     ParamsLayout chosen,
                                                     const std::string& prefix,
                                                     const fs::path& full,
                                                     std::vector<io::ProblemSource>& sources) {
    std::map<std::string, io::Array> tensors;
    for (const std::string_view key : layout_info(chosen).tensors) {
        const SafetensorsEntry* e = st.header().find(prefix + std::string(key));
        if (e == nullptr) {
            continue;
        }
        io::Array a;
        try {
            a = st.read(*e);
        } catch (const InputError& err) {
            throw InputError(std::string("params: ") + err.marked());
        }
        io::ProblemSource s{"params." + e->name, full, a.shape, std::nullopt, 0.0f};
        note_first_nonfinite(a, s);
        sources.push_back(std::move(s));
        tensors.emplace(std::string(key), std::move(a));
    }
    return tensors;
}

} // namespace

std::string_view layout_name(ParamsLayout layout) {
    return layout_info(layout).name;
}

std::vector<ParamsLayout> detect_layouts(const std::vector<std::string>& names) {
    const auto has = [&names](std::string_view n) {
        return std::find(names.begin(), names.end(), n) != names.end();
    };
    // q_proj with out_proj (OPT's names) is neither llama (o_proj) nor torch-mha.
    const bool out_proj_names = has("q_proj.weight") && has("out_proj.weight");
    std::vector<ParamsLayout> out;
    for (const LayoutInfo& info : layouts()) {
        const bool found = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
            return std::find(info.signatures.begin(), info.signatures.end(), n) !=
                   info.signatures.end();
        });
        const bool fits = info.layout == ParamsLayout::llama ? !out_proj_names
                          : info.layout == ParamsLayout::opt ? out_proj_names
                          : info.layout == ParamsLayout::torch_mha
                              ? !out_proj_names || has("in_proj_weight") || has("q_proj_weight")
                              : true;
        if (found && fits) {
            out.push_back(info.layout);
        }
    }
    return out;
}

Projections map_layout(ParamsLayout layout,
                       const std::map<std::string, io::Array>& tensors,
                       std::string_view what,
                       std::string_view prefix) {
    const LayerTensors t(tensors, what, prefix);
    const LayoutInfo& info = layout_info(layout);
    Projections p;
    info.map(t, info, p);
    return p;
}

bool is_checkpoint_params(const nlohmann::json& params) {
    if (params.is_object()) {
        return params.contains("file");
    }
    if (!params.is_string()) {
        return false;
    }
    return is_safetensors_path(params.get_ref<const std::string&>());
}

bool is_safetensors_path(std::string_view path) {
    return io::has_extension(path, ".safetensors");
}

CheckpointParams load_checkpoint_params(const nlohmann::json& params,
                                        const std::filesystem::path& base,
                                        std::vector<io::ProblemSource>& sources,
                                        const std::string& model_type) {
    CheckpointFields f = checkpoint_fields(params);
    const fs::path p = f.file;
    const fs::path full = p.is_absolute() ? p : base / p;
    std::optional<SafetensorsFile> st;
    try {
        st.emplace(full);
    } catch (const InputError& e) {
        throw InputError(std::string("params: ") + e.marked());
    }
    const std::string what = "params: " + st->shown();
    sources.push_back({"params", full, {}, std::nullopt, 0.0f});

    std::vector<std::string> names;
    for (const SafetensorsEntry& e : st->header().tensors) {
        names.push_back(e.name);
    }
    const ParamsLayout chosen = choose_layout(names, f.layout, f.prefix, what);
    // Q/K norms (Qwen3, OLMo 2, Gemma 3, Phi, StableLM) are part of the layer's attention,
    // and none of these layouts applies them: refused, never dropped.
    for (const char* norm : {"q_norm.weight", "q_layernorm.weight", "q_layernorm.norms.0.weight"}) {
        if (std::find(names.begin(), names.end(), f.prefix + norm) != names.end()) {
            throw InputError(what + ": the layer at prefix " + quote_name(f.prefix) + " has " +
                             quote_name(norm) +
                             " (a q/k norm), which one layer's weights do not apply: run the "
                             "whole model (params: its folder, with token_ids)");
        }
    }
    check_layer_model_type(model_type, what, f.prefix);
    if (chosen == ParamsLayout::opt && !f.layout) {
        check_out_proj_model(model_type, what, f.prefix);
    }
    const std::map<std::string, io::Array> tensors =
        read_layout_tensors(*st, chosen, f.prefix, full, sources);
    return {map_layout(chosen, tensors, what, f.prefix), chosen, f.prefix, full};
}

std::size_t implied_num_kv_heads(const Projections& projections, std::size_t num_heads) {
    if (!projections.w_q || !projections.w_k || num_heads == 0) {
        return num_heads;
    }
    const std::size_t q_rows = projections.w_q->shape()[0];
    const std::size_t k_rows = projections.w_k->shape()[0];
    if (q_rows == k_rows || q_rows % num_heads != 0) {
        return num_heads;
    }
    const std::size_t head_dim = q_rows / num_heads;
    if (head_dim == 0 || k_rows % head_dim != 0) {
        return num_heads;
    }
    const std::size_t kv_heads = k_rows / head_dim;
    return kv_heads > 0 && num_heads % kv_heads == 0 ? kv_heads : num_heads;
}

} // namespace attn::model
