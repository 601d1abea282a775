// A whole model's forward pass from token ids: "params" names a model folder (config.json
// + model.safetensors or its shards), "token_ids" the input. Every layer is the
// architecture's block repeated (attn/block.hpp), its weights read when the layer runs and
// dropped after; the selected layers' attention results are stacked as for hidden states.
#pragma once

#include "attn/block.hpp"
#include "attn/embedding.hpp"
#include "attn/model/architecture.hpp"
#include "attn/model/folder.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/solve.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

namespace attn::problem {

struct ModelRun {
    std::shared_ptr<const model::ModelFolder> folder;
    model::ModelSpec spec;
    TokenIds ids; ///< [B, L]
    bool want_hidden_states = false;
    /// stack.layers: the selected layers; stack.first: the problem every layer shares
    /// (batch, length, heads, masks, causal, "return", tokens, id, precision), what explain,
    /// the heatmap and the result document read.
    LayerStack stack;
};

/// Every layer's weights kept across model runs of one model (a census runs the same model
/// on many texts): each layer read on first use, by whichever run needs it first
/// (thread-safe; concurrent runs share the blocks). A quantized or half-precision matrix
/// is kept as its view of the stored bytes (a GGUF's mapping, a shard's copy), an F32 one
/// as float32. fits() counts every layer as float32 (an upper bound): use it when they fit.
class BlockCache {
  public:
    std::shared_ptr<const BasicBlockWeights<float>>
    get(const model::ModelFolder& folder,
        const model::ModelSpec& spec,
        std::size_t layer,
        model::Activations activations = model::Activations::f32);
    /// Whether every layer of `run`'s model in float32 takes at most `budget` bytes.
    static bool fits(const ModelRun& run, std::uint64_t budget);

  private:
    std::mutex mutex_;
    std::map<std::pair<std::size_t, model::Activations>,
             std::shared_ptr<const BasicBlockWeights<float>>>
        blocks_;
};

/// Whether "params" names a whole model: a folder (a directory, or {"file": DIR}), a
/// .gguf file, or a .safetensors file with config.json beside it (or "config") that the
/// document runs token ids or text through (`ids_given`: token_ids handed over as an
/// array), without a "prefix", an input or hidden_states (one layer's weights then).
bool is_model_run(const nlohmann::json& doc,
                  const std::filesystem::path& base,
                  bool ids_given = false);

/// Decodes a whole-model document: opens the folder, reads config.json into the
/// architecture's spec, reads token_ids and the shared fields. Throws InputError.
ModelRun decode_model_run(const nlohmann::json& doc,
                          const std::filesystem::path& base,
                          ArrayValues given = {});

/// Runs the forward pass through every layer up to the last selected one (all of them
/// with hidden_states) and stacks the selected layers' results as solve_layer_stack().
Solution solve_model_run(const ModelRun& run, const SolveOptions& options);

/// A model run's memory, in bytes, by what holds it (model_memory.cpp).
struct ModelMemory {
    std::uint64_t embeddings = 0;    ///< the embedding tables (token rows in use only)
    std::uint64_t layer_weights = 0; ///< one layer's weights (one layer lives at a time)
    std::uint64_t activations = 0;   ///< one layer's activations (residual, Q/K/V, MLP)
    std::uint64_t attention = 0;     ///< one layer's attention: its weights, kernel scratch
    std::uint64_t results = 0;       ///< every kept result: layers' arrays, hidden states
    std::uint64_t total = 0;
};

/// What a model run would need with these options: shapes only, nothing read.
ModelMemory estimate_model_memory(const ModelRun& run, const SolveOptions& options);

/// "1.2 GiB (embeddings ..., one layer's weights ..., activations ..., results of N layers
/// ...)": the estimate and its parts, as check_model_memory and explain show them.
std::string memory_text(const ModelMemory& m, std::size_t layers);

/// Refuses (InputError "max_memory: this model run needs about ...") a run whose
/// estimate exceeds options.max_memory (0: io::memory_limit()), before anything is read.
void check_model_memory(const ModelRun& run, const SolveOptions& options);

/// The per-layer plan, one line each, for explain.
std::vector<std::string> model_run_plan(const ModelRun& run);

} // namespace attn::problem
