// A float32 model run multiplies each block's matrices as its file stores them
// (model::load_block's stored weights, stored_matmul with a row map): every projection
// and MLP product of layer 0 of the GGUF fixtures (llama.cpp's converter's files: Q/K
// rows permuted, GPT-2's fused Conv1D q|k|v stored transposed, Phi-3's fused q|k|v and
// gate|up, quantized llama and qwen2 with a different type per matrix) against float64
// of the same weights as read() dequantizes, permutes back, splits and transposes them
// (load_block<double>), within the float32 summation bound. Also: the row map of
// stored_matmul against the gathered rows, and its errors.
#include "attn/model/architecture.hpp"
#include "attn/model/folder.hpp"
#include "attn/model/matmul.hpp"
#include "attn/model/quants.hpp"
#include "attn/model/weights.hpp"
#include "attn/projection.hpp"
#include "unit/ggml_blocks.hpp"
#include "unit/test_files.hpp"
#include "unit/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace attn::model {
namespace {

using testing::gguf_fixture;

/// stored's product of x [n, cols] against float64 x · Wᵀ of `want` [rows, cols].
void expect_product(const std::optional<StoredWeight>& stored,
                    const BasicMatrix<double>& want,
                    const std::string& what) {
    ASSERT_TRUE(stored.has_value()) << what << ": not multiplied as stored";
    ASSERT_EQ(stored->rows, want.shape()[0]) << what;
    ASSERT_EQ(stored->cols, want.shape()[1]) << what;
    const std::size_t n = 5;
    const std::size_t k = stored->cols;
    const std::size_t m = stored->rows;
    Tensor3 x = Tensor3::from_shape({1, n, k});
    const std::vector<float> values = testing::random_floats(n * k, 3);
    std::copy(values.begin(), values.end(), x.data());
    const Tensor3 y = linear(x, *stored, nullptr, what.c_str(), 2);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < m; ++j) {
            double sum = 0;
            double abs = 0;
            for (std::size_t p = 0; p < k; ++p) {
                const double v = static_cast<double>(x(0, i, p)) * want(j, p);
                sum += v;
                abs += std::fabs(v);
            }
            ASSERT_LE(std::fabs(static_cast<double>(y(0, i, j)) - sum),
                      testing::float32_sum_bound(k, abs))
                << what << " at [" << i << ", " << j << "]: got " << y(0, i, j) << ", want " << sum;
        }
    }
}

class StoredBlock : public ::testing::TestWithParam<std::string> {};

TEST(StoredBlockF32, ARunReadsF32WeightsForBlas) {
    const ModelFolder folder(gguf_fixture("models/llama.gguf"));
    const ModelSpec spec = model_spec(
        *folder.gguf_config_text(), folder.path().string(), folder.names(), std::nullopt);
    const BasicBlockWeights<float> w = load_block<float>(folder, spec, 0);
    EXPECT_TRUE(w.attention.w_q && !w.attention.stored_q);
    EXPECT_TRUE(w.mlp.up.size() > 0 && !w.mlp.stored_up);
}

TEST_P(StoredBlock, EveryProductMatchesFloat64OfTheWeightsAsRead) {
    const ModelFolder folder(gguf_fixture(GetParam() + ".gguf"));
    const ModelSpec spec = model_spec(
        *folder.gguf_config_text(), folder.path().string(), folder.names(), std::nullopt);
    // The F32 fixtures' matrices as stored too (a run reads F32 for BLAS): the layouts.
    const BasicBlockWeights<float> got = load_block<float>(folder, spec, 0, true);
    const BasicBlockWeights<double> want = load_block<double>(folder, spec, 0);
    const BasicProjections<float>& p = got.attention;
    const BasicProjections<double>& q = want.attention;
    EXPECT_FALSE(p.w_q || p.w_k || p.w_v || p.w_o) << "a float32 copy was made";
    expect_product(p.stored_q, *q.w_q, "w_q");
    expect_product(p.stored_k, *q.w_k, "w_k");
    expect_product(p.stored_v, *q.w_v, "w_v");
    expect_product(p.stored_o, *q.w_o, "w_o");
    EXPECT_EQ(got.mlp.up.size() + got.mlp.down.size(), 0U) << "a float32 copy was made";
    expect_product(got.mlp.stored_up, want.mlp.up, "mlp.up");
    expect_product(got.mlp.stored_down, want.mlp.down, "mlp.down");
    ASSERT_EQ(want.mlp.gate.has_value(), got.mlp.stored_gate.has_value());
    if (want.mlp.gate) {
        expect_product(got.mlp.stored_gate, *want.mlp.gate, "mlp.gate");
    }
}

INSTANTIATE_TEST_SUITE_P(GgufFixtures,
                         StoredBlock,
                         ::testing::Values("models/llama",
                                           "models/gpt2",
                                           "models/phi3",
                                           "models/qwen2",
                                           "models/gemma",
                                           "quant_models/llama",
                                           "quant_models/qwen2"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                             std::string name = param.param;
                             std::replace(name.begin(), name.end(), '/', '_');
                             return name;
                         });

TEST(StoredMatmulRowMap, MultipliesTheMappedRowsOfEveryType) {
    // Rows picked out of order, one twice, past a panel of 64: each W row j is stored row
    // row_of[j], compared with the product of the gathered dequantized rows.
    const std::size_t stored_rows = 70;
    std::vector<std::size_t> row_of;
    for (std::size_t j = 0; j < 67; ++j) {
        row_of.push_back((j * 37 + 5) % stored_rows);
    }
    row_of.push_back(row_of[3]);
    for (const std::uint32_t type : {0U, 1U, 30U, 8U, 2U, 3U, 6U, 7U, 10U, 11U, 12U, 13U, 14U}) {
        const std::size_t k = ggml_type_traits(type)->block == 256 ? 512 : 96;
        const std::vector<std::uint8_t> bytes =
            testing::random_ggml_blocks(type, stored_rows * k, type + 1);
        std::vector<float> all(stored_rows * k);
        dequantize_ggml(type, bytes, all);
        BasicMatrix<double> want = BasicMatrix<double>::from_shape({row_of.size(), k});
        for (std::size_t j = 0; j < row_of.size(); ++j) {
            for (std::size_t p = 0; p < k; ++p) {
                want(j, p) = static_cast<double>(all[row_of[j] * k + p]);
            }
        }
        const std::optional<StoredWeight> w =
            stored_weight({type, row_of.size(), k, bytes, row_of}, nullptr);
        expect_product(w, want, std::string(ggml_type_traits(type)->name));
    }
}

TEST(StoredMatmulRowMap, RefusesAMapThatDoesNotFit) {
    const std::vector<std::uint8_t> q8(std::size_t{34} * 2); // two Q8_0 rows of 32
    const std::vector<std::size_t> past = {1, 2};
    const std::vector<std::size_t> one = {0};
    EXPECT_INPUT_ERROR(stored_weight({8, 2, 32, q8, past}, nullptr),
                       "weight row map: expected rows below 2, got row 2");
    EXPECT_INPUT_ERROR(stored_weight({8, 2, 32, q8, one}, nullptr),
                       "weight row map: expected 2 rows, got 1");
    const std::vector<std::uint8_t> ragged(std::size_t{34} * 2 + 1);
    EXPECT_INPUT_ERROR(stored_weight({8, 2, 32, ragged, past}, nullptr),
                       "weight bytes: expected whole rows of 34 bytes, got 69");
}

} // namespace
} // namespace attn::model
