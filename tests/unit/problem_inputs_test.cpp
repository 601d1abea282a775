// The problem's inputs in both precisions: one document decoded with "precision": "f32" and
// with "f64" gives float64 inputs equal to the float32 ones widened, field by field,
// wherever the values are exactly float32 ones (f4 .npy files, dyadic JSON numbers, F32
// checkpoint tensors, init weights of width 4), and keeps what float32 would round (a
// JSON 0.1) exact. Every path that fills an input is taken: projected sources (key/value,
// context, token_ids), rank-4 heads, params, init, a checkpoint, additive masks summed
// into the bias, and the score features.
#include "attn/io/npy.hpp"
#include "attn/problem/problem.hpp"
#include "unit/safetensors_bytes.hpp"
#include "unit/test_files.hpp"

#include <array>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace attn::problem;
using attn::testing::f32_safetensors;
using nlohmann::json;

/// Compares each field of the float32 inputs with the float64 ones and records the fields
/// that held something (so that a test can check it reached every field).
class Compare {
  public:
    explicit Compare(std::set<std::string>& held) : held_(held) {}

    void inputs(const Inputs& f, const BasicInputs<double>& d) {
        // A structured binding names every field: a field added to BasicInputs and not
        // compared here does not compile.
        const auto& [fq, fk, fv, fq4, fk4, fv4, fproj, fbias, fscale, fcap, falibi, fsinks, fnorm] =
            f;
        const auto& [dq, dk, dv, dq4, dk4, dv4, dproj, dbias, dscale, dcap, dalibi, dsinks, dnorm] =
            d;
        const auto fs =
            std::tie(fq, fk, fv, fq4, fk4, fv4, fproj, fbias, fscale, fcap, falibi, fsinks, fnorm);
        const auto ds =
            std::tie(dq, dk, dv, dq4, dk4, dv4, dproj, dbias, dscale, dcap, dalibi, dsinks, dnorm);
        static constexpr std::array<const char*, 13> names = {"query_src",
                                                              "key_src",
                                                              "value_src",
                                                              "q4",
                                                              "k4",
                                                              "v4",
                                                              "projections",
                                                              "bias",
                                                              "scale",
                                                              "softcap",
                                                              "alibi_slopes",
                                                              "sinks",
                                                              "norm"};
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (same(names[I], std::get<I>(fs), std::get<I>(ds)), ...);
        }
        (std::make_index_sequence<names.size()>{});
    }

  private:
    template <class F, class D> void values(const std::string& field, const F& f, const D& d) {
        ASSERT_EQ(f.size(), d.size()) << field;
        for (std::size_t i = 0; i < f.size(); ++i) {
            EXPECT_EQ(static_cast<double>(f.data()[i]), d.data()[i]) << field << " at " << i;
        }
        if (f.size() > 0) {
            held_.insert(field);
        }
    }
    template <std::size_t N>
    void same(const std::string& field,
              const xt::xtensor<float, N>& f,
              const xt::xtensor<double, N>& d) {
        EXPECT_EQ(attn::shape_of(f), attn::shape_of(d)) << field;
        values(field, f, d);
    }
    void same(const std::string& field,
              const attn::InputTensor& f,
              const attn::BasicInputTensor<double>& d) {
        EXPECT_EQ(attn::shape_of(f), attn::shape_of(d)) << field;
        values(field, f, d);
    }
    void same(const std::string& field, const std::vector<float>& f, const std::vector<double>& d) {
        values(field, f, d);
    }
    void same(const std::string& field, float f, double d) {
        EXPECT_EQ(static_cast<double>(f), d) << field;
        held_.insert(field);
    }
    template <class F, class D>
    void same(const std::string& field, const std::optional<F>& f, const std::optional<D>& d) {
        ASSERT_EQ(f.has_value(), d.has_value()) << field;
        if (f) {
            same(field, *f, *d);
        }
    }
    void same(const std::string& field,
              const attn::BasicProjections<float>& f,
              const attn::BasicProjections<double>& d) {
        same(field + ".w_q", f.w_q, d.w_q);
        same(field + ".w_k", f.w_k, d.w_k);
        same(field + ".w_v", f.w_v, d.w_v);
        same(field + ".w_o", f.w_o, d.w_o);
        same(field + ".b_q", f.b_q, d.b_q);
        same(field + ".b_k", f.b_k, d.b_k);
        same(field + ".b_v", f.b_v, d.b_v);
        same(field + ".b_o", f.b_o, d.b_o);
    }
    void same(const std::string& field,
              const attn::BasicNorm<float>& f,
              const attn::BasicNorm<double>& d) {
        EXPECT_EQ(f.kind, d.kind) << field;
        EXPECT_EQ(f.eps, d.eps) << field;
        same(field + ".weight", f.weight, d.weight);
        same(field + ".bias", f.bias, d.bias);
    }

    std::set<std::string>& held_;
};

class ProblemInputsTest : public attn::testing::TempDirTest {
  protected:
    /// Dyadic values k/8, |k| <= 16: exact in float32, and so are their sums.
    std::vector<float> dyadic(std::size_t n) {
        std::uniform_int_distribution<int> k(-16, 16);
        std::vector<float> v(n);
        for (float& x : v) {
            x = static_cast<float>(k(rng_)) / 8.0f;
        }
        return v;
    }
    /// An f4 .npy file of dyadic values; returns its name (relative to dir_).
    std::string npy(const std::string& name, const std::vector<std::size_t>& shape) {
        std::size_t n = 1;
        for (const std::size_t d : shape) {
            n *= d;
        }
        const std::vector<float> v = dyadic(n);
        write(name, attn::io::encode_npy(shape, v.data(), false));
        return name;
    }
    /// Decodes `doc` in f32 and in f64 and compares the inputs field by field.
    void decode_both(json doc) {
        doc["precision"] = "f32";
        const Problem f = decode_problem(doc, dir_);
        EXPECT_FALSE(f.doubles.has_value());
        doc["precision"] = "f64";
        const Problem d = decode_problem(doc, dir_);
        ASSERT_TRUE(d.doubles.has_value());
        // The float32 inputs of an f64 problem are those of the f32 one.
        Compare(held_).inputs(d, *d.doubles);
        std::set<std::string> unused;
        Compare(unused).inputs(f, *d.doubles);
    }

    std::mt19937 rng_{12};
    std::set<std::string> held_;
};

TEST_F(ProblemInputsTest, EveryFieldDecodedOnceForBothPrecisions) {
    // Projected sources with key and value, params from .npy files, a bias plus an additive
    // mask broadcast into it, and the score features.
    decode_both({{"query", npy("q.npy", {2, 3, 4})},
                 {"key", npy("k.npy", {1, 5, 4})},
                 {"value", npy("v.npy", {1, 5, 4})},
                 {"num_heads", 2},
                 {"params",
                  {{"w_q", npy("w_q.npy", {4, 4})},
                   {"w_k", npy("w_k.npy", {4, 4})},
                   {"w_v", npy("w_v.npy", {4, 4})},
                   {"w_o", npy("w_o.npy", {4, 4})},
                   {"b_q", npy("b_q.npy", {4})},
                   {"b_k", npy("b_k.npy", {4})},
                   {"b_v", npy("b_v.npy", {4})},
                   {"b_o", npy("b_o.npy", {4})}}},
                 {"mask_convention", "additive"},
                 {"mask", json::array({-1.5, 0, 2, 0.25, 0})},
                 {"bias", npy("bias.npy", {2, 2, 3, 5})},
                 {"scale", 0.125},
                 {"softcap", 30},
                 {"alibi", json::array({0.5, 0.25})},
                 {"sinks", json::array({-1.5, "-inf"})}});
    // Rank-4 heads (an .npy query is read straight into its float32 tensor), GQA, and the
    // default ALiBi slopes (powers of two for 2 heads).
    decode_both({{"query", npy("q4.npy", {1, 2, 3, 4})},
                 {"key", npy("k4.npy", {1, 1, 5, 4})},
                 {"value", npy("v4.npy", {1, 1, 5, 4})},
                 {"alibi", true}});
    // A context and init weights (of width 4: (2u - 1) / sqrt(4) is exact in float32).
    decode_both({{"input", npy("x.npy", {3, 4})},
                 {"context", npy("c.npy", {5, 4})},
                 {"num_heads", 2},
                 {"init", {{"seed", 7}, {"dim", 4}, {"output_projection", true}, {"bias", true}}}});
    // A Llama checkpoint: token_ids through its embeddings, its projections and its norm.
    const std::string pre = "model.layers.0.self_attn.";
    write("llama.safetensors",
          f32_safetensors({{pre + "q_proj.weight", {4, 4}, dyadic(16)},
                           {pre + "k_proj.weight", {4, 4}, dyadic(16)},
                           {pre + "v_proj.weight", {4, 4}, dyadic(16)},
                           {pre + "o_proj.weight", {4, 4}, dyadic(16)},
                           {"model.layers.0.input_layernorm.weight", {4}, dyadic(4)},
                           {"model.embed_tokens.weight", {10, 4}, dyadic(40)}}));
    decode_both({{"token_ids", json::array({json::array({1, 7, 3})})},
                 {"num_heads", 2},
                 {"params", {{"file", "llama.safetensors"}, {"prefix", pre}}}});

    // Every field (and every projection) held something in one of the documents above.
    const std::set<std::string> every{"query_src",
                                      "key_src",
                                      "value_src",
                                      "q4",
                                      "k4",
                                      "v4",
                                      "projections.w_q",
                                      "projections.w_k",
                                      "projections.w_v",
                                      "projections.w_o",
                                      "projections.b_q",
                                      "projections.b_k",
                                      "projections.b_v",
                                      "projections.b_o",
                                      "bias",
                                      "scale",
                                      "softcap",
                                      "alibi_slopes",
                                      "sinks",
                                      "norm.weight"};
    EXPECT_EQ(held_, every);
}

TEST_F(ProblemInputsTest, F64KeepsWhatFloat32Rounds) {
    // 0.1 and 1/3 are not float32 values: the f64 inputs hold the JSON decimals as read.
    const json row = json::array({0.1, 1.0 / 3.0});
    const Problem p = decode_problem(
        {{"input", json::array({row, row})}, {"scale", 0.1}, {"precision", "f64"}}, dir_);
    ASSERT_TRUE(p.doubles.has_value());
    EXPECT_EQ(p.doubles->query_src(0, 1, 0), 0.1);
    EXPECT_EQ(p.doubles->key_src(0, 0, 1), 1.0 / 3.0);
    EXPECT_EQ(*p.doubles->scale, 0.1);
    EXPECT_EQ(p.query_src(0, 1, 0), 0.1f);
    EXPECT_EQ(*p.scale, 0.1f);
    EXPECT_EQ(&p.inputs<float>(), static_cast<const Inputs*>(&p));
    EXPECT_EQ(&p.inputs<double>(), &*p.doubles);
}

} // namespace
