// Two models compared on the same token ids (attn/problem/attention_compare.hpp): A runs
// with its weights streamed to a temporary mapped .npy, then B runs with each block of its
// rows compared against A's as its kernel hands them over. Not here: the metrics
// (attention_compare.cpp), files, printing.
#include "attn/error.hpp"
#include "attn/problem/attention_compare.hpp"
#include "attn/problem/model_run.hpp"

#include <atomic>
#include <optional>
#include <random>
#include <unistd.h>

namespace attn::problem {

namespace fs = std::filesystem;

namespace {

/// A model document decoded, its InputErrors naming the side ("A: ...", "B: ...").
ModelRun decode_side(const nlohmann::json& doc, const fs::path& base, const char* side) {
    try {
        return decode_model_run(doc, base);
    } catch (const InputError& e) {
        throw InputError(std::string(side) + ": " + e.marked());
    }
}

/// The models must agree on layers, heads and the token ids of the input.
void check_same_input(const ModelRun& a, const ModelRun& b) {
    if (a.spec.layers != b.spec.layers || a.spec.heads != b.spec.heads) {
        throw InputError("B: expected a model of " + std::to_string(a.spec.layers) +
                         " layers and " + std::to_string(a.spec.heads) + " heads (as A), got " +
                         std::to_string(b.spec.layers) + " layers and " +
                         std::to_string(b.spec.heads) + " heads");
    }
    const auto same_mask = [](const std::optional<Mask>& x, const std::optional<Mask>& y) {
        return x.has_value() == y.has_value() && (!x || *x == *y);
    };
    if (a.ids.shape() != b.ids.shape() || a.ids != b.ids ||
        !same_mask(a.stack.first.key_padding, b.stack.first.key_padding)) {
        throw InputError("B: its tokenizer gives other token ids than A's for the text (" +
                         std::to_string(b.ids.size()) + " ids against " +
                         std::to_string(a.ids.size()) + "): the models cannot be compared");
    }
}

/// A temporary file's path in `dir`, unique to this process and call.
fs::path temp_npy(const fs::path& dir) {
    static std::atomic<unsigned> count{0};
    std::random_device random;
    return dir / ("attn-compare-" + std::to_string(::getpid()) + "-" + std::to_string(random()) +
                  "-" + std::to_string(count++) + ".npy");
}

/// `shape`'s maps of one model run written to a temporary file, which is mapped and then
/// removed (the mapping outlives its name, so nothing is left behind after this returns).
/// `also` receives each block too (may be empty).
std::shared_ptr<const io::NpyView>
run_to_map(const ModelRun& run,
           SolveOptions options,
           const std::vector<std::size_t>& shape,
           const fs::path& dir,
           const std::function<void(std::size_t, const float*, std::size_t)>& also) {
    const fs::path path = temp_npy(dir);
    struct Remove {
        const fs::path& path;
        ~Remove() {
            std::error_code ec;
            fs::remove(path, ec);
        }
    } remove{path};
    io::NpyFileWriter writer(path, shape);
    const WeightsDestination<float> to{
        writer.size(), [&](std::size_t first, const float* values, std::size_t count) {
            if (also) {
                also(first, values, count);
            }
            writer.write(first, values, count);
        }};
    options.weights_to = &to;
    solve_model_run(run, options);
    writer.commit();
    return std::make_shared<const io::NpyView>(path, path.string());
}

} // namespace

AttentionComparison compare_models(const ModelCompareRequest& r, ComparedMaps* maps) {
    const ModelRun a = decode_side(r.a, r.base, "A");
    const ModelRun b = decode_side(r.b, r.base, "B");
    check_same_input(a, b);
    CompareLayout layout;
    layout.outer = a.spec.layers;
    layout.batch = a.ids.shape()[0];
    layout.inner = a.spec.heads;
    layout.lq = layout.lk = a.ids.shape()[1];
    layout.grid = {layout.outer, layout.inner};
    if (const std::optional<Mask>& padding = a.stack.first.key_padding) {
        layout.query_rows.resize(layout.batch * layout.lq); // query i is key i's token
        for (std::size_t row = 0; row < layout.batch; ++row) {
            for (std::size_t i = 0; i < layout.lq; ++i) {
                layout.query_rows[row * layout.lq + i] =
                    (*padding)(padding->shape()[0] > 1 ? row : 0, 0, 0, i);
            }
        }
    }
    const std::vector<std::size_t> shape{
        layout.outer, layout.batch, layout.inner, layout.lq, layout.lk};
    const std::size_t layer_size = layout.batch * layout.inner * layout.lq * layout.lk;
    SolveOptions o = r.solve;
    o.want_weights = true;
    o.rollout = nullptr;
    o.on_layer = [&](std::size_t done, std::size_t) {
        if (r.progress) {
            r.progress(done, 2 * layout.outer);
        }
    };
    std::shared_ptr<const io::NpyView> map_a;
    try {
        map_a = run_to_map(a, o, shape, r.temp_dir, {});
    } catch (const InputError& e) {
        throw InputError("A: " + e.marked());
    }
    CompareRows rows(layout, r.top_k);
    const float* at_a = map_a->values().data();
    const auto compare = [&](std::size_t first, const float* values, std::size_t count) {
        rows.add(first, at_a + first, values, count);
    };
    o.on_layer = [&](std::size_t done, std::size_t) {
        map_a->release((done - 1) * layer_size, layer_size); // A's layer is done with
        if (r.progress) {
            r.progress(layout.outer + done, 2 * layout.outer);
        }
    };
    std::shared_ptr<const io::NpyView> map_b;
    try {
        if (r.keep_maps) {
            map_b = run_to_map(b, o, shape, r.temp_dir, compare);
        } else {
            const WeightsDestination<float> to{map_a->values().size(), compare};
            o.weights_to = &to;
            solve_model_run(b, o);
        }
    } catch (const InputError& e) {
        throw InputError("B: " + e.marked());
    }
    if (maps != nullptr) {
        maps->a = map_a;
        maps->b = map_b;
        maps->layout = layout;
        if (a.stack.first.query_tokens) { // the text's tokens shown readably (batch row 0)
            maps->tokens = *a.stack.first.query_tokens;
        }
    }
    return rows.result();
}

} // namespace attn::problem
