// `attn heatmap` (placeholder until the renderer lands; see issue #3).
#include "cli.hpp"
#include "compute_options.hpp"

#include "attn/error.hpp"

namespace attn::app {

void write_heatmap_file(const std::string& path, const io::Array&, const io::Problem*) {
    throw InputError(path + ": heatmaps are not available in this build yet");
}

void add_heatmap(CLI::App&) {}

}  // namespace attn::app
