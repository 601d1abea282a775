// `attn info FILE`: the shape and dtype of an array file (.npy or .json), read with the
// same strict readers as every other command.
#include "cli.hpp"
#include "compute_options.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace attn::app {

namespace {

struct InfoArgs {
    std::string file;
    bool json = false;
};

void run_info(const InfoArgs& a) {
    const io::Array arr = read_array_arg(a.file, io::ArrayKind::mask);  // "-": stdin
    std::size_t n = 1;
    for (auto d : arr.shape) {
        n *= d;
    }
    std::string dtype = arr.dtype;
    if (dtype == "json") {
        dtype = arr.is_bool ? "bool (JSON)" : "number (JSON)";
    }
    if (a.json) {
        std::cout << "{\"file\":" << nlohmann::json(a.file).dump(-1, ' ', false,
                                                                 nlohmann::json::error_handler_t::replace)
                  << ",\"shape\":" << nlohmann::json(arr.shape).dump() << ",\"dtype\":\""
                  << arr.dtype << "\"}\n";
    } else {
        std::cout << a.file << ": shape " << shape_string(arr.shape) << ", dtype " << dtype
                  << ", " << n << " element" << (n == 1 ? "" : "s") << '\n';
    }
}

}  // namespace

void add_info(CLI::App& app) {
    auto args = std::make_shared<InfoArgs>();
    CLI::App* cmd = app.add_subcommand("info", "Print the shape and dtype of an array file");
    add_version_flag(*cmd);
    cmd->add_option("file", args->file, "a .npy or .json array file, or - for stdin")->required();
    cmd->add_flag("--json", args->json, "print {\"file\", \"shape\", \"dtype\"} as JSON");
    cmd->callback([args] { run_info(*args); });
}

}  // namespace attn::app
