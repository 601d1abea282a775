// A GGUF file as the Hugging Face model it came from: llama.cpp's tensor names mapped back
// (gguf_names.cpp), the converter's changes undone (convert_hf_to_gguf.py: LlamaModel.permute,
// Gemma's norm + 1, GPT-2's transposes, BLOOM's and Falcon's q|k|v, stacked experts and
// StableLM's stacked norms read one slice at a time), and the {arch}.* metadata as
// config.json's keys. No forward pass here.
#include "attn/model/gguf_model.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/model/quants.hpp"
#include "detail.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace attn::model {
namespace {

using detail::quote_name;

// ---- metadata --------------------------------------------------------------------------------

struct Meta {
    const GgufHeader& h;
    std::string name;
    std::string arch;
    const GgufFile* data = nullptr;

    const GgufValue* find(std::string_view key) const { return h.find_value(key); }

    std::optional<std::uint64_t> uint(const std::string& key, bool required) const {
        const GgufValue* v = find(key);
        if (v == nullptr) {
            if (required) {
                throw InputError(name + ": metadata " + quote_name(key) +
                                 " is missing (llama.cpp's converter writes it)");
            }
            return std::nullopt;
        }
        if (v->type == GgufType::array) {
            throw InputError(name + ": metadata " + quote_name(key) +
                             ": per-layer values (an array) are not supported");
        }
        const auto u = v->as_uint();
        if (!u) {
            throw InputError(name + ": metadata " + quote_name(key) +
                             ": expected a non-negative integer, got " +
                             std::string(gguf_type_name(v->type)));
        }
        return u;
    }

    /// A float as the converter was given it: float32 metadata as its shortest decimal.
    std::optional<double> real(const std::string& key) const {
        const GgufValue* v = find(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        const auto d = v->as_decimal();
        if (!d || v->type == GgufType::boolean) {
            throw InputError(name + ": metadata " + quote_name(key) + ": expected a number, got " +
                             std::string(gguf_type_name(v->type)));
        }
        return d;
    }

    std::optional<bool> boolean(const std::string& key) const {
        const GgufValue* v = find(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        if (v->type != GgufType::boolean) {
            throw InputError(name + ": metadata " + quote_name(key) + ": expected a bool, got " +
                             std::string(gguf_type_name(v->type)));
        }
        return v->bits != 0;
    }

    std::optional<std::string> text(const std::string& key) const {
        const GgufValue* v = find(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        if (v->type != GgufType::string) {
            throw InputError(name + ": metadata " + quote_name(key) + ": expected a string, got " +
                             std::string(gguf_type_name(v->type)));
        }
        return v->text;
    }
};

constexpr std::string_view kRopeFreqs = "rope_freqs.weight";

/// Llama 3's per-frequency divisors as config.json's rope_scaling (gguf_llama3_rope_scaling).
void add_rope_freqs(const Meta& m,
                    std::size_t head_dim,
                    const std::string& type,
                    nlohmann::json& c) {
    const std::string what = m.name + ": tensor 'rope_freqs.weight'";
    if (type != "none") {
        throw InputError(what + " and rope scaling " + quote_name(type) +
                         " both scale RoPE (not supported together)");
    }
    if (m.data == nullptr) {
        throw InputError(what + ": llama 3's RoPE factors need the file's data");
    }
    const io::Array f = m.data->read(kRopeFreqs);
    const std::size_t dim = static_cast<std::size_t>(c.value("partial_rotary_factor", 1.0) *
                                                     static_cast<double>(head_dim));
    const nlohmann::json scaling =
        gguf_llama3_rope_scaling(f.values, c.value("rope_theta", 10000.0), dim, what);
    if (!scaling.is_null()) {
        c["rope_scaling"] = scaling;
    }
}

void add_rope(const Meta& m, std::size_t head_dim, nlohmann::json& c) {
    const std::string p = m.arch + ".rope.";
    if (const auto base = m.real(p + "freq_base")) {
        c["rope_theta"] = *base;
    }
    if (const auto dims = m.uint(p + "dimension_count", false)) {
        if (*dims == 0 || *dims > head_dim || *dims % 2 != 0) {
            throw InputError(m.name + ": metadata " + quote_name(p + "dimension_count") + " " +
                             std::to_string(*dims) + " does not fit heads of " +
                             std::to_string(head_dim) + " (an even count up to the head dim)");
        }
        // phi and stablelm rotate part of each head by default: their factor always.
        if (*dims < head_dim || c["model_type"] == "phi" || c["model_type"] == "stablelm") {
            c["partial_rotary_factor"] = static_cast<double>(*dims) / static_cast<double>(head_dim);
        }
    }
    const std::string type = m.text(p + "scaling.type").value_or("none");
    if (m.h.find(kRopeFreqs) != nullptr) {
        add_rope_freqs(m, head_dim, type, c);
        return;
    }
    if (type == "none") {
        return;
    }
    const auto factor = m.real(p + "scaling.factor");
    if (!factor) {
        throw InputError(m.name + ": metadata " + quote_name(p + "scaling.factor") +
                         " is missing (rope scaling " + type + ")");
    }
    if (type == "linear") {
        c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", *factor}};
    } else if (type == "yarn") {
        c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", *factor}};
        if (const auto orig = m.uint(p + "scaling.original_context_length", false)) {
            c["rope_scaling"]["original_max_position_embeddings"] = *orig;
        }
    } else {
        throw InputError(m.name + ": metadata " + quote_name(p + "scaling.type") +
                         ": rope scaling " + quote_name(type) + " is not supported (none, linear)");
    }
}

/// Gemma 2's and 3's scores: llama.cpp's f_attention_scale (llama-model.cpp), the GGUF
/// holding no query_pre_attn_scalar: embedding / heads for the 27B models (46 and 62
/// layers), else the head dim; the window and its layers, Gemma 3's local RoPE base.
void add_gemma_config(const Meta& m, const std::string& type, nlohmann::json& c) {
    const std::string p = m.arch + ".";
    const auto layers = c["num_hidden_layers"].get<std::uint64_t>();
    const bool big = layers == (type == "gemma2" ? 46U : 62U);
    c["query_pre_attn_scalar"] =
        big ? c["hidden_size"].get<std::uint64_t>() / c["num_attention_heads"].get<std::uint64_t>()
            : c["head_dim"].get<std::uint64_t>();
    if (const auto cap = m.real(p + "attn_logit_softcapping")) {
        c["attn_logit_softcapping"] = *cap;
    } else if (type == "gemma3_text") {
        c["attn_logit_softcapping"] = nullptr;
    }
    if (type == "gemma3_text") { // no window without the key; pattern 6 (set_swa_pattern)
        if (!c.contains("sliding_window")) {
            c["sliding_window"] = nullptr;
        }
        c["sliding_window_pattern"] = 6;
        c["rope_local_base_freq"] =
            m.real(p + "rope.freq_base_swa").value_or(c.value("rope_theta", 10000.0));
    }
}

/// The mixtures: expert counts, the experts' widths; llama.cpp's qwen2moe graph never
/// renormalizes the top-k weights (norm_w false), Mixtral's always does.
void add_moe_config(const Meta& m, const std::string& type, nlohmann::json& c) {
    const std::string p = m.arch + ".";
    const std::uint64_t experts = *m.uint(p + "expert_count", true);
    const std::uint64_t used = *m.uint(p + "expert_used_count", true);
    c[type == "mixtral" ? "num_local_experts" : "num_experts"] = experts;
    c["num_experts_per_tok"] = used;
    if (type == "qwen2_moe") {
        c["norm_topk_prob"] = false;
        if (const auto ff = m.uint(p + "expert_feed_forward_length", false)) {
            c["moe_intermediate_size"] = *ff;
        }
        if (const auto ff = m.uint(p + "expert_shared_feed_forward_length", false)) {
            c["shared_expert_intermediate_size"] = *ff;
        }
    }
}

/// The switches config.json would hold that the architecture's GGUF writes otherwise.
void add_arch_config(const Meta& m, const std::string& type, nlohmann::json& c) {
    const std::string p = m.arch + ".";
    const auto kv = c["num_key_value_heads"].get<std::uint64_t>();
    if (type == "gemma2" || type == "gemma3_text") {
        add_gemma_config(m, type, c);
    } else if (type == "mixtral" || type == "qwen2_moe") {
        add_moe_config(m, type, c);
    } else if (type == "phi" || type == "stablelm") {
        // qk_layernorm: StableLMModel stacks the per-head norms into attn_q_norm.
        c["qk_layernorm"] = m.h.find("blk.0.attn_q_norm.weight") != nullptr;
        if (type == "stablelm") { // StableLMModel writes it (true when the config had none)
            c["use_parallel_residual"] = m.boolean(p + "use_parallel_residual").value_or(false);
        }
    } else if (type == "gpt_bigcode") { // StarCoderModel: always one kv head
        if (kv != 1) {
            throw InputError(m.name + ": metadata: starcoder with " + std::to_string(kv) +
                             " kv heads is not supported (the converter writes multi-query: 1)");
        }
        c["multi_query"] = true;
    } else if (type == "falcon") { // llama.cpp's falcon graph: always parallel attention
        const bool two_norms = m.h.find("blk.0.attn_norm_2.weight") != nullptr;
        c["parallel_attn"] = true;
        if (kv > 1 || two_norms) { // Falcon 40B/180B: kv groups, FalconModel's q|k|v
            c["new_decoder_architecture"] = true;
            c["num_kv_heads"] = kv;
            c["num_ln_in_parallel_attn"] = two_norms ? 2 : 1;
        } else {
            c["multi_query"] = true;
        }
    }
}

} // namespace

nlohmann::json gguf_hf_config(const GgufHeader& h, std::string_view name_in, const GgufFile* data) {
    Meta m{h, std::string(name_in), "", data};
    const auto arch = m.text("general.architecture");
    if (!arch) {
        throw InputError(m.name + ": metadata 'general.architecture' is missing");
    }
    m.arch = *arch;
    const std::string p = m.arch + ".";
    const auto type = gguf_hf_model_type(m.arch, m.uint(p + "expert_count", false).value_or(0) > 0);
    if (!type) {
        throw InputError(m.name + ": architecture " + quote_name(*arch) +
                         " is not supported (GGUF architectures: " +
                         std::string(gguf_architecture_names()) + ")");
    }
    nlohmann::json c = {{"model_type", *type}};
    const std::uint64_t heads = *m.uint(p + "attention.head_count", true);
    const std::uint64_t kv = m.uint(p + "attention.head_count_kv", false).value_or(heads);
    const std::uint64_t embd = *m.uint(p + "embedding_length", true);
    if (heads == 0 || kv == 0 || heads % kv != 0) {
        throw InputError(m.name + ": metadata: " + std::to_string(heads) + " heads and " +
                         std::to_string(kv) + " kv heads (kv heads must divide heads)");
    }
    std::uint64_t head_dim = embd / heads;
    if (const auto key_length = m.uint(p + "attention.key_length", false)) {
        head_dim = *key_length;
        const auto value_length = m.uint(p + "attention.value_length", false);
        if (value_length && *value_length != *key_length) {
            throw InputError(m.name + ": metadata: key length " + std::to_string(*key_length) +
                             " and value length " + std::to_string(*value_length) +
                             " differ (not supported)");
        }
    } else if (embd % heads != 0) {
        throw InputError(m.name + ": metadata: embedding length " + std::to_string(embd) +
                         " does not split into " + std::to_string(heads) + " heads");
    }
    c["num_attention_heads"] = heads;
    c["num_key_value_heads"] = kv;
    c["head_dim"] = head_dim;
    c["hidden_size"] = embd;
    c["num_hidden_layers"] = *m.uint(p + "block_count", true);
    if (const auto ff = m.uint(p + "feed_forward_length", false)) {
        c["intermediate_size"] = *ff;
    }
    if (const auto ctx = m.uint(p + "context_length", false)) {
        c["max_position_embeddings"] = *ctx;
    }
    if (const auto vocab = m.uint(p + "vocab_size", false)) {
        c["vocab_size"] = *vocab;
    } else if (const GgufValue* tokens = m.find("tokenizer.ggml.tokens");
               tokens != nullptr && tokens->type == GgufType::array) {
        c["vocab_size"] = tokens->count;
    } else if (const GgufTensor* t = h.find("token_embd.weight");
               t != nullptr && !t->shape.empty()) {
        c["vocab_size"] = t->shape[0];
    }
    if (m.arch == "gpt2") {
        c["layer_norm_epsilon"] = m.real(p + "attention.layer_norm_epsilon").value_or(1e-5);
    } else {
        if (const auto eps = m.real(p + "attention.layer_norm_rms_epsilon")) {
            c["rms_norm_eps"] = *eps;
        } else if (const auto ln_eps = m.real(p + "attention.layer_norm_epsilon")) {
            c["layer_norm_epsilon"] = *ln_eps;
        }
        add_rope(m, static_cast<std::size_t>(head_dim), c);
    }
    if (const auto window = m.uint(p + "attention.sliding_window", false)) {
        c["sliding_window"] = *window;
    }
    add_arch_config(m, *type, c);
    c["tie_word_embeddings"] = h.find("output.weight") == nullptr;
    for (const char* key : {"bos_token_id", "eos_token_id"}) {
        if (const auto id = m.uint(std::string("tokenizer.ggml.") + key, false)) {
            c[key] = *id;
        }
    }
    return c;
}

std::vector<std::size_t> unpermute_row_map(const std::vector<std::size_t>& shape,
                                           std::size_t n_head,
                                           std::string_view what) {
    const std::size_t rows = shape.empty() ? 0 : shape[0];
    if (shape.empty() || shape.size() > 2 || n_head == 0 || rows % (2 * n_head) != 0) {
        throw InputError(std::string(what) + ": shape " + shape_string(shape) +
                         " does not split into " + std::to_string(n_head) +
                         " heads of even size (llama.cpp's Q/K permutation)");
    }
    const std::size_t head = rows / n_head;
    const std::size_t half = head / 2;
    std::vector<std::size_t> map(rows);
    for (std::size_t h = 0; h < n_head; ++h) {
        for (std::size_t i = 0; i < half; ++i) {
            for (std::size_t j = 0; j < 2; ++j) {
                map[h * head + j * half + i] = h * head + 2 * i + j; // model row <- file row
            }
        }
    }
    return map;
}

std::vector<std::size_t> regroup_qkv_row_map(const std::vector<std::size_t>& shape,
                                             std::size_t heads,
                                             std::size_t kv_heads,
                                             std::string_view what) {
    const std::size_t rows = shape.empty() ? 0 : shape[0];
    const std::size_t parts = heads + 2 * kv_heads;
    if (shape.empty() || shape.size() > 2 || kv_heads == 0 || heads % kv_heads != 0 ||
        rows % parts != 0) {
        throw InputError(std::string(what) + ": shape " + shape_string(shape) +
                         " does not split into " + std::to_string(heads) + " query and " +
                         std::to_string(kv_heads) + " key and value heads (q|k|v rows)");
    }
    const std::size_t dim = rows / parts;
    const std::size_t group = heads / kv_heads; // query heads per kv head
    std::vector<std::size_t> map(rows);
    for (std::size_t g = 0; g < kv_heads; ++g) {
        for (std::size_t slot = 0; slot < group + 2; ++slot) {
            const std::size_t from = slot < group    ? (g * group + slot) * dim
                                     : slot == group ? (heads + g) * dim
                                                     : (heads + kv_heads + g) * dim;
            for (std::size_t d = 0; d < dim; ++d) {
                map[(g * (group + 2) + slot) * dim + d] = from + d; // model row <- file row
            }
        }
    }
    return map;
}

namespace {

/// w's rows (of a [rows] or [rows, cols] array) reordered: row `to` becomes file row map[to].
void apply_row_map(io::Array& w, const std::vector<std::size_t>& map) {
    const std::size_t cols = w.shape.size() == 2 ? w.shape[1] : 1;
    std::vector<float> out(w.values.size());
    for (std::size_t to = 0; to < map.size(); ++to) {
        std::copy_n(w.values.begin() + static_cast<std::ptrdiff_t>(map[to] * cols),
                    cols,
                    out.begin() + static_cast<std::ptrdiff_t>(to * cols));
    }
    w.values = std::move(out);
}

/// Slice `index` of t's first (numpy) dimension, as a tensor inside t's data.
GgufTensor slice_of(const GgufTensor& t, std::size_t index) {
    GgufTensor one = t;
    one.shape.erase(one.shape.begin());
    one.dims.pop_back();
    one.bytes = t.bytes / t.shape[0]; // each slice whole rows of whole blocks (header checks)
    one.offset = t.offset + index * one.bytes;
    return one;
}

} // namespace

void unpermute_rows(io::Array& w, std::size_t n_head, std::string_view what) {
    apply_row_map(w, unpermute_row_map(w.shape, n_head, what));
}

GgufModel::GgufModel(const std::filesystem::path& path) : file_(path) {
    const GgufHeader& h = file_.header();
    config_ = gguf_hf_config(h, file_.shown(), &file_);
    arch_ = config_["model_type"].get<std::string>();
    for (const GgufTensor& t : h.tensors) {
        if (t.name == kRopeFreqs) { // read into the config's rope_scaling
            continue;
        }
        auto mapped = gguf_to_hf(
            arch_, t.name, config_.value("num_ln_in_parallel_attn", std::uint64_t{1}) == 2);
        if (!mapped) {
            throw InputError(file_.shown() + ": tensor " + quote_name(t.name) +
                             " has no Hugging Face name for architecture " + arch_ +
                             " (attn maps llama.cpp's token_embd, blk.N.attn_*, blk.N.ffn_*, "
                             "output_norm, output)");
        }
        const std::string dtype(ggml_type_traits(t.type)->name);
        const std::size_t at = mapped->first.find("{}");
        if (at != std::string::npos) { // stacked: one Hugging Face tensor per slice
            if (t.shape.size() < 2) {
                throw InputError(file_.shown() + ": tensor " + quote_name(t.name) +
                                 ": expected a stack of tensors, got shape " +
                                 shape_string(t.shape));
            }
            for (std::size_t i = 0; i < t.shape[0]; ++i) {
                std::string name = mapped->first;
                name.replace(at, 2, std::to_string(i));
                GgufSource one = mapped->second;
                one.slice = i;
                if (sources_.emplace(name, std::move(one)).second) {
                    add(TensorInfo{name, dtype, slice_of(t, i).shape});
                }
            }
            continue;
        }
        TensorInfo info{mapped->first, dtype, t.shape};
        if (mapped->second.fix == GgufFix::transpose && info.shape.size() == 2) {
            std::swap(info.shape[0], info.shape[1]);
        }
        if (sources_.emplace(std::move(mapped->first), std::move(mapped->second)).second) {
            add(std::move(info));
        }
    }
}

GgufTensor GgufModel::tensor_of(const GgufSource& s) const {
    const GgufTensor& t = *file_.header().find(s.gguf_name);
    return s.slice ? slice_of(t, *s.slice) : t;
}

const GgufSource* GgufModel::source(std::string_view hf_name) const {
    const auto it = sources_.find(hf_name);
    return it == sources_.end() ? nullptr : &it->second;
}

const GgufSource& GgufModel::require(std::string_view hf_name) const {
    const GgufSource* s = source(hf_name);
    if (s == nullptr) {
        throw InputError(file_.shown() + ": no tensor " + quote_name(hf_name));
    }
    return *s;
}

std::optional<StoredTensor> GgufModel::stored(std::string_view hf_name) const {
    const GgufSource& s = require(hf_name);
    const GgufTensor t = tensor_of(s);
    StoredTensor out;
    out.type = t.type;
    out.shape = t.shape;
    out.bytes = file_.raw(t);
    out.fix = s.fix;
    return out;
}

io::Array GgufModel::read_rows(std::string_view hf_name, std::span<const std::size_t> rows) const {
    const GgufSource* s = source(hf_name);
    if (s != nullptr && s->fix == GgufFix::none) {
        return file_.read_rows(tensor_of(*s), rows);
    }
    const io::Array whole = read(hf_name);
    const std::size_t columns = io::detail::check_matrix_rows(
        whole.shape, rows, file_.shown() + ": tensor " + quote_name(hf_name) + ": ");
    io::Array out;
    out.shape = {rows.size(), columns};
    out.dtype = whole.dtype;
    out.values.reserve(rows.size() * columns);
    for (const std::size_t r : rows) {
        const auto begin = whole.values.begin() + static_cast<std::ptrdiff_t>(r * columns);
        out.values.insert(out.values.end(), begin, begin + static_cast<std::ptrdiff_t>(columns));
    }
    return out;
}

io::Array GgufModel::read(std::string_view hf_name) const {
    const GgufSource* s = &require(hf_name);
    io::Array a = file_.read(tensor_of(*s));
    const std::string what = file_.shown() + ": tensor " + quote_name(s->gguf_name);
    switch (s->fix) {
    case GgufFix::none:
        break;
    case GgufFix::regroup_qkv:
        apply_row_map(a,
                      regroup_qkv_row_map(a.shape,
                                          config_["num_attention_heads"].get<std::size_t>(),
                                          config_["num_key_value_heads"].get<std::size_t>(),
                                          what));
        break;
    case GgufFix::unpermute_q:
        unpermute_rows(a, config_["num_attention_heads"].get<std::size_t>(), what);
        break;
    case GgufFix::unpermute_k:
        unpermute_rows(a, config_["num_key_value_heads"].get<std::size_t>(), what);
        break;
    case GgufFix::minus_one:
        for (float& v : a.values) {
            v -= 1.0F;
        }
        break;
    case GgufFix::transpose: {
        if (a.shape.size() != 2) {
            throw InputError(what + ": expected a matrix, got shape " + shape_string(a.shape));
        }
        const std::size_t r = a.shape[0];
        const std::size_t c = a.shape[1];
        std::vector<float> t(a.values.size());
        for (std::size_t i = 0; i < r; ++i) {
            for (std::size_t j = 0; j < c; ++j) {
                t[j * r + i] = a.values[i * c + j];
            }
        }
        a.values = std::move(t);
        a.shape = {c, r};
        break;
    }
    }
    return a;
}

} // namespace attn::model
