// A GGUF file as the Hugging Face model it came from: llama.cpp's tensor names mapped back
// (gguf-py's TensorNameMap, read for llama, qwen2, gemma, phi3, gpt2), the converter's
// changes undone (convert_hf_to_gguf.py: LlamaModel.permute, Gemma's norm + 1, GPT-2's
// transposes), and the {arch}.* metadata as config.json's keys. No forward pass here.
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

constexpr std::array<std::string_view, 5> supported = {"llama", "qwen2", "gemma", "phi3", "gpt2"};

/// One name of llama.cpp's and Hugging Face's, without ".weight"/".bias".
struct NamePair {
    std::string_view gguf;
    std::string_view hf;
};

/// Names outside the blocks, then inside block N ("blk.N." -> the arch's layer prefix).
constexpr std::array<NamePair, 3> llama_globals = {{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
}};
constexpr std::array<NamePair, 9> llama_block = {{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};
constexpr std::array<NamePair, 6> phi3_block = {{
    {"attn_norm", "input_layernorm"},
    {"attn_qkv", "self_attn.qkv_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_up", "mlp.gate_up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};
constexpr std::array<NamePair, 4> gpt2_globals = {{
    {"token_embd", "transformer.wte"},
    {"position_embd", "transformer.wpe"},
    {"output_norm", "transformer.ln_f"},
    {"output", "lm_head"},
}};
constexpr std::array<NamePair, 6> gpt2_block = {{
    {"attn_norm", "ln_1"},
    {"attn_qkv", "attn.c_attn"},
    {"attn_output", "attn.c_proj"},
    {"ffn_norm", "ln_2"},
    {"ffn_up", "mlp.c_fc"},
    {"ffn_down", "mlp.c_proj"},
}};

/// What the converter did to (arch, Hugging Face name): see convert_hf_to_gguf.py.
GgufFix fix_for(std::string_view arch, std::string_view hf, bool is_weight) {
    const auto ends = [&](std::string_view s) {
        return hf.size() >= s.size() && hf.substr(hf.size() - s.size()) == s;
    };
    if (arch == "llama") { // LlamaModel.modify_tensors: q/k weights and biases
        if (ends("q_proj")) {
            return GgufFix::unpermute_q;
        }
        if (ends("k_proj")) {
            return GgufFix::unpermute_k;
        }
    }
    if (arch == "gemma" && is_weight && ends("norm")) { // GemmaModel: norm.weight + 1
        return GgufFix::minus_one;
    }
    if (arch == "gpt2" && is_weight &&
        (ends("c_attn") || ends("c_proj") || ends("c_fc"))) { // GPT2Model: Conv1D .T
        return GgufFix::transpose;
    }
    return GgufFix::none;
}

/// "blk.12.rest" -> (12, "rest").
std::optional<std::pair<std::string, std::string_view>> split_block(std::string_view name) {
    constexpr std::string_view blk = "blk.";
    if (name.substr(0, blk.size()) != blk) {
        return std::nullopt;
    }
    const std::size_t dot = name.find('.', blk.size());
    const std::string_view number = name.substr(blk.size(), dot - blk.size());
    if (dot == std::string_view::npos || number.empty() || number.size() > 9 ||
        !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (number.size() > 1 && number[0] == '0')) {
        return std::nullopt;
    }
    return std::pair(std::string(number), name.substr(dot + 1));
}

template <std::size_t N>
std::optional<std::string_view> lookup(const std::array<NamePair, N>& table,
                                       std::string_view gguf) {
    for (const NamePair& p : table) {
        if (p.gguf == gguf) {
            return p.hf;
        }
    }
    return std::nullopt;
}

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
        if (*dims < head_dim) {
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

} // namespace

std::string_view gguf_architecture_names() {
    return "llama, qwen2, gemma, phi3, gpt2";
}

std::optional<std::pair<std::string, GgufSource>> gguf_to_hf(std::string_view arch,
                                                             std::string_view gguf_name) {
    std::string_view stem = gguf_name;
    std::string_view suffix;
    for (const std::string_view s : {std::string_view(".weight"), std::string_view(".bias")}) {
        if (stem.size() > s.size() && stem.substr(stem.size() - s.size()) == s) {
            suffix = s;
            stem = stem.substr(0, stem.size() - s.size());
            break;
        }
    }
    if (suffix.empty()) {
        return std::nullopt;
    }
    const bool gpt2 = arch == "gpt2";
    std::string hf;
    if (const auto block = split_block(stem)) {
        const auto part = gpt2             ? lookup(gpt2_block, block->second)
                          : arch == "phi3" ? lookup(phi3_block, block->second)
                                           : lookup(llama_block, block->second);
        if (!part) {
            return std::nullopt;
        }
        hf = (gpt2 ? "transformer.h." : "model.layers.") + block->first + "." + std::string(*part);
    } else {
        const auto whole = gpt2 ? lookup(gpt2_globals, stem) : lookup(llama_globals, stem);
        if (!whole) {
            return std::nullopt;
        }
        hf = std::string(*whole);
    }
    const GgufFix fix = fix_for(arch, hf, suffix == ".weight");
    return std::pair(hf + std::string(suffix), GgufSource{std::string(gguf_name), fix});
}

nlohmann::json gguf_hf_config(const GgufHeader& h, std::string_view name_in, const GgufFile* data) {
    Meta m{h, std::string(name_in), "", data};
    const auto arch = m.text("general.architecture");
    if (!arch) {
        throw InputError(m.name + ": metadata 'general.architecture' is missing");
    }
    if (std::find(supported.begin(), supported.end(), *arch) == supported.end()) {
        throw InputError(m.name + ": architecture " + quote_name(*arch) +
                         " is not supported (GGUF architectures: " +
                         std::string(gguf_architecture_names()) + ")");
    }
    m.arch = *arch;
    const std::string p = m.arch + ".";
    nlohmann::json c = {{"model_type", m.arch}};
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
        }
        add_rope(m, static_cast<std::size_t>(head_dim), c);
    }
    if (const auto window = m.uint(p + "attention.sliding_window", false)) {
        c["sliding_window"] = *window;
    }
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

void unpermute_rows(io::Array& w, std::size_t n_head, std::string_view what) {
    const std::vector<std::size_t> map = unpermute_row_map(w.shape, n_head, what);
    const std::size_t cols = w.shape.size() == 2 ? w.shape[1] : 1;
    std::vector<float> out(w.values.size());
    for (std::size_t to = 0; to < map.size(); ++to) {
        std::copy_n(w.values.begin() + static_cast<std::ptrdiff_t>(map[to] * cols),
                    cols,
                    out.begin() + static_cast<std::ptrdiff_t>(to * cols));
    }
    w.values = std::move(out);
}

GgufModel::GgufModel(const std::filesystem::path& path) : file_(path) {
    const GgufHeader& h = file_.header();
    config_ = gguf_hf_config(h, file_.shown(), &file_);
    arch_ = config_["model_type"].get<std::string>();
    for (const GgufTensor& t : h.tensors) {
        if (t.name == kRopeFreqs) { // read into the config's rope_scaling
            continue;
        }
        auto mapped = gguf_to_hf(arch_, t.name);
        if (!mapped) {
            throw InputError(file_.shown() + ": tensor " + quote_name(t.name) +
                             " has no Hugging Face name for architecture " + arch_ +
                             " (attn maps llama.cpp's token_embd, blk.N.attn_*, blk.N.ffn_*, "
                             "output_norm, output)");
        }
        TensorInfo info{mapped->first, std::string(ggml_type_traits(t.type)->name), t.shape};
        if (mapped->second.fix == GgufFix::transpose && info.shape.size() == 2) {
            std::swap(info.shape[0], info.shape[1]);
        }
        if (sources_.emplace(std::move(mapped->first), std::move(mapped->second)).second) {
            add(std::move(info));
        }
    }
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
    const GgufTensor& t = *file_.header().find(s.gguf_name);
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
        return file_.read_rows(*file_.header().find(s->gguf_name), rows);
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
    io::Array a = file_.read(s->gguf_name);
    const std::string what = file_.shown() + ": tensor " + quote_name(s->gguf_name);
    switch (s->fix) {
    case GgufFix::none:
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
