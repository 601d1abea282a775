// Weights read back for drawing (see attn/problem/weights_read.hpp).
#include "attn/problem/weights_read.hpp"

#include "attn/error.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/path_name.hpp"

#include <algorithm>
#include <optional>

namespace attn::problem {

namespace {

/// The layer numbers an archive's "layers" holds (integers >= 0, one dimension).
std::vector<std::size_t> layer_numbers(const io::Array& a, const std::string& name) {
    const bool integers = a.dtype.rfind("int", 0) == 0 || a.dtype.rfind("uint", 0) == 0;
    if (a.shape.size() != 1 || a.shape[0] == 0 || !integers) {
        throw InputError(name +
                         ": expected a list of layer numbers (integers, one dimension), "
                         "got " +
                         a.dtype + " of shape " + shape_string(a.shape));
    }
    std::vector<std::size_t> out;
    for (const float v : a.values) {
        if (!(v >= 0.0F)) {
            throw InputError(name + ": layer numbers are >= 0, got " +
                             std::to_string(static_cast<long long>(v)));
        }
        out.push_back(static_cast<std::size_t>(v));
    }
    return out;
}

/// The array as read, or a result document's weights and labels.
void read_into(LoadedWeights& l,
               const std::string& path,
               const std::function<std::vector<std::uint8_t>()>& read_stdin) {
    if (const auto ref = io::parse_npz_ref(path)) {
        // A bare archive: its "weights" array, or its only array.
        const std::vector<std::string> all = io::npz_members(io::read_file(ref->file), l.name);
        const auto has = [&all](const char* m) {
            return std::find(all.begin(), all.end(), m) != all.end();
        };
        std::string member = ref->member;
        if (member.empty()) {
            member = has("weights") ? "weights" : "";
        }
        l.array = io::read_npz_array(ref->file, member);
        if (member == "weights" && has("layers")) {
            // A stacked run's archive says which layers its weights' leading axis holds.
            l.layers = layer_numbers(io::read_npz_array(ref->file, "layers"),
                                     ref->file.string() + ":layers");
        }
        return;
    }
    const std::string ext = io::lower_extension(path);
    if (ext == ".npy" && path != "-" && io::is_regular_file(path)) {
        // Mapped, not read: a large file costs the process no copy of its values.
        auto view = std::make_shared<const io::NpyView>(path, l.name);
        l.array.shape = view->shape();
        l.array.dtype = view->dtype();
        l.view = std::move(view);
        return;
    }
    const std::vector<std::uint8_t> bytes = path == "-" ? read_stdin() : io::read_file(path);
    // The extension decides when it names a format; else the bytes do (NPY's magic).
    const std::optional<io::ArrayFormat> by_name =
        ext == ".npy"    ? std::optional(io::ArrayFormat::npy)
        : ext == ".json" ? std::optional(io::ArrayFormat::json)
                         : std::nullopt;
    ResultFile r = read_result_bytes(bytes, l.name, {}, by_name);
    if (r.array) {
        l.array = std::move(*r.array);
        return;
    }
    if (!r.weights) {
        throw InputError(l.name + ": a JSON object without \"weights\" (expected an array, or "
                                  "a result of attn compute without --no-weights)");
    }
    l.array = std::move(*r.weights);
    l.document = true;
    l.query_tokens = std::move(r.query_tokens);
    l.key_tokens = std::move(r.key_tokens);
    l.layers = std::move(r.layers);
}

} // namespace

LoadedWeights read_weights(const std::string& path,
                           const std::function<std::vector<std::uint8_t>()>& read_stdin) {
    LoadedWeights l;
    l.name = path == "-" ? "<stdin>" : path;
    read_into(l, path, read_stdin);
    // A stacked result's layers (or a rank-5 array's first axis: [layers, B, H, Lq, Lk])
    // come before the axes.
    const std::size_t rank = l.array.shape.size();
    const bool stacked = (!l.layers.empty() && rank > 0) || rank == 5;
    l.axes = axes_of_rank(rank - (stacked ? 1 : 0));
    return l;
}

} // namespace attn::problem
