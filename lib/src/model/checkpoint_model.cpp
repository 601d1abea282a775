// The model-level tensors around a checkpoint layer: its pre-attention norm and the
// token embeddings, named per layout (one table).
#include "attn/model/checkpoint_model.hpp"

#include "attn/error.hpp"
#include "detail.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace attn::model {
namespace {

using detail::quote_name;

/// What a layout holds around its attention weights.
struct ModelNames {
    ParamsLayout layout;
    std::optional<NormKind> norm;
    std::string_view norm_name; ///< in the block: NAME.weight (and NAME.bias)
    double eps;
    bool rope;
    std::string_view token, position, token_type, embed_norm; ///< ends of names
};

const std::vector<ModelNames>& model_names() {
    static const std::vector<ModelNames> table = {
        {ParamsLayout::attn, std::nullopt, "", 1e-5, false, "", "", "", ""},
        {ParamsLayout::torch_mha, std::nullopt, "", 1e-5, false, "", "", "", ""},
        {ParamsLayout::gpt2,
         NormKind::layer_norm,
         "ln_1",
         1e-5,
         false,
         "wte.weight",
         "wpe.weight",
         "",
         ""},
        {ParamsLayout::llama,
         NormKind::rms_norm,
         "input_layernorm",
         1e-6,
         true,
         "embed_tokens.weight",
         "",
         "",
         ""},
        {ParamsLayout::opt, std::nullopt, "", 1e-5, false, "", "", "", ""},
        {ParamsLayout::bert,
         std::nullopt,
         "",
         1e-12,
         false,
         "embeddings.word_embeddings.weight",
         "embeddings.position_embeddings.weight",
         "embeddings.token_type_embeddings.weight",
         "embeddings.LayerNorm"},
    };
    return table;
}

const ModelNames& names_of(ParamsLayout layout) {
    const auto& t = model_names();
    const auto it = std::find_if(
        t.begin(), t.end(), [layout](const ModelNames& m) { return m.layout == layout; });
    ATTN_ASSERT(it != t.end());
    return *it;
}

/// Reads a tensor and records it as a source; checks its rank.
io::Array read_tensor(const SafetensorsFile& file,
                      const SafetensorsEntry& e,
                      std::size_t rank,
                      std::vector<io::ProblemSource>& sources) {
    io::Array a;
    try {
        a = file.read(e);
    } catch (const InputError& err) {
        throw InputError(std::string("params: ") + err.marked());
    }
    if (a.shape.size() != rank) {
        throw InputError::rank(
            "params: " + file.shown() + ": tensor " + quote_name(e.name), rank, "tensor", a.shape);
    }
    sources.push_back({"params." + e.name, {}, a.shape, std::nullopt, 0.0f});
    return a;
}

template <std::size_t N> xt::xtensor<float, N> to_xt(const io::Array& a) {
    typename xt::xtensor<float, N>::shape_type shape;
    std::copy(a.shape.begin(), a.shape.end(), shape.begin());
    auto t = xt::xtensor<float, N>::from_shape(shape);
    std::copy(a.values.begin(), a.values.end(), t.begin());
    return t;
}

/// The one tensor whose name ends in `end` at a '.' boundary (or is `end`).
const SafetensorsEntry* find_ending(const SafetensorsHeader& h, std::string_view end) {
    const SafetensorsEntry* found = nullptr;
    for (const SafetensorsEntry& e : h.tensors) {
        const std::string& n = e.name;
        if (n.size() >= end.size() && n.compare(n.size() - end.size(), end.size(), end) == 0 &&
            (n.size() == end.size() || n[n.size() - end.size() - 1] == '.')) {
            if (found == nullptr || n.size() < found->name.size()) {
                found = &e; // the shortest: the model's own, not a nested copy
            }
        }
    }
    return found;
}

/// The first integer component of a prefix ("model.layers.12.self_attn." -> 12), or -1.
long long layer_number(const std::string& prefix) {
    std::size_t start = 0;
    while (start < prefix.size()) {
        const std::size_t dot = prefix.find('.', start);
        const std::string part =
            prefix.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!part.empty() && part.size() < 18 &&
            std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return std::stoll(part);
        }
        if (dot == std::string::npos) {
            break;
        }
        start = dot + 1;
    }
    return -1;
}

} // namespace

std::optional<CheckpointLayers> checkpoint_layers(const SafetensorsHeader& header) {
    std::map<ParamsLayout, std::set<std::string>> found;
    for (const SafetensorsEntry& t : header.tensors) {
        const std::string& n = t.name;
        for (std::size_t cut = 0;; cut = n.find('.', cut) + 1) {
            for (const ParamsLayout layout : detect_layouts({n.substr(cut)})) {
                found[layout].insert(n.substr(0, cut));
            }
            if (n.find('.', cut) == std::string::npos) {
                break;
            }
        }
    }
    if (found.empty()) {
        return std::nullopt;
    }
    const auto most =
        std::max_element(found.begin(), found.end(), [](const auto& a, const auto& b) {
            return a.second.size() < b.second.size();
        });
    CheckpointLayers out{most->first, {most->second.begin(), most->second.end()}};
    std::stable_sort(
        out.prefixes.begin(), out.prefixes.end(), [](const std::string& a, const std::string& b) {
            return layer_number(a) < layer_number(b);
        });
    return out;
}

std::string block_prefix(std::string_view prefix) {
    std::string_view p = prefix;
    if (!p.empty() && p.back() == '.') {
        p.remove_suffix(1);
    }
    const std::size_t dot = p.rfind('.');
    return dot == std::string_view::npos ? std::string() : std::string(p.substr(0, dot + 1));
}

std::optional<NormKind> layout_norm_kind(ParamsLayout layout) {
    return names_of(layout).norm;
}

std::string_view layout_norm_name(ParamsLayout layout) {
    return names_of(layout).norm_name;
}

bool layout_uses_rope(ParamsLayout layout) {
    return names_of(layout).rope;
}

double layout_default_norm_eps(ParamsLayout layout) {
    return names_of(layout).eps;
}

std::optional<Norm> load_layer_norm(const SafetensorsFile& file,
                                    ParamsLayout layout,
                                    std::string_view prefix,
                                    double eps,
                                    std::vector<io::ProblemSource>& sources) {
    const ModelNames& m = names_of(layout);
    if (!m.norm) {
        return std::nullopt;
    }
    const std::string base = block_prefix(prefix) + std::string(m.norm_name);
    const SafetensorsEntry* w = file.header().find(base + ".weight");
    if (w == nullptr) {
        return std::nullopt;
    }
    Norm n;
    n.kind = *m.norm;
    n.eps = eps;
    n.name = m.norm_name.data(); // a literal of the table
    n.weight = to_xt<1>(read_tensor(file, *w, 1, sources));
    if (*m.norm == NormKind::layer_norm) {
        if (const SafetensorsEntry* b = file.header().find(base + ".bias")) {
            n.bias = to_xt<1>(read_tensor(file, *b, 1, sources));
        }
    }
    return n;
}

Embeddings load_embeddings(const SafetensorsFile& file,
                           ParamsLayout layout,
                           double norm_eps,
                           std::vector<io::ProblemSource>& sources) {
    const ModelNames& m = names_of(layout);
    if (m.token.empty()) {
        throw InputError("token_ids: the " + std::string(layout_name(layout)) +
                         " layout has no token embeddings (gpt2, llama and bert have)");
    }
    const auto required = [&](std::string_view end) -> const SafetensorsEntry& {
        const SafetensorsEntry* e = find_ending(file.header(), end);
        if (e == nullptr) {
            throw InputError("token_ids: " + file.shown() + ": no tensor " +
                             quote_name(std::string(end)) + " (the " +
                             std::string(layout_name(layout)) + " token embeddings)");
        }
        return *e;
    };
    const SafetensorsEntry& token = required(m.token);
    // The model root: the same prefix for every other table.
    const std::string root = token.name.substr(0, token.name.size() - m.token.size());
    const auto at_root = [&](std::string_view end) -> const SafetensorsEntry& {
        const SafetensorsEntry* e = file.header().find(root + std::string(end));
        return e != nullptr ? *e : required(end);
    };
    Embeddings e;
    e.token = to_xt<2>(read_tensor(file, token, 2, sources));
    if (!m.position.empty()) {
        e.position = to_xt<2>(read_tensor(file, at_root(m.position), 2, sources));
    }
    if (!m.token_type.empty()) {
        e.token_type = to_xt<2>(read_tensor(file, at_root(m.token_type), 2, sources));
    }
    if (!m.embed_norm.empty()) {
        Norm n;
        n.kind = NormKind::layer_norm;
        n.eps = norm_eps;
        n.name = "embeddings.LayerNorm";
        n.weight =
            to_xt<1>(read_tensor(file, at_root(std::string(m.embed_norm) + ".weight"), 1, sources));
        n.bias =
            to_xt<1>(read_tensor(file, at_root(std::string(m.embed_norm) + ".bias"), 1, sources));
        e.norm = std::move(n);
    }
    return e;
}

} // namespace attn::model
