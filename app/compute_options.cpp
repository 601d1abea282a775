// The problem flags of the subcommands -> the problem document (stdin: stdin_input.cpp;
// outputs: output_options.cpp). Decoding and solving live in attn_problem.
#include "compute_options.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/token_list.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <utility>

namespace attn::app {

namespace fs = std::filesystem;
using nlohmann::json;

// --- problem flags ------------------------------------------------------------------------

void add_problem_options(CLI::App& cmd, ProblemArgs& args) {
    cmd.add_option("problem", args.problem, "JSON problem file, or - for stdin");
    auto* g_in = "Inputs (override the problem's fields; FILE may be - for stdin)";
    cmd.add_option("-q,--query", args.query, "Q: .npy/.json, [L,E], [B,L,E] or [B,H,L,D]")
        ->group(g_in);
    cmd.add_option("-k,--key", args.key, "K: .npy/.json, same layouts as --query")->group(g_in);
    cmd.add_option("-v,--value", args.value, "V: .npy/.json, may have its own last dim")
        ->group(g_in);
    cmd.add_option("-x,--input", args.input, "X: query source (and K/V source for self-attention)")
        ->group(g_in);
    cmd.add_option("-c,--context", args.context, "K/V source for cross-attention")->group(g_in);
    cmd.add_option("--params",
                   args.params,
                   "projection weights: a .json object of arrays/paths (w_q.., or an "
                   "nn.MultiheadAttention state dict), or a .safetensors checkpoint")
        ->group(g_in);
    cmd.add_option("--prefix",
                   args.prefix,
                   "with a .safetensors --params: the layer's name prefix, e.g. "
                   "transformer.h.0.attn. (default: none)")
        ->group(g_in);
    cmd.add_option("--layout",
                   args.layout,
                   "with a .safetensors --params: attn, torch-mha, gpt2, llama or bert "
                   "(default: detected from the tensor names); with a model folder: its "
                   "architecture (gpt2, gpt_neox, gptj, llama, mistral, qwen2, gemma, phi3, "
                   "opt, bert, roberta, distilbert; default: config.json's model_type)")
        ->group(g_in);
    cmd.add_option("--config",
                   args.config,
                   "with a .safetensors --params: the model's Hugging Face config.json "
                   "(default: config.json beside the checkpoint, if any)")
        ->group(g_in);
    cmd.add_option("--token-ids",
                   args.token_ids,
                   "integer token ids [L] or [B,L] (.npy/.json): the checkpoint's embeddings "
                   "make the layer-0 input")
        ->group(g_in);
    cmd.add_option("--text",
                   args.text,
                   "text tokenized by the model's tokenizer (the folder of --params), then as "
                   "--token-ids; repeat for a right-padded batch")
        ->allow_extra_args(false)
        ->group(g_in);
    cmd.add_option("--text-file",
                   args.text_file,
                   "a file whose bytes are the text (- for stdin), as --text; repeatable")
        ->allow_extra_args(false)
        ->group(g_in);
    cmd.add_flag("--no-special-tokens",
                 args.no_special_tokens,
                 "with --text: leave out the tokenizer's special tokens ([CLS] ... [SEP], <s>)")
        ->group(g_in);
    cmd.add_flag("--no-norm",
                 args.no_norm,
                 "skip the checkpoint's pre-attention norm (gpt2 ln_1, llama input_layernorm)")
        ->group(g_in);
    cmd.add_option("--tokens",
                   args.tokens,
                   "token labels (the tokens field): a,b,c or FILE (one token per line, or a "
                   "JSON list); shown by --heatmap and echoed in the result")
        ->group(g_in);
    cmd.add_option("--hidden-states",
                   args.hidden_states,
                   "every layer of the --params checkpoint: hidden states [layers+1,B,L,E] or "
                   "[layers+1,L,E] (.npy/.npz, as output_hidden_states=True stacked); layer l "
                   "attends from hidden state l")
        ->group(g_in);
    cmd.add_option("--layers",
                   args.layers,
                   "with --hidden-states: the layers to compute, e.g. 0,3,5-7 (default: all)")
        ->group(g_in);
    cmd.add_option("--seed", args.seed, "random nn.Linear-style projections from this seed (init)")
        ->check(CLI::NonNegativeNumber)
        ->group(g_in);
    cmd.add_option(
           "--variant", args.variant, "preset: dot, scaled, self, masked-self, cross, multihead")
        ->group(g_in);
    auto* g_att = "Attention";
    cmd.add_option("--heads", args.heads, "num_heads")->check(positive_count())->group(g_att);
    cmd.add_option("--kv-heads", args.kv_heads, "num_kv_heads (grouped-query when < heads)")
        ->check(positive_count())
        ->group(g_att);
    cmd.add_option("--scale", args.scale, "score scale (default 1/sqrt(head dim); 'default')")
        ->group(g_att);
    cmd.add_flag("--causal{top-left}",
                 args.causal,
                 "causal mask: --causal (top-left, j <= i) or --causal=bottom-right "
                 "(j <= i + Lk - Lq)")
        ->group(g_att);
    cmd.add_option("--mask",
                   args.mask,
                   "mask file [Lq,Lk], [B,Lq,Lk] or [B,H,Lq,Lk]; by default a keep-mask: "
                   "nonzero/true = may attend (see --mask-convention)")
        ->group(g_att);
    cmd.add_option("--bias", args.bias, "additive bias file (-inf blocks)")->group(g_att);
    cmd.add_option("--key-padding",
                   args.key_padding,
                   "key_padding_mask file [B,Lk] or [Lk]: by default 1/true = real token "
                   "(opposite of PyTorch MHA; see --mask-convention)")
        ->group(g_att);
    cmd.add_option("--mask-convention",
                   args.mask_convention,
                   "how --mask/--key-padding values read: keep (default; true = attend, "
                   "F.scaled_dot_product_attention), torch-mha (true = ignore, "
                   "nn.MultiheadAttention), additive (0 keeps, -inf blocks, other values add)")
        ->check(CLI::IsMember({"keep", "torch-mha", "additive"}))
        ->group(g_att);
    cmd.add_option("--window",
                   args.window,
                   "sliding window L,R: query i sees keys i+s-L .. i+s+R (-1 = unbounded; "
                   "FlashAttention window_size)")
        ->group(g_att);
    cmd.add_option("--window-align",
                   args.window_align,
                   "diagonal of --window and --alibi: top-left (s = 0, default) or "
                   "bottom-right (s = Lk - Lq; forced by --causal=bottom-right)")
        ->check(CLI::IsMember({"top-left", "bottom-right"}))
        ->group(g_att);
    cmd.add_flag("--varlen",
                 args.varlen,
                 "with --key-padding (right-padded): causal, window and ALiBi align to each "
                 "sequence's real key count, as FlashAttention's varlen functions do")
        ->group(g_att);
    cmd.add_option("--softcap",
                   args.softcap,
                   "logit soft-capping X: s = X*tanh(s/X) after scaling, before bias and masks "
                   "(Gemma 2; 'none' turns it off)")
        ->group(g_att);
    cmd.add_flag("--alibi{default}",
                 args.alibi,
                 "ALiBi position bias: --alibi (default slopes, ggml max_bias 8), "
                 "--alibi=S0,S1,.. (one slope per head) or --alibi=none")
        ->group(g_att);
    cmd.add_option("--sinks",
                   args.sinks,
                   "attention-sink logits S0,S1,.. (one per head) in each row's softmax "
                   "denominator; -inf: a sink that takes nothing ('none' turns them off)")
        ->group(g_att);
    cmd.add_option("--precision",
                   args.precision,
                   "f32 (default) or f64: the whole computation in float64, inputs read "
                   "without rounding to float32 (outputs still follow --dtype)")
        ->check(precision_name())
        ->group(g_att);
    cmd.add_flag("--rope{true}",
                 args.rope,
                 "rotary embeddings on Q and K: --rope (theta 10000, or the checkpoint's), "
                 "--rope=THETA, --rope=off (on by default for the llama layout)")
        ->group(g_att);
    cmd.add_option("--rope-style", args.rope_style, "RoPE pairs: neox (rotate_half) or interleaved")
        ->check(CLI::IsMember({"neox", "interleaved"}))
        ->group(g_att);
    cmd.add_option("--rope-dim", args.rope_dim, "rotary dim (even; default: the head dim)")
        ->check(positive_count())
        ->group(g_att);
    cmd.add_option("--rope-offset",
                   args.rope_offset,
                   "position of query 0 (default Lk - Lq; keys sit at 0 .. Lk-1)")
        ->group(g_att);
    auto* g_ret = "Extra outputs";
    cmd.add_option("--return",
                   args.returns,
                   "per-row diagnostics, comma-separated: lse, entropy, argmax, top_k "
                   "(added to the result document)")
        ->group(g_ret);
    cmd.add_option("--top-k",
                   args.top_k,
                   "return the K largest weights of each row and their keys (implies "
                   "--return top_k)")
        ->check(positive_count())
        ->group(g_ret);
    cmd.add_flag("--average-heads",
                 args.average_heads,
                 "weights averaged over heads, as nn.MultiheadAttention's default "
                 "average_attn_weights=True ([B, Lq, Lk]; rank-4 inputs [B, 1, Lq, Lk])")
        ->group(g_ret);
}

namespace {

/// A flag's path, made absolute so it resolves against the working folder.
std::string flag_path(const std::string& p) {
    return fs::path(p).is_absolute() ? p : (fs::current_path() / p).string();
}

} // namespace

namespace {

/// "a,b,c" -> {"a", "b", "c"} (empty items kept, so "1,,2" is refused by the caller).
std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos) {
            return out;
        }
        start = comma + 1;
    }
}

/// A finite number, or InputError naming the flag.
double flag_number(const std::string& s, const char* flag, const char* what) {
    std::size_t used = 0;
    double x = 0.0;
    try {
        x = std::stod(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (s.empty() || used != s.size() || !std::isfinite(x)) {
        throw InputError(std::string(flag) + ": expected " + what + ", got '" + s + "'");
    }
    return x;
}

/// An integer >= -1, or InputError naming the flag.
std::int64_t flag_window_side(const std::string& s) {
    std::size_t used = 0;
    long long x = -2;
    try {
        x = std::stoll(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (s.empty() || used != s.size() || x < -1) {
        throw InputError::window("--window", "L,R", "'" + s + "'");
    }
    return x;
}

/// A comma-separated list of finite numbers (--alibi slopes), or also -inf (--sinks: a
/// sink that takes nothing), given on as the field's "-inf".
json flag_numbers(const std::string& s, const char* flag, bool neg_inf = false) {
    json out = json::array();
    for (const std::string& item : split_commas(s)) {
        if (neg_inf && item == "-inf") {
            out.push_back("-inf");
            continue;
        }
        out.push_back(flag_number(item, flag, "comma-separated numbers, one per head"));
    }
    return out;
}

bool is_off(const std::string& s) {
    return s == "none" || s == "off" || s == "false";
}

} // namespace

namespace {

/// --rope, --rope-style, --rope-dim, --rope-offset into the "rope" field (each flag
/// overrides its key of the field), --no-norm into "norm".
void apply_model_flags(const ProblemArgs& a, json& doc) {
    if (a.no_norm) {
        doc["norm"] = false;
    }
    if (!a.rope.empty() && is_off(a.rope)) {
        doc["rope"] = false;
        return;
    }
    const bool keys = !a.rope_style.empty() || a.rope_dim > 0 || a.rope_offset.has_value();
    if (a.rope.empty() && !keys) {
        return;
    }
    json rope = doc.contains("rope") ? doc["rope"] : json(true);
    if (rope.is_number()) {
        rope = json{{"theta", rope}};
    } else if (!rope.is_object()) {
        rope = json::object(); // true, false or absent: the flags turn it on
    }
    if (!a.rope.empty() && a.rope != "true") {
        rope["theta"] = flag_number(a.rope, "--rope", "a theta > 0, or 'off'");
    }
    if (!a.rope_style.empty()) {
        rope["style"] = a.rope_style;
    }
    if (a.rope_dim > 0) {
        rope["dim"] = a.rope_dim;
    }
    if (a.rope_offset) {
        rope["offset"] = *a.rope_offset;
        rope.erase("positions");
    }
    doc["rope"] = std::move(rope);
}

} // namespace

void apply_feature_flags(const ProblemArgs& a, json& doc) {
    if (!a.prefix.empty() || !a.layout.empty() || !a.config.empty()) {
        // Checkpoint params: "model.safetensors" becomes {"file": .., "prefix": .., "layout": ..}.
        const char* flag = !a.prefix.empty()   ? "--prefix"
                           : !a.layout.empty() ? "--layout"
                                               : "--config";
        json& params = doc["params"];
        if (params.is_string()) {
            params = json{{"file", params}};
        }
        if (!params.is_object() || !params.contains("file")) {
            throw InputError(std::string(flag) +
                             ": needs --params FILE.safetensors (or a problem whose params is "
                             "a .safetensors file)");
        }
        if (!a.prefix.empty()) {
            params["prefix"] = a.prefix;
        }
        if (!a.layout.empty()) {
            params["layout"] = a.layout;
        }
        if (!a.config.empty()) {
            params["config"] = flag_path(a.config);
        }
    }
    apply_model_flags(a, doc);
    if (!a.window.empty()) {
        const auto sides = split_commas(a.window);
        if (sides.size() != 2) {
            throw InputError::window("--window", "L,R", "'" + a.window + "'");
        }
        doc["window"] = {flag_window_side(sides[0]), flag_window_side(sides[1])};
    }
    if (!a.window_align.empty()) {
        doc["window_align"] = a.window_align;
    }
    if (a.varlen) {
        doc["varlen"] = true;
    }
    if (!a.softcap.empty()) {
        doc["softcap"] = is_off(a.softcap)
                             ? json(nullptr)
                             : json(flag_number(a.softcap, "--softcap", "a number > 0 or 'none'"));
    }
    if (!a.alibi.empty()) {
        if (a.alibi == "default" || a.alibi == "true") {
            doc["alibi"] = true;
        } else if (is_off(a.alibi)) {
            doc["alibi"] = false;
        } else {
            doc["alibi"] = flag_numbers(a.alibi, "--alibi");
        }
    }
    if (!a.sinks.empty()) {
        doc["sinks"] = is_off(a.sinks) ? json(nullptr) : flag_numbers(a.sinks, "--sinks", true);
    }
    if (!a.mask_convention.empty()) {
        doc["mask_convention"] = a.mask_convention;
    }
    if (!a.returns.empty()) {
        json list = json::array();
        for (const std::string& item : split_commas(a.returns)) {
            list.push_back(item); // decode_problem names anything unknown
        }
        doc["return"] = std::move(list);
    }
    if (a.top_k > 0) {
        doc["top_k"] = a.top_k;
        if (!doc.contains("return") || !doc["return"].is_array()) {
            doc["return"] = json::array();
        }
        if (std::find(doc["return"].begin(), doc["return"].end(), json("top_k")) ==
            doc["return"].end()) {
            doc["return"].push_back("top_k");
        }
    }
    if (!a.tokens.empty()) {
        doc.erase("query_tokens"); // the flag overrides every token field
        doc.erase("key_tokens");
        doc["tokens"] = io::parse_token_list(a.tokens, "--tokens");
    }
    if (a.average_heads) {
        doc["average_heads"] = true;
    }
}

void apply_common_flags(const CommonProblemFlags& f, json& doc) {
    for (const auto& [field, text] : {std::pair{"variant", &f.variant},
                                      std::pair{"causal", &f.causal},
                                      std::pair{"precision", &f.precision}}) {
        if (!text->empty()) {
            doc[field] = *text;
        }
    }
    if (!f.scale.empty()) {
        doc["scale"] = parse_scale_flag(f.scale);
    }
    if (f.heads > 0) {
        doc["num_heads"] = f.heads;
    }
    if (f.kv_heads > 0) {
        doc["num_kv_heads"] = f.kv_heads;
    }
}

namespace {

/// PROBLEM's bytes as JSON; an array file given where a problem is expected (the -q
/// forgotten) is named as such.
json problem_json(std::span<const std::uint8_t> bytes, const std::string& name) {
    if (io::looks_like_npy(bytes)) {
        throw InputError(name + ": this is an array (NPY), not a problem; did you mean -q " + name +
                         " (or -k, -v, -x)?");
    }
    if (bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4) {
        throw InputError(name + ": this is a zip archive (.npz?), not a problem; did you mean -q " +
                         name + ":query (or -k, -v, -x)?");
    }
    return io::parse_json_text(io::as_text(bytes), name);
}

} // namespace

ProblemInput problem_input(const ProblemArgs& a, std::string_view command) {
    ProblemInput in{json::object(), fs::current_path(), "flags", {}};
    if (!a.problem.empty()) {
        json doc;
        if (a.problem == "-") {
            in.name = "<stdin>";
            const auto bytes = read_stdin("PROBLEM");
            doc = problem_json(bytes, in.name);
        } else {
            in.name = a.problem;
            const auto bytes = io::read_file(a.problem);
            doc = problem_json(bytes, a.problem);
            in.base = fs::absolute(fs::path(a.problem)).parent_path();
        }
        if (!doc.is_object()) {
            throw InputError(in.name + ": expected a JSON object (a problem), got " +
                             std::string(doc.type_name()));
        }
        in.doc = std::move(doc);
    }
    json& doc = in.doc;
    // An array read from stdin is handed over as read: with its float64 values too when the
    // problem is computed in f64 (so it is not rounded through float32 on the way).
    const bool f64 = a.precision == "f64" || (a.precision.empty() && doc.contains("precision") &&
                                              doc["precision"] == "f64");
    const io::Precision stdin_precision = f64 ? io::Precision::f64 : io::Precision::f32;
    // Flags override the problem's fields; "-" reads the array from stdin.
    const std::tuple<const std::string*, const char*, const char*, io::ArrayKind> arrays[] = {
        {&a.query, "query", "--query", io::ArrayKind::numeric},
        {&a.key, "key", "--key", io::ArrayKind::numeric},
        {&a.value, "value", "--value", io::ArrayKind::numeric},
        {&a.input, "input", "--input", io::ArrayKind::numeric},
        {&a.context, "context", "--context", io::ArrayKind::numeric},
        {&a.mask, "mask", "--mask", io::ArrayKind::mask},
        {&a.bias, "bias", "--bias", io::ArrayKind::numeric},
        {&a.key_padding, "key_padding_mask", "--key-padding", io::ArrayKind::mask},
        {&a.token_ids, "token_ids", "--token-ids", io::ArrayKind::numeric},
        {&a.hidden_states, "hidden_states", "--hidden-states", io::ArrayKind::numeric}};
    for (const auto& [value, field, flag, kind] : arrays) {
        if (value->empty()) {
            continue;
        }
        if (*value == "-") {
            const auto bytes = read_stdin(flag);
            in.arrays[field] = io::parse_array_bytes(
                bytes, std::string(field) + ": <stdin>", kind, stdin_precision);
            doc.erase(field);
        } else {
            doc[field] = flag_path(*value);
            in.arrays.erase(field);
        }
    }
    if (!a.params.empty()) {
        if (a.params == "-") {
            const auto bytes = read_stdin("--params");
            doc["params"] = io::parse_json_text(io::as_text(bytes), "params: <stdin>");
        } else {
            doc["params"] = flag_path(a.params);
        }
    }
    if (!a.layers.empty()) {
        doc["layers"] = a.layers;
    }
    if (!a.text.empty() || !a.text_file.empty()) {
        json texts(a.text);
        for (const std::string& file : a.text_file) {
            const std::vector<std::uint8_t> bytes =
                file == "-" ? read_stdin("--text-file") : io::read_file(file);
            texts.push_back(std::string(bytes.begin(), bytes.end()));
        }
        doc["text"] = texts.size() == 1 ? texts[0] : texts;
    }
    if (a.no_special_tokens) {
        doc["special_tokens"] = false;
    }
    apply_common_flags(a, doc);
    if (a.seed >= 0) {
        if (!doc.contains("init") || !doc["init"].is_object()) {
            doc["init"] = json::object();
        }
        doc["init"]["seed"] = a.seed;
    }
    apply_feature_flags(a, doc);
    if (doc.empty() && in.arrays.empty()) {
        throw InputError(std::string(command) +
                         ": no problem: give a PROBLEM file (or - for stdin), or "
                         "--query/--key/--value or --input (see 'attn " +
                         std::string(command) + " --help')");
    }
    return in;
}

nlohmann::json parse_scale_flag(const std::string& s) {
    if (s == "default" || s == "none" || s == "null") {
        return nullptr;
    }
    return flag_number(s, "--scale", "a finite number or 'default'");
}

} // namespace attn::app
