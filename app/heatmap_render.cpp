// The figure's bytes out (see heatmap_render.hpp): warnings printed, the file written.
// Flags are cmd_heatmap.cpp's and output_options.cpp's; the work is the library's.
#include "heatmap_render.hpp"

#include "attn/error.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/plot/weights_figure.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <unistd.h>

namespace attn::app {

std::vector<std::uint8_t> encode_figure(const render::HeatmapInput& in,
                                        const render::HeatmapOptions& o,
                                        FileFormat format,
                                        bool quiet) {
    plot::Encoded e = plot::encode_figure(in, o, format);
    if (!quiet) {
        for (const std::string& w : e.warnings) {
            warn(w);
        }
    }
    return std::move(e.bytes);
}

void add_figure_options(CLI::App& cmd,
                        double& font_size,
                        std::size_t& cols,
                        std::size_t& view_top_k,
                        const char* group) {
    cmd.add_option("--font-size",
                   font_size,
                   "heatmap label size in points (default 10; title 1.2x); the figure grows so "
                   "that every token label is drawn")
        ->type_name("PT")
        ->group(group);
    cmd.add_option("--cols",
                   cols,
                   "heatmap panels per row of the grid (default: one row up to 4, then square)")
        ->check(positive_count())
        ->group(group);
    cmd.add_option("--view-top-k",
                   view_top_k,
                   "HTML view of maps longer than 4096: each query row's K strongest keys are "
                   "kept exactly (default 32; the rest is shown pooled)")
        ->type_name("K")
        ->check(positive_count())
        ->group(group);
}

void write_output(const std::string& path,
                  const std::vector<std::uint8_t>& bytes,
                  FileFormat format) {
    if (path == "-" && format == FileFormat::png && isatty(STDOUT_FILENO) == 1) {
        throw InputError("-o -: stdout is a terminal; redirect it to a file, or use --term");
    }
    io::write_file_atomic(path, bytes);
}

void write_heatmap_file(const std::string& path,
                        const io::Array& weights,
                        const problem::Problem* problem,
                        const OutputOptions& options,
                        const std::vector<std::size_t>& layers) {
    const FileFormat format = file_format(path, "", "--heatmap");
    plot::WeightsFigure f = plot::result_figure(
        weights, problem, layers, options.name, options.font_size, options.cols);
    f.options.threads = options.threads;
    f.options.view_top_k = options.view_top_k;
    write_output(path, encode_figure(f.input, f.options, format, options.quiet), format);
}

} // namespace attn::app
