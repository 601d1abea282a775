// `attn compute [PROBLEM]`: reads a problem (file, stdin, or flags alone), overlays the
// flags, solves it, and writes the result document or the requested files. Each flag
// sets the problem field of the same meaning; paths given as flags are relative to the
// working folder, paths inside the problem to the problem file's folder.
#include "cli.hpp"
#include "compute_options.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/problem.hpp"

#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>

namespace attn::app {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ComputeArgs {
    std::string problem;
    std::string query, key, value, input, context, params, mask, bias, key_padding, variant;
    std::string causal;
    std::string scale;
    std::size_t heads = 0, kv_heads = 0;
    std::int64_t seed = -1;
    OutputOptions out;
};

/// A flag's path, made absolute so it resolves against the working folder.
std::string flag_path(const std::string& p) {
    return fs::path(p).is_absolute() ? p : (fs::current_path() / p).string();
}

void run_compute(const ComputeArgs& a) {
    json doc = json::object();
    fs::path base = fs::current_path();
    if (!a.problem.empty()) {
        std::string text;
        if (a.problem == "-") {
            text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
            doc = io::parse_json_text(text, "<stdin>");
        } else {
            const auto bytes = io::read_file(a.problem);
            doc = io::parse_json_text(
                std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                a.problem);
            base = fs::absolute(fs::path(a.problem)).parent_path();
        }
        if (!doc.is_object()) {
            throw InputError(a.problem + ": expected a JSON object (a problem), got " +
                             std::string(doc.type_name()));
        }
    }
    // Flags override the problem's fields.
    const std::pair<const std::string*, const char*> paths[] = {{&a.query, "query"},
                                                                {&a.key, "key"},
                                                                {&a.value, "value"},
                                                                {&a.input, "input"},
                                                                {&a.context, "context"},
                                                                {&a.params, "params"},
                                                                {&a.mask, "mask"},
                                                                {&a.bias, "bias"},
                                                                {&a.key_padding, "key_padding_mask"}};
    for (const auto& [value, field] : paths) {
        if (!value->empty()) {
            doc[field] = flag_path(*value);
        }
    }
    if (!a.variant.empty()) {
        doc["variant"] = a.variant;
    }
    if (!a.causal.empty()) {
        doc["causal"] = a.causal;
    }
    if (!a.scale.empty()) {
        doc["scale"] = parse_scale_flag(a.scale);
    }
    if (a.heads > 0) {
        doc["num_heads"] = a.heads;
    }
    if (a.kv_heads > 0) {
        doc["num_kv_heads"] = a.kv_heads;
    }
    if (a.seed >= 0) {
        if (!doc.contains("init") || !doc["init"].is_object()) {
            doc["init"] = json::object();
        }
        doc["init"]["seed"] = a.seed;
    }
    if (doc.empty()) {
        throw InputError("compute: no problem: give a PROBLEM file (or - for stdin), or "
                         "--query/--key/--value or --input (see 'attn compute --help')");
    }

    const io::Problem problem = io::decode_problem(doc, base);
    io::Solution solution = io::solve(problem, a.out.solve_options());
    emit_solution(problem, solution, a.out);
}

}  // namespace

void add_compute(CLI::App& app) {
    auto args = std::make_shared<ComputeArgs>();
    CLI::App* cmd = app.add_subcommand(
        "compute",
        "Compute attention for one problem: a JSON problem file (- for stdin) and/or flags.\n"
        "Prints {\"output\": .., \"weights\": ..} unless --output is given.");
    add_version_flag(*cmd);
    cmd->add_option("problem", args->problem, "JSON problem file, or - for stdin");
    auto* g_in = "Inputs (override the problem's fields)";
    cmd->add_option("-q,--query", args->query, "Q: .npy/.json, [L,E], [B,L,E] or [B,H,L,D]")
        ->group(g_in);
    cmd->add_option("-k,--key", args->key, "K: .npy/.json, same layouts as --query")->group(g_in);
    cmd->add_option("-v,--value", args->value, "V: .npy/.json, may have its own last dim")
        ->group(g_in);
    cmd->add_option("-x,--input", args->input, "X: query source (and K/V source for self-attention)")
        ->group(g_in);
    cmd->add_option("-c,--context", args->context, "K/V source for cross-attention")->group(g_in);
    cmd->add_option("--params", args->params, "projection weights (.json object of arrays/paths)")
        ->group(g_in);
    cmd->add_option("--seed", args->seed, "random nn.Linear-style projections from this seed (init)")
        ->check(CLI::NonNegativeNumber)
        ->group(g_in);
    cmd->add_option("--variant",
                    args->variant,
                    "preset: dot, scaled, self, masked-self, cross, multihead")
        ->group(g_in);
    auto* g_att = "Attention";
    cmd->add_option("--heads", args->heads, "num_heads")->check(CLI::PositiveNumber)->group(g_att);
    cmd->add_option("--kv-heads", args->kv_heads, "num_kv_heads (grouped-query when < heads)")
        ->check(CLI::PositiveNumber)
        ->group(g_att);
    cmd->add_option("--scale", args->scale, "score scale (default 1/sqrt(head dim); 'default')")
        ->group(g_att);
    cmd->add_flag("--causal{top-left}",
                  args->causal,
                  "causal mask: --causal (top-left, j <= i) or --causal=bottom-right "
                  "(j <= i + Lk - Lq)")
        ->group(g_att);
    cmd->add_option("--mask", args->mask, "keep-mask file: nonzero/true = may attend")->group(g_att);
    cmd->add_option("--bias", args->bias, "additive bias file (-inf blocks)")->group(g_att);
    cmd->add_option("--key-padding",
                    args->key_padding,
                    "key_padding_mask file [B,Lk] or [Lk]: 1/true = real token "
                    "(opposite of PyTorch MHA)")
        ->group(g_att);
    add_output_options(*cmd, args->out);
    cmd->callback([args] { run_compute(*args); });
}

}  // namespace attn::app
