// config.json reading: the keys of real GPT-2, Llama 3.2, BERT, GPT-NeoX, GPT-J and Phi
// configs (abridged, with their unrelated keys left in), the key each value came from,
// the derived head dim / rotary dim / style, and one-line refusals naming key and file.
#include "attn/error.hpp"
#include "attn/model/hf_config.hpp"
#include "unit/test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using attn::RopeScalingType;
using attn::RopeStyle;
using attn::model::parse_hf_config;
using attn::testing::message_of;

constexpr const char* kGpt2 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
  "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
  "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
  "resid_pdrop": 0.1, "summary_activation": null, "summary_first_dropout": 0.1,
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257})";

constexpr const char* kLlama32 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})";

constexpr const char* kBert = R"({
  "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
  "gradient_checkpointing": false, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
  "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
  "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
  "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0,
  "position_embedding_type": "absolute", "transformers_version": "4.6.0.dev0",
  "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522})";

constexpr const char* kPythia = R"({
  "architectures": ["GPTNeoXForCausalLM"], "hidden_size": 512, "layer_norm_eps": 1e-05,
  "model_type": "gpt_neox", "num_attention_heads": 8, "num_hidden_layers": 6,
  "rotary_emb_base": 10000, "rotary_pct": 0.25, "use_parallel_residual": true,
  "vocab_size": 50304})";

constexpr const char* kGptj = R"({
  "model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048,
  "rotary": true, "rotary_dim": 64, "layer_norm_epsilon": 1e-05, "vocab_size": 50400})";

TEST(HfConfig, Gpt2NamesItsOwnKeys) {
    const auto c = parse_hf_config(kGpt2, "gpt2/config.json");
    ASSERT_TRUE(c.num_heads && c.hidden_size && c.num_layers && c.norm_eps && c.model_type);
    EXPECT_EQ(c.num_heads->value, 12u);
    EXPECT_EQ(c.num_heads->key, "n_head");
    EXPECT_EQ(c.hidden_size->value, 768u);
    EXPECT_EQ(c.hidden_size->key, "n_embd");
    EXPECT_EQ(c.num_layers->key, "n_layer");
    EXPECT_EQ(c.norm_eps->value, 1e-5);
    EXPECT_EQ(c.norm_eps->key, "layer_norm_epsilon");
    EXPECT_EQ(c.max_positions->value, 1024u);
    EXPECT_EQ(c.vocab_size->value, 50257u);
    EXPECT_EQ(c.model_type->value, "gpt2");
    EXPECT_FALSE(c.num_kv_heads || c.rope_theta || c.rope_scaling || c.head_dim);
    EXPECT_EQ(attn::model::hf_head_dim(c), 64u);
}

TEST(HfConfig, Llama32Llama3Scaling) {
    const auto c = parse_hf_config(kLlama32, "config.json");
    EXPECT_EQ(c.num_heads->value, 32u);
    EXPECT_EQ(c.num_kv_heads->value, 8u);
    EXPECT_EQ(c.head_dim->value, 64u);
    EXPECT_EQ(c.num_layers->value, 16u);
    EXPECT_EQ(c.norm_eps->key, "rms_norm_eps");
    const auto spec = attn::model::hf_rope_spec(c, 64);
    EXPECT_EQ(spec.theta, 500000.0);
    EXPECT_EQ(spec.style, RopeStyle::neox);
    EXPECT_EQ(spec.dim, 0u);
    EXPECT_EQ(spec.scaling.type, RopeScalingType::llama3);
    EXPECT_EQ(spec.scaling.factor, 32.0);
    EXPECT_EQ(spec.scaling.low_freq_factor, 1.0);
    EXPECT_EQ(spec.scaling.high_freq_factor, 4.0);
    EXPECT_EQ(spec.scaling.original_max_position_embeddings, 8192.0);
}

TEST(HfConfig, BertLayerNormEps) {
    const auto c = parse_hf_config(kBert, "config.json");
    EXPECT_EQ(c.norm_eps->value, 1e-12);
    EXPECT_EQ(c.norm_eps->key, "layer_norm_eps");
    EXPECT_EQ(c.max_positions->value, 512u);
    EXPECT_EQ(attn::model::hf_head_dim(c), 64u);
}

TEST(HfConfig, PartialRotaryFromRotaryPctAndRotaryDim) {
    const auto neox = parse_hf_config(kPythia, "config.json");
    EXPECT_EQ(neox.partial_rotary_factor->key, "rotary_pct");
    EXPECT_EQ(neox.rope_theta->key, "rotary_emb_base");
    const auto spec = attn::model::hf_rope_spec(neox, 64);
    EXPECT_EQ(spec.dim, 16u); // int(64 * 0.25)
    EXPECT_EQ(spec.style, RopeStyle::neox);
    EXPECT_EQ(spec.theta, 10000.0);

    const auto gptj = parse_hf_config(kGptj, "config.json");
    const auto jspec = attn::model::hf_rope_spec(gptj, 256);
    EXPECT_EQ(jspec.dim, 64u);
    EXPECT_EQ(jspec.style, RopeStyle::interleaved);

    const auto phi = parse_hf_config(
        R"({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
            "partial_rotary_factor": 0.4, "rope_theta": 10000.0, "rope_scaling": null,
            "head_dim": null})",
        "config.json");
    EXPECT_FALSE(phi.head_dim);
    EXPECT_EQ(attn::model::hf_head_dim(phi), 80u);
    EXPECT_EQ(attn::model::hf_rotary_dim(phi, 80), 32u);
    EXPECT_FALSE(phi.rope_scaling);
    // int(), not round(): 50 * 0.33 = 16.5 -> 16
    const auto third = parse_hf_config(R"({"rotary_pct": 0.33})", "config.json");
    EXPECT_EQ(attn::model::hf_rotary_dim(third, 50), 16u);
}

TEST(HfConfig, RopeParametersAndOldTypeKey) {
    const auto v5 = parse_hf_config(
        R"({"num_attention_heads": 4, "rope_parameters": {"rope_type": "linear",
            "factor": 2.0, "rope_theta": 1000000.0}})",
        "config.json");
    EXPECT_EQ(v5.rope_theta->value, 1e6);
    EXPECT_EQ(v5.rope_theta->key, "rope_parameters.rope_theta");
    EXPECT_EQ(v5.rope_scaling->value.type, RopeScalingType::linear);
    EXPECT_EQ(v5.rope_scaling->value.factor, 2.0);
    const auto old =
        parse_hf_config(R"({"rope_scaling": {"type": "linear", "factor": 4}})", "config.json");
    EXPECT_EQ(old.rope_scaling->value.factor, 4.0);
    const auto def = parse_hf_config(R"({"rope_scaling": {"rope_type": "default"}})", "c.json");
    EXPECT_EQ(def.rope_scaling->value.type, RopeScalingType::none);
}

TEST(HfConfig, RefusesWrongTypesNamingKeyAndFile) {
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"n_head": "12"})", "m/config.json"); }),
              "m/config.json: n_head: expected a positive integer, got string \"12\"");
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"n_head": 12.0})", "c.json"); }),
              "c.json: n_head: expected a positive integer, got number 12.0");
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"num_key_value_heads": 0})", "c.json"); }),
              "c.json: num_key_value_heads: expected a positive integer, got number 0");
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"rope_theta": true})", "c.json"); }),
              "c.json: rope_theta: expected a finite number, got boolean true");
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"rms_norm_eps": "1e-6"})", "c.json"); }),
              "c.json: rms_norm_eps: expected a finite number, got string \"1e-6\"");
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"model_type": 3})", "c.json"); }),
              "c.json: model_type: expected a string, got number 3");
    EXPECT_EQ(message_of([] { (void)parse_hf_config(R"({"rotary_pct": 1.5})", "c.json"); }),
              "c.json: rotary_pct: expected a number in (0, 1], got number 1.5");
    EXPECT_EQ(message_of([] {
                  (void)parse_hf_config(R"({"num_attention_heads": 12, "n_head": 8})", "c.json");
              }),
              "c.json: num_attention_heads and n_head disagree (number 12 vs number 8)");
    EXPECT_EQ(message_of([] { (void)parse_hf_config("[1]", "c.json"); }),
              "c.json: expected a JSON object, got array");
    EXPECT_NE(message_of([] { (void)parse_hf_config("{", "c.json"); }).find("c.json: invalid JSON"),
              std::string::npos);
    const auto h = parse_hf_config(R"({"hidden_size": 10, "num_attention_heads": 4})", "c.json");
    EXPECT_EQ(message_of([&] { (void)attn::model::hf_head_dim(h); }),
              "c.json: hidden_size 10 is not divisible by num_attention_heads 4");
}

TEST(HfConfig, RopeScalingRefusals) {
    auto msg = [](const char* text) {
        return message_of([&] {
            (void)attn::model::parse_rope_scaling(nlohmann::json::parse(text), "rope.scaling");
        });
    };
    EXPECT_EQ(
        msg(R"({"rope_type": "yarn", "factor": 4.0})"),
        "rope.scaling: rope_type 'yarn' is not supported (supported: default, linear, llama3)");
    EXPECT_EQ(msg(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0})"),
              "rope.scaling: rope_type llama3 needs \"original_max_position_embeddings\"");
    EXPECT_EQ(msg(R"({"rope_type": "linear", "factor": "2"})"),
              "rope.scaling.factor: expected a finite number, got string \"2\"");
    EXPECT_EQ(msg(R"({"rope_type": "linear", "factor": -2})"),
              "rope.scaling.factor: expected a number > 0, got number -2");
    EXPECT_EQ(msg(R"({"factor": 2})"),
              "rope.scaling: expected \"rope_type\" (or \"type\"): default, linear or llama3");
    EXPECT_EQ(msg(R"({"rope_type": "linear", "type": "llama3", "factor": 2})"),
              "rope.scaling: rope_type and type disagree (linear vs llama3)");
    EXPECT_EQ(msg("[]"), "rope.scaling: expected an object, got array []");
}

} // namespace
