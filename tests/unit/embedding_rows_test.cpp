// Reading only the rows of a table in use (ModelFolder::read_rows, model::load_model_embeddings):
// the rows equal those of the whole tensor bit for bit, for every GGUF type of the quantized
// fixtures (llama.cpp's own quantizers, fixtures/gguf/quant_models/) and for the tensors a
// GGUF read must fix (un-permuted Q/K, transposed Conv1D), and for safetensors; and a token
// table larger than the memory limit still embeds the few ids in use, which fails when the
// whole table is read.
#include "attn/embedding.hpp"
#include "attn/model/architecture.hpp"
#include "attn/model/folder.hpp"
#include "attn/model/weights.hpp"
#include "safetensors_bytes.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

namespace attn::testing {
namespace {

/// Every matrix of the folder: read_rows equals the rows of read, bit for bit.
void expect_rows_of_every_matrix(const model::ModelFolder& folder) {
    std::size_t matrices = 0;
    for (const std::string& name : folder.names()) {
        const io::Array whole = folder.read(name);
        if (whole.shape.size() != 2) {
            continue;
        }
        SCOPED_TRACE(name);
        ++matrices;
        const std::size_t n = whole.shape[0];
        const std::size_t c = whole.shape[1];
        const std::vector<std::size_t> rows = {n - 1, 0, n / 2, n - 1};
        const io::Array got = folder.read_rows(name, rows);
        ASSERT_EQ(got.shape, (std::vector<std::size_t>{rows.size(), c}));
        for (std::size_t i = 0; i < rows.size(); ++i) {
            for (std::size_t j = 0; j < c; ++j) {
                expect_same_float(got.values[i * c + j], whole.values[rows[i] * c + j], i * c + j);
            }
        }
    }
    EXPECT_GT(matrices, 2U);
}

TEST(ReadRows, QuantizedGgufRowsAreTheTensorsRows) {
    for (const char* name : {"quant_models/llama.gguf", "quant_models/qwen2.gguf"}) {
        SCOPED_TRACE(name);
        expect_rows_of_every_matrix(model::ModelFolder(gguf_fixture(name)));
    }
}

TEST(ReadRows, FixedGgufTensorsToo) {
    // llama: Q/K un-permuted; gpt2: Conv1D weights transposed back, learned positions.
    for (const char* name : {"models/llama.gguf", "models/gpt2.gguf"}) {
        SCOPED_TRACE(name);
        expect_rows_of_every_matrix(model::ModelFolder(gguf_fixture(name)));
    }
}

class ReadRowsFolder : public TempDirTest {};

TEST_F(ReadRowsFolder, SafetensorsRowsAreTheTensorsRows) {
    std::vector<float> table(21); // [7, 3]
    for (std::size_t i = 0; i < table.size(); ++i) {
        table[i] = 0.25F * static_cast<float>(i) - 2.0F;
    }
    const std::string half =
        entry("h.weight", "F16", "[2,2]", table.size() * 4, table.size() * 4 + 8);
    Bytes data = f32_bytes(table);
    const Bytes h = u16_bytes({0x3c00, 0xc000, 0x3800, 0x7bff}); // 1, -2, 0.5, 65504
    data.insert(data.end(), h.begin(), h.end());
    write("model.safetensors",
          file_of("{" + entry("t.weight", "F32", "[7,3]", 0, table.size() * 4) + "," + half + "}",
                  data));
    const model::ModelFolder folder(dir_ / "model.safetensors");
    const io::Array got = folder.read_rows("t.weight", std::vector<std::size_t>{6, 1, 6});
    ASSERT_EQ(got.shape, (std::vector<std::size_t>{3, 3}));
    EXPECT_EQ(got.values,
              (std::vector<float>{2.5F, 2.75F, 3.0F, -1.25F, -1.0F, -0.75F, 2.5F, 2.75F, 3.0F}));
    EXPECT_EQ(folder.read_rows("h.weight", std::vector<std::size_t>{1}).values,
              (std::vector<float>{0.5F, 65504.0F}));
    EXPECT_INPUT_ERROR(folder.read_rows("t.weight", std::vector<std::size_t>{7}), "row 7 of 7");
}

TEST(ModelEmbeddings, OnlyTheTokenRowsInUseAreRead) {
    // The quantized llama's token table: 8 ids × 256, Q8_0; 8 KiB as float32.
    const model::ModelFolder folder(gguf_fixture("quant_models/llama.gguf"));
    const model::ModelSpec spec =
        model::model_spec(*folder.gguf_config_text(), folder.path(), folder.names());
    const std::string name = spec.root + spec.arch.token_embedding;
    const io::Array whole = folder.read(name);
    ASSERT_EQ(whole.shape, (std::vector<std::size_t>{8, 256}));
    const TokenIds ids = {{5, 2, 5}, {7, 2, 2}};

    const ScopedLimit limit(4096); // less than the table, more than three rows
    EXPECT_INPUT_ERROR(folder.read(name), "memory limit");
    const model::ModelEmbeddings<float> e = model::load_model_embeddings<float>(folder, spec, ids);
    ASSERT_EQ(e.tables.token.shape(0), 3U); // ids 2, 5, 7
    EXPECT_EQ(e.ids, (TokenIds{{1, 0, 1}, {2, 0, 0}}));
    const std::size_t used[] = {2, 5, 7};
    for (std::size_t r = 0; r < 3; ++r) {
        for (std::size_t j = 0; j < 256; ++j) {
            expect_same_float(e.tables.token(r, j), whole.values[used[r] * 256 + j], j);
        }
    }
    EXPECT_INPUT_ERROR(model::load_model_embeddings<float>(folder, spec, TokenIds{{3, 8}}),
                       exactly("token_ids: id 8 at [0, 1] is outside the vocabulary of 8 tokens"));
}

} // namespace
} // namespace attn::testing
