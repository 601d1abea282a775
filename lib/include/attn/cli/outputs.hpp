// Where a solved problem goes: the output settings of `attn compute` as plain values (the
// front end's flags fill them), the checks before any work, the format of each file (by
// extension or --format), the encoding of arrays (.npy, .json, .npz) and the writing of
// the requested files, each through io::write_file_atomic ("-" is stdout).
#pragma once

#include "attn/attention.hpp"
#include "attn/io/array.hpp"
#include "attn/io/npy.hpp"
#include "attn/problem/layers.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn::cli {

// The library's names, as the outputs use them.
using problem::LayerStack;
using problem::Problem;
using problem::Solution;
using problem::SolveOptions;

/// The output settings; empty/0 = not given.
struct OutputOptions {
    std::string output;  ///< --output FILE (.npy/.json/.npz, or - for stdout); empty: the
                         ///< result document on stdout
    std::string weights; ///< --weights FILE (.npy/.json, or -)
    std::string heatmap; ///< --heatmap FILE.png|.svg|.html
    std::string format;  ///< --format npy|json; empty: by extension, json for -
    std::string dtype = "f32";
    bool no_weights = false;
    bool quiet = false;
    bool progress = false; ///< --progress: a model run's layer lines even off a terminal
    unsigned threads = 0;
    Simd simd = Simd::best;    ///< --simd TARGET
    std::string max_memory;    ///< --max-memory SIZE; empty: io::default_memory_limit()
    bool check_finite = false; ///< --check-finite
    double font_size = 10.0;   ///< --font-size PT (of --heatmap)
    std::size_t cols = 0;      ///< --cols N (of --heatmap); 0: automatic
    /// --view-top-k K: each query row's strongest keys kept exactly by --heatmap FILE.html
    /// for maps longer than 4096 ("view_top_k").
    std::size_t view_top_k = 32;
    std::string name; ///< the problem's file name (not a flag): --heatmap's title, unless an id

    /// What solve() is asked for: the weights when something takes them (the result
    /// document, an .npz, --weights, --heatmap) and --no-weights is not given.
    SolveOptions solve_options() const;
};

/// True for a path ending in .npz (case-insensitive): every array of the result.
bool is_npz(const std::string& path);

/// The format of an --output/--weights file: --format, else json for "-" and for a device
/// or FIFO without extension (as stdout), else by extension (io::array_format_for: InputError
/// for an unknown one).
io::ArrayFormat output_format(const std::string& path, const std::string& format);

/// An array's bytes for `path` in its output_format: .npy in --dtype, or the JSON literal
/// and a newline.
std::vector<std::uint8_t>
encode_array(const std::string& path, const io::Array& a, const OutputOptions& o);

/// The requested results beyond output and weights, by name ("lse", "entropy", "argmax",
/// "top_k", "hidden_states" when `hidden_states`).
std::vector<std::string> extra_results(const Problem& p, bool hidden_states);

/// Refuses outputs that would overwrite one of the problem's inputs (its arrays, params
/// files and `problem_file`, the PROBLEM file: empty or "-" for none) or each other:
/// --output, --weights, --heatmap. Also refuses an --output that cannot hold every
/// requested result ("never drop one"): an .npy file with --return arrays (`hidden_states`:
/// a model run asked for them) is exit 2 naming what can (.npz, .json, stdout).
void check_outputs(const Problem& problem,
                   const std::string& problem_file,
                   const OutputOptions& o,
                   bool hidden_states = false);

/// --weights FILE.npy written by the kernel itself, row block by row block, into the file
/// (io::NpyFileWriter): the destination solve() gets (SolveOptions::weights_to) and the
/// file write_outputs() commits.
struct WeightsFile {
    io::NpyFileWriter file;
    WeightsDestination<float> to;
    WeightsFile(const std::string& path,
                const std::vector<std::size_t>& shape,
                io::NpyFloat type = io::NpyFloat::f32);
};

/// The shape of `problem`'s weights as solve() hands them to SolveOptions::weights_to
/// (its plan's), with a leading axis of `layers` for a stack (0: one layer).
std::vector<std::size_t> weights_shape(const Problem& problem, std::size_t layers);

/// The mapped --weights file for this problem's weights (`layers` > 0: a stack of that
/// many layers' weights), or null where they take today's path: no --weights, a format
/// other than .npy (float32, or float16 with --weights-dtype f16; not --dtype f64), stdout or a
/// device, --heatmap unless `heatmap_streamed` (the page takes them from the kernel too:
/// plot::StreamedView; else it needs them in memory), a problem whose weights are not the kernel's
/// as they are (weights_direct). Call after check_outputs(). Throws SystemError when the file
/// cannot be made (a full disk, RLIMIT_FSIZE): before any work.
std::unique_ptr<WeightsFile> map_weights_file(const Problem& problem,
                                              const OutputOptions& o,
                                              std::size_t layers = 0,
                                              bool heatmap_streamed = false);

/// What the front end does after write_outputs: the result document to print (when no
/// output went to a file or stdout), and the warning to give (unless --quiet).
struct WrittenOutputs {
    std::optional<std::string> document; ///< one line, without '\n'
    std::string warning;                 ///< the fully-masked warning, or ""
};

/// Draws the weights as --heatmap's file (the front end's renderer): its path, the
/// weights (null: solve() handed them to the page's builder as it made them), and a
/// stack's layer numbers (empty for one layer).
using HeatmapWriter = std::function<void(
    const std::string& path, const io::Array* weights, const std::vector<std::size_t>& layers)>;

/// Writes the requested files (atomically; "-" is stdout): --output (an array, the result
/// document when extras were asked for and it is .json, every array for .npz), --weights
/// (or commits `weights_file`, which the kernel wrote), --heatmap through `heatmap`. At
/// most one output may be "-". Every format is known before any file is written. Throws
/// InputError for conflicting options, SystemError when a write fails.
/// `stack`: the solution is a stacked every-layer result of this stack (problem is its
/// first layer's): the result document gains "layers", the heatmap is the model view.
WrittenOutputs write_outputs(const Problem& problem,
                             const Solution& solution,
                             const OutputOptions& o,
                             const LayerStack* stack,
                             WeightsFile* weights_file,
                             const HeatmapWriter& heatmap);

} // namespace attn::cli
