// The problem flags of the subcommands (CLI11), filling cli::ProblemFlags; what the
// values mean is attn/cli/problem_flags.hpp's.
#include "compute_options.hpp"

#include "cli.hpp"

namespace attn::app {

// --- problem flags ------------------------------------------------------------------------

namespace {

/// The problem file and the flags that override its input fields.
void add_input_options(CLI::App& cmd, ProblemArgs& args) {
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
}

/// What the attention computes: heads, scale, masks, positions, features.
void add_attention_options(CLI::App& cmd, ProblemArgs& args) {
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
    cmd.add_option("--activations",
                   args.activations,
                   "what a model's quantized weights multiply: f32 (default: the exact "
                   "inputs), q8_0 (Q8_0 and Q4_0 weights: the inputs rounded to Q8_0 as "
                   "llama.cpp does, integer products: faster, llama.cpp's rounding), q8 "
                   "(those, and Q4_K, Q5_K, Q6_K weights' inputs rounded to Q8_K) or bf16 "
                   "(BF16 weights: the inputs rounded to BF16, BF16 pair products as "
                   "AVX512_BF16 computes them)")
        ->check(CLI::IsMember({"f32", "q8_0", "q8", "bf16"}))
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
}

/// The per-row diagnostics added to the result.
void add_return_options(CLI::App& cmd, ProblemArgs& args) {
    auto* g_ret = "Extra outputs";
    cmd.add_option("--return",
                   args.returns,
                   "extra results, comma-separated: per-row lse, entropy, argmax, top_k; "
                   "head_stats (per-head means of entropy, first_token, previous_token, self, "
                   "distance, duplicate_token, induction); rollout (attention rollout, "
                   "[B, L, L]) (added to the result document)")
        ->group(g_ret);
    cmd.add_option("--rollout-fusion",
                   args.rollout_fusion,
                   "how --return rollout fuses a layer's heads: mean (default), max or min")
        ->group(g_ret);
    cmd.add_option("--top-k",
                   args.top_k,
                   "return the K largest weights of each row and their keys (implies "
                   "--return top_k)")
        ->check(positive_count())
        ->group(g_ret);
    cmd.add_option("--select-heads",
                   args.select_heads,
                   "return the weights, per-row diagnostics and head_stats of these query heads "
                   "only, e.g. 0,3,8-11 (all are computed; the H axis stays, ascending)")
        ->group(g_ret);
    cmd.add_option("--query-rows",
                   args.query_rows,
                   "return the weights and per-row diagnostics of query rows A..B-1 only: A:B "
                   "as a Python slice (either end may be left out; negatives count from the "
                   "end)")
        ->group(g_ret);
    cmd.add_option("--weights-dtype",
                   args.weights_dtype,
                   "element type of the weights in --weights FILE.npy and --output FILE.npz: "
                   "f32 (default) or f16 (half the size, each value rounded to nearest)")
        ->check(CLI::IsMember({"f32", "f16"}))
        ->group("Outputs");
    cmd.add_flag("--average-heads",
                 args.average_heads,
                 "weights averaged over heads, as nn.MultiheadAttention's default "
                 "average_attn_weights=True ([B, Lq, Lk]; rank-4 inputs [B, 1, Lq, Lk])")
        ->group(g_ret);
}

} // namespace

void add_problem_options(CLI::App& cmd, ProblemArgs& args) {
    add_input_options(cmd, args);
    add_attention_options(cmd, args);
    add_return_options(cmd, args);
}

} // namespace attn::app
