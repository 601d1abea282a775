// A block's tensors by the architecture's names: read, shape-checked against the config,
// fused ones split and Conv1D ones transposed (reshaping only; the numbers are the core's).
#include "attn/model/weights.hpp"

#include "attn/error.hpp"
#include "attn/io/number_text.hpp"
#include "attn/model/gguf_model.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

namespace attn::model {

namespace {

/// A dimension the config does not fix (the MLP's width, the vocabulary).
constexpr std::size_t kAny = static_cast<std::size_t>(-1);

std::string shape_text(const std::vector<std::size_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        out += (i ? ", " : "") + (s[i] == kAny ? std::string("*") : std::to_string(s[i]));
    }
    return out + "]";
}

/// A weight as its file stores it, in nn.Linear's layout [rows, cols], multiplied there
/// (stored_matmul) instead of read as float32: `row_of` undoes what the file's converter
/// did to its rows (llama.cpp's Q/K permutation; empty: none).
struct StoredLinear {
    std::shared_ptr<const StoredTensor> tensor;
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::vector<std::size_t> row_of;
    Activations activations = Activations::f32;

    /// The weight's rows `part` (null: all of them) as the core's StoredWeight.
    StoredWeight weight(const std::vector<std::size_t>* part = nullptr) const {
        struct Kept { // what the product reads, alive as long as the weight
            std::shared_ptr<const StoredTensor> tensor;
            std::vector<std::size_t> rows;
        };
        auto kept = std::make_shared<Kept>(Kept{tensor, {}});
        if (part != nullptr) {
            for (const std::size_t r : *part) {
                kept->rows.push_back(row_of.empty() ? r : row_of[r]);
            }
        } else {
            kept->rows = row_of;
        }
        const std::size_t n = part != nullptr ? part->size() : rows;
        return stored_weight({tensor->type, n, cols, tensor->bytes, kept->rows}, kept, activations);
    }
};

template <class T> struct Reader {
    const ModelFolder& folder;
    const ModelSpec& spec;
    std::string prefix;      ///< root (+ the layer's prefix)
    bool stored_f32 = false; ///< F32 weights multiplied as stored too (load_block)
    Activations activations = Activations::f32; ///< the stored products' (load_block)

    std::string note() const {
        return " (config: hidden size " + std::to_string(spec.hidden) + ", heads " +
               std::to_string(spec.heads) + ", kv heads " + std::to_string(spec.kv_heads) +
               ", head dim " + std::to_string(spec.head_dim) + ")";
    }

    bool has(const std::string& name) const { return folder.find(prefix + name) != nullptr; }

    /// The tensor's entry, its shape checked against `want` (kAny: any size).
    const TensorInfo& entry(const std::string& name, const std::vector<std::size_t>& want) const {
        const std::string full = prefix + name;
        const TensorInfo* e = folder.find(full);
        if (e == nullptr) {
            throw InputError(folder.path().string() + ": the " + spec.arch.model_type +
                             " model has no tensor '" + full + "'");
        }
        bool ok = e->shape.size() == want.size();
        for (std::size_t i = 0; ok && i < want.size(); ++i) {
            ok = want[i] == kAny || want[i] == e->shape[i];
        }
        if (!ok) {
            throw InputError(folder.path().string() + ": " + full + ": expected shape " +
                             shape_text(want) + ", got " + shape_text(e->shape) + note());
        }
        return *e;
    }
    /// The tensor, its shape checked against `want` (kAny: any size).
    io::Array get(const std::string& name, const std::vector<std::size_t>& want) const {
        entry(name, want);
        return folder.read(prefix + name);
    }

    BasicMatrix<T> matrix(const std::string& name, std::size_t rows, std::size_t cols) const {
        const io::Array a = get(name, {rows, cols});
        BasicMatrix<T> m = BasicMatrix<T>::from_shape({a.shape[0], a.shape[1]});
        std::copy(a.values.begin(), a.values.end(), m.data());
        return m;
    }
    /// A Conv1D weight [in, out] as nn.Linear's [out, in].
    BasicMatrix<T> conv1d(const std::string& name, std::size_t in, std::size_t out) const {
        const io::Array a = get(name, {in, out});
        const std::size_t rows = a.shape[0], cols = a.shape[1];
        BasicMatrix<T> m = BasicMatrix<T>::from_shape({cols, rows});
        T* dst = m.data();
        // In 64 x 64 tiles: a row-by-row transpose writes a column per value, a cache miss
        // each (a third of a GPT-2 run's time went there).
        constexpr std::size_t tile = 64;
        for (std::size_t i0 = 0; i0 < rows; i0 += tile) {
            for (std::size_t j0 = 0; j0 < cols; j0 += tile) {
                for (std::size_t j = j0; j < std::min(cols, j0 + tile); ++j) {
                    for (std::size_t i = i0; i < std::min(rows, i0 + tile); ++i) {
                        dst[j * rows + i] = static_cast<T>(a.values[i * cols + j]);
                    }
                }
            }
        }
        return m;
    }
    /// The weight `name` as stored, in nn.Linear's layout, when a float32 run multiplies it
    /// there (else empty: read it). Its shape as read is `want` (kAny: any size):
    /// [out, in], or a Conv1D weight's [in, out] (`conv1d`), which only a file that stores
    /// it transposed (a GGUF) holds in nn.Linear's layout.
    std::optional<StoredLinear> stored_linear(const std::string& name,
                                              const std::vector<std::size_t>& want,
                                              bool conv1d) const {
        if constexpr (!std::is_same_v<T, float>) {
            return std::nullopt; // precision f64: the dequantized float64 copy
        } else {
            const TensorInfo& info = entry(name, want);
            std::optional<StoredTensor> t = folder.stored(prefix + name);
            if (!t || !multiplied_in_place(*t, stored_f32) ||
                conv1d != (t->fix == StoredFix::transpose)) {
                return std::nullopt;
            }
            StoredLinear out{nullptr, t->shape[0], t->shape[1], {}, activations};
            if (t->fix == StoredFix::unpermute_q || t->fix == StoredFix::unpermute_k) {
                out.row_of =
                    unpermute_row_map(info.shape,
                                      t->fix == StoredFix::unpermute_q ? spec.heads : spec.kv_heads,
                                      folder.path().string() + ": " + prefix + name);
            } else if (t->fix == StoredFix::regroup_qkv) {
                out.row_of = regroup_qkv_row_map(info.shape,
                                                 spec.heads,
                                                 spec.kv_heads,
                                                 folder.path().string() + ": " + prefix + name);
            }
            out.tensor = std::make_shared<const StoredTensor>(std::move(*t));
            return out;
        }
    }
    /// The weight `name` [rows, cols] (nn.Linear) into `stored` when a float32 run
    /// multiplies it where it lies, else read into `dense`. Returns its rows.
    template <class Dense>
    std::size_t linear(const std::string& name,
                       std::size_t rows,
                       std::size_t cols,
                       Dense& dense,
                       std::optional<StoredWeight>& stored) const {
        if (const std::optional<StoredLinear> st = stored_linear(name, {rows, cols}, false)) {
            stored = st->weight();
            return st->rows;
        }
        dense = matrix(name, rows, cols);
        return dense_value(dense).shape()[0];
    }
    /// A Conv1D weight [in, out] as linear() does: stored (a GGUF's transposed copy is
    /// nn.Linear's layout) or read and transposed. Returns its out features.
    template <class Dense>
    std::size_t conv1d_linear(const std::string& name,
                              std::size_t in,
                              std::size_t out,
                              Dense& dense,
                              std::optional<StoredWeight>& stored) const {
        if (const std::optional<StoredLinear> st = stored_linear(name, {in, out}, true)) {
            stored = st->weight();
            return st->rows;
        }
        dense = conv1d(name, in, out);
        return dense_value(dense).shape()[0];
    }
    static const BasicMatrix<T>& dense_value(const BasicMatrix<T>& m) { return m; }
    static const BasicMatrix<T>& dense_value(const std::optional<BasicMatrix<T>>& m) { return *m; }
    /// Rows `rows` of a [*, cols] matrix, only those read.
    BasicMatrix<T>
    rows_of(const std::string& name, std::size_t cols, const std::vector<std::size_t>& rows) const {
        entry(name, {kAny, cols});
        const io::Array a = folder.read_rows(prefix + name, rows);
        BasicMatrix<T> m = BasicMatrix<T>::from_shape({a.shape[0], a.shape[1]});
        std::copy(a.values.begin(), a.values.end(), m.data());
        return m;
    }
    BasicVector<T> vector(const std::string& name, std::size_t n) const {
        const io::Array a = get(name, {n});
        BasicVector<T> v = BasicVector<T>::from_shape({a.shape[0]});
        std::copy(a.values.begin(), a.values.end(), v.data());
        return v;
    }
    std::optional<BasicVector<T>> bias(const std::string& name, std::size_t n) const {
        if (!has(name + ".bias")) {
            return std::nullopt;
        }
        return vector(name + ".bias", n);
    }
    /// `parts` tensors NAME.weight of `n` values each, "{}" in NAME replaced by 0, 1, ...,
    /// end to end (StableLM's per-head norms); one tensor when NAME has no "{}".
    BasicVector<T> joined(const std::string& name, std::size_t parts, std::size_t n) const {
        const std::size_t at = name.find("{}");
        if (at == std::string::npos) {
            return vector(name, n);
        }
        BasicVector<T> out = BasicVector<T>::from_shape({parts * n});
        for (std::size_t h = 0; h < parts; ++h) {
            std::string one = name;
            one.replace(at, 2, std::to_string(h));
            const BasicVector<T> v = vector(one, n);
            std::copy(v.begin(), v.end(), out.begin() + static_cast<std::ptrdiff_t>(h * n));
        }
        return out;
    }
    /// The norm `name` over `features` (0: the hidden size; "{}" in the name: `parts`
    /// tensors of features / parts each); none when the name is empty.
    std::optional<BasicNorm<T>>
    norm(const std::string& name, std::size_t features = 0, std::size_t parts = 1) const {
        if (name.empty()) {
            return std::nullopt;
        }
        const std::size_t e = features != 0 ? features : spec.hidden;
        const bool split = name.find("{}") != std::string::npos;
        const auto part = [&](const char* suffix) {
            return split ? joined(name + suffix, parts, e / parts) : vector(name + suffix, e);
        };
        BasicNorm<T> n;
        n.kind = spec.arch.norm;
        n.eps = spec.norm_eps;
        n.weight = part(".weight");
        for (T& w : n.weight) {
            w = static_cast<T>(w + static_cast<T>(spec.arch.norm_weight_offset));
        }
        if (spec.arch.norm == NormKind::layer_norm) {
            std::string first = name;
            if (split) {
                first.replace(first.find("{}"), 2, "0");
            }
            if (has(first + ".bias")) {
                n.bias = part(".bias");
            }
        }
        return n;
    }
};

/// Rows `rows` of m (a row index list) as a matrix of their own.
template <class T>
BasicMatrix<T> take_rows(const BasicMatrix<T>& m, const std::vector<std::size_t>& rows) {
    BasicMatrix<T> out = BasicMatrix<T>::from_shape({rows.size(), m.shape()[1]});
    for (std::size_t r = 0; r < rows.size(); ++r) {
        std::copy_n(&m(rows[r], 0), m.shape()[1], &out(r, 0));
    }
    return out;
}
template <class T>
BasicVector<T> take(const BasicVector<T>& v, const std::vector<std::size_t>& rows) {
    BasicVector<T> out = BasicVector<T>::from_shape({rows.size()});
    for (std::size_t r = 0; r < rows.size(); ++r) {
        out(r) = v(rows[r]);
    }
    return out;
}

/// The rows of a fused q|k|v tensor that make q (part 0), k (1) and v (2).
std::vector<std::size_t> fused_rows(const ModelSpec& s, QkvLayout layout, int part) {
    const std::size_t d = s.head_dim;
    std::vector<std::size_t> rows;
    if (layout == QkvLayout::per_head_fused) { // view(H, 3D): head h's q, k, v rows
        for (std::size_t h = 0; h < s.heads; ++h) {
            for (std::size_t i = 0; i < d; ++i) {
                rows.push_back(h * 3 * d + static_cast<std::size_t>(part) * d + i);
            }
        }
        return rows;
    }
    if (layout == QkvLayout::group_fused) { // view(Hkv, G + 2, D): G q heads, k, v
        const std::size_t g = s.heads / s.kv_heads;
        for (std::size_t kv = 0; kv < s.kv_heads; ++kv) {
            const std::size_t first = part == 0 ? 0 : g + static_cast<std::size_t>(part) - 1;
            const std::size_t count = part == 0 ? g : 1;
            for (std::size_t h = first; h < first + count; ++h) {
                for (std::size_t i = 0; i < d; ++i) {
                    rows.push_back((kv * (g + 2) + h) * d + i);
                }
            }
        }
        return rows;
    }
    // conv1d_fused and rows_fused: q rows, then k rows, then v rows.
    const std::size_t q = s.heads * d;
    const std::size_t kv = s.kv_heads * d;
    const std::size_t begin = part == 0 ? 0 : part == 1 ? q : q + kv;
    const std::size_t count = part == 0 ? q : kv;
    for (std::size_t i = 0; i < count; ++i) {
        rows.push_back(begin + i);
    }
    return rows;
}

/// A fused tensor's parts: its rows `parts[i]` as weight i, into stored[i] when the run
/// multiplies the tensor where it lies, else into dense[i] (the tensor read once).
template <class T, class Dense, std::size_t N>
void fused_parts(const std::optional<StoredLinear>& st,
                 const std::function<BasicMatrix<T>()>& read,
                 const std::array<std::vector<std::size_t>, N>& parts,
                 const std::array<Dense*, N>& dense,
                 const std::array<std::optional<StoredWeight>*, N>& stored) {
    if (st) {
        for (std::size_t i = 0; i < N; ++i) {
            *stored[i] = st->weight(&parts[i]);
        }
        return;
    }
    const BasicMatrix<T> w = read();
    for (std::size_t i = 0; i < N; ++i) {
        *dense[i] = take_rows(w, parts[i]);
    }
}

template <class T>
void load_attention(const Reader<T>& r, const ModelSpec& s, BasicProjections<T>& p) {
    const Architecture& a = s.arch;
    const std::size_t e = s.hidden;
    const std::size_t q = s.heads * s.head_dim;
    const std::size_t kv = s.kv_heads * s.head_dim;
    if (a.qkv == QkvLayout::separate) {
        r.linear(a.q + ".weight", q, e, p.w_q, p.stored_q);
        r.linear(a.k + ".weight", kv, e, p.w_k, p.stored_k);
        r.linear(a.v + ".weight", kv, e, p.w_v, p.stored_v);
        p.b_q = r.bias(a.q, q);
        p.b_k = r.bias(a.k, kv);
        p.b_v = r.bias(a.v, kv);
    } else {
        const std::size_t rows = q + 2 * kv;
        const bool conv = a.qkv == QkvLayout::conv1d_fused;
        const std::string name = a.q + ".weight";
        const std::array<std::vector<std::size_t>, 3> parts = {
            fused_rows(s, a.qkv, 0), fused_rows(s, a.qkv, 1), fused_rows(s, a.qkv, 2)};
        fused_parts<T>(
            conv ? r.stored_linear(name, {e, rows}, true) : r.stored_linear(name, {rows, e}, false),
            [&] { return conv ? r.conv1d(name, e, rows) : r.matrix(name, rows, e); },
            parts,
            std::array{&p.w_q, &p.w_k, &p.w_v},
            std::array{&p.stored_q, &p.stored_k, &p.stored_v});
        if (const std::optional<BasicVector<T>> b = r.bias(a.q, rows)) {
            p.b_q = take(*b, parts[0]);
            p.b_k = take(*b, parts[1]);
            p.b_v = take(*b, parts[2]);
        }
    }
    if (a.o_conv1d) {
        r.conv1d_linear(a.o + ".weight", q, e, p.w_o, p.stored_o);
    } else {
        r.linear(a.o + ".weight", e, q, p.w_o, p.stored_o);
    }
    p.b_o = r.bias(a.o, e);
}

template <class T> void load_mlp(const Reader<T>& r, const ModelSpec& s, BasicMlp<T>& m) {
    const Architecture& a = s.arch;
    const std::size_t e = s.hidden;
    switch (a.mlp) {
    case MlpLayout::plain:
    case MlpLayout::gated: {
        const std::size_t width = r.linear(a.up + ".weight", kAny, e, m.up, m.stored_up);
        m.up_bias = r.bias(a.up, width);
        if (a.mlp == MlpLayout::gated) {
            r.linear(a.gate + ".weight", width, e, m.gate, m.stored_gate);
            m.gate_bias = r.bias(a.gate, width);
        }
        r.linear(a.down + ".weight", e, width, m.down, m.stored_down);
        break;
    }
    case MlpLayout::plain_conv1d: {
        const std::size_t width = r.conv1d_linear(a.up + ".weight", e, kAny, m.up, m.stored_up);
        m.up_bias = r.bias(a.up, width);
        r.conv1d_linear(a.down + ".weight", width, e, m.down, m.stored_down);
        break;
    }
    case MlpLayout::gated_fused: {
        const std::string name = a.up + ".weight";
        const std::size_t rows = r.entry(name, {kAny, e}).shape[0];
        const std::size_t width = rows / 2;
        if (rows % 2 != 0) {
            throw InputError(r.folder.path().string() + ": " + r.prefix + name +
                             ": rows are not gate|up halves (odd count)");
        }
        std::array<std::vector<std::size_t>, 2> parts; // gate, up
        for (std::size_t i = 0; i < width; ++i) {
            parts[0].push_back(i);
            parts[1].push_back(width + i);
        }
        std::optional<BasicMatrix<T>> up;
        fused_parts<T>(
            r.stored_linear(name, {rows, e}, false),
            [&] { return r.matrix(name, rows, e); },
            parts,
            std::array{&m.gate, &up},
            std::array{&m.stored_gate, &m.stored_up});
        if (up) {
            m.up = std::move(*up);
        }
        r.linear(a.down + ".weight", e, width, m.down, m.stored_down);
        break;
    }
    }
    m.down_bias = r.bias(a.down, e);
}

/// The mixture of experts of a layer: its router (read now), each expert read only when a
/// token routes to it (BasicMoe::expert), the shared expert and its gate.
template <class T> BasicMoe<T> load_moe(const Reader<T>& r, const ModelSpec& spec) {
    const Architecture& a = spec.arch;
    BasicMoe<T> m;
    m.router = r.matrix(a.router + ".weight", spec.experts, spec.hidden);
    m.top_k = spec.experts_per_token;
    m.normalize = spec.normalize_experts;
    // An expert is a gated MLP under its own prefix: the spec's MLP names made the expert's.
    auto expert_spec = std::make_shared<ModelSpec>(spec);
    expert_spec->arch.mlp = MlpLayout::gated;
    expert_spec->arch.gate = a.expert_gate;
    expert_spec->arch.up = a.expert_up;
    expert_spec->arch.down = a.expert_down;
    const ModelFolder* folder = &r.folder;
    m.expert = [folder, expert_spec, prefix = r.prefix](std::size_t e) {
        std::string name = expert_spec->arch.expert;
        name.replace(name.find("{}"), 2, std::to_string(e));
        BasicMlp<T> mlp;
        load_mlp(Reader<T>{*folder, *expert_spec, prefix + name}, *expert_spec, mlp);
        return mlp;
    };
    if (!a.shared_expert.empty()) {
        ModelSpec shared_spec = *expert_spec;
        shared_spec.arch.gate = "gate_proj";
        shared_spec.arch.up = "up_proj";
        shared_spec.arch.down = "down_proj";
        m.shared.emplace();
        load_mlp(
            Reader<T>{r.folder, shared_spec, r.prefix + a.shared_expert}, shared_spec, *m.shared);
        m.shared_gate = r.matrix(a.shared_expert_gate + ".weight", 1, spec.hidden);
    }
    return m;
}

} // namespace

bool multiplied_in_place(const StoredTensor& t, bool stored_f32) {
    // F32 weights are read and multiplied by BLAS unless asked: a safetensors Conv1D weight
    // ([in, out]) cannot be multiplied as stored, and a GGUF's F32 copy of the same model
    // must give the same bits.
    return t.shape.size() == 2 && stored_matmul_supports(t.type) &&
           (stored_f32 || ggml_type_traits(t.type)->name != "F32") &&
           t.shape[1] % ggml_type_traits(t.type)->block == 0 &&
           (t.fix == StoredFix::none || t.fix == StoredFix::transpose ||
            t.fix == StoredFix::unpermute_q || t.fix == StoredFix::unpermute_k ||
            t.fix == StoredFix::regroup_qkv);
}

std::string layer_prefix(const ModelSpec& spec, std::size_t layer) {
    std::string p = spec.arch.layer;
    const std::size_t at = p.find("{}");
    if (at != std::string::npos) {
        p.replace(at, 2, std::to_string(layer));
    }
    return spec.root + p;
}

template <class T>
BasicBlockWeights<T> load_block(const ModelFolder& folder,
                                const ModelSpec& spec,
                                std::size_t layer,
                                bool stored_f32,
                                Activations activations) {
    const Reader<T> r{folder, spec, layer_prefix(spec, layer), stored_f32, activations};
    BasicBlockWeights<T> w;
    load_attention(r, spec, w.attention);
    const Architecture& a = spec.arch;
    w.attention_norm = r.norm(a.attention_norm);
    w.mlp_norm = r.norm(a.mlp_norm);
    w.attention_post_norm = r.norm(a.attention_post_norm);
    w.mlp_post_norm = r.norm(a.mlp_post_norm);
    // Over the projection: [H·D]; per head: [D], or [H·D] from one tensor per head.
    const auto qk = [&](const std::string& name, std::size_t heads) {
        const bool whole = a.qk_norm_scope == QkNormScope::projection;
        const bool split = name.find("{}") != std::string::npos;
        return r.norm(name, whole || split ? heads * spec.head_dim : spec.head_dim, heads);
    };
    w.q_norm = qk(a.q_norm, spec.heads);
    w.k_norm = qk(a.k_norm, spec.kv_heads);
    if (!a.router.empty() && (spec.dense_layers.empty() || !spec.dense_layers[layer])) {
        w.moe = load_moe(r, spec);
    } else {
        load_mlp(r, spec, w.mlp);
    }
    return w;
}

std::size_t vocabulary_size(const ModelFolder& folder, const ModelSpec& spec) {
    const Reader<float> r{folder, spec, spec.root};
    return r.entry(spec.arch.token_embedding, {kAny, spec.hidden}).shape[0];
}

template <class T>
ModelEmbeddings<T>
load_model_embeddings(const ModelFolder& folder, const ModelSpec& spec, const TokenIds& ids) {
    const Reader<T> r{folder, spec, spec.root};
    const Architecture& a = spec.arch;
    // The ids in use, each once and in order: the rows read; the ids renumbered to them.
    check_token_ids(ids, r.entry(a.token_embedding, {kAny, spec.hidden}).shape[0]);
    std::vector<std::size_t> used(ids.begin(), ids.end());
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    ModelEmbeddings<T> out{{}, ids};
    for (std::int64_t& id : out.ids) {
        const auto at = std::lower_bound(used.begin(), used.end(), static_cast<std::size_t>(id));
        id = static_cast<std::int64_t>(at - used.begin());
    }
    BasicEmbeddings<T>& e = out.tables;
    e.token = r.rows_of(a.token_embedding, spec.hidden, used);
    if (!a.position_embedding.empty()) {
        e.position = r.matrix(a.position_embedding, kAny, spec.hidden);
    }
    if (!a.token_type_embedding.empty() && r.has(a.token_type_embedding)) {
        e.token_type = r.matrix(a.token_type_embedding, kAny, spec.hidden);
    }
    if (!a.embedding_norm.empty()) {
        e.norm = r.norm(a.embedding_norm);
    }
    return out;
}

template <class T>
std::optional<BasicNorm<T>> load_final_norm(const ModelFolder& folder, const ModelSpec& spec) {
    const Reader<T> r{folder, spec, spec.root};
    return r.norm(spec.arch.final_norm);
}

void check_layer_count(const ModelFolder& folder, const ModelSpec& spec) {
    const std::string main = spec.arch.q + ".weight";
    const std::string last = layer_prefix(spec, spec.layers - 1) + main;
    const std::string next = layer_prefix(spec, spec.layers) + main;
    if (folder.find(last) == nullptr) {
        throw InputError(folder.path().string() + ": config says " + std::to_string(spec.layers) +
                         " layers but there is no '" + last + "'");
    }
    if (folder.find(next) != nullptr) {
        throw InputError(folder.path().string() + ": config says " + std::to_string(spec.layers) +
                         " layers but the tensors hold more ('" + next + "')");
    }
}

std::vector<std::pair<std::string, std::size_t>> layer_matrix_types(const ModelFolder& folder,
                                                                    const ModelSpec& spec) {
    const std::string layers = spec.root + spec.arch.layer.substr(0, spec.arch.layer.find("{}"));
    std::vector<std::pair<std::string, std::size_t>> out;
    for (const std::string& name : folder.names()) {
        const TensorInfo* t = folder.find(name);
        if (!name.starts_with(layers) || t == nullptr || t->shape.size() != 2) {
            continue;
        }
        const auto seen = std::find_if(
            out.begin(), out.end(), [&](const auto& e) { return e.first == t->dtype; });
        if (seen == out.end()) {
            out.emplace_back(t->dtype, 1);
        } else {
            ++seen->second;
        }
    }
    return out;
}

void check_activations(const ModelFolder& folder, const ModelSpec& spec, Activations activations) {
    if (activations == Activations::f32) {
        return;
    }
    for (const auto& [dtype, count] : layer_matrix_types(folder, spec)) {
        const std::optional<std::uint32_t> type = ggml_type_named(dtype);
        if (type &&
            !activations_rounding(*type, activations).empty()) { // the types the choice reaches
            return;
        }
    }
    throw InputError(option_name("activations") + " " + std::string(activations_name(activations)) +
                     ": rounds the inputs of " + std::string(activations_types(activations)) +
                     " weights' products, and the layers of " + folder.path().string() +
                     " have none (expected \"f32\" here)");
}

template BasicBlockWeights<float>
load_block<float>(const ModelFolder&, const ModelSpec&, std::size_t, bool, Activations);
template BasicBlockWeights<double>
load_block<double>(const ModelFolder&, const ModelSpec&, std::size_t, bool, Activations);
template ModelEmbeddings<float>
load_model_embeddings<float>(const ModelFolder&, const ModelSpec&, const TokenIds&);
template ModelEmbeddings<double>
load_model_embeddings<double>(const ModelFolder&, const ModelSpec&, const TokenIds&);
template std::optional<BasicNorm<float>> load_final_norm<float>(const ModelFolder&,
                                                                const ModelSpec&);
template std::optional<BasicNorm<double>> load_final_norm<double>(const ModelFolder&,
                                                                  const ModelSpec&);

} // namespace attn::model
