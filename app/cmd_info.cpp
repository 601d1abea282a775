// `attn info FILE`: the flags, and the summary io::*_info returns (attn/model/file_info.hpp),
// printed as text or as one JSON line.
#include "attn/model/file_info.hpp"
#include "attn/model/store.hpp"
#include "cli.hpp"
#include "compute_options.hpp"

#include <iostream>
#include <string>

namespace attn::app {

namespace {

struct InfoArgs {
    std::string file;
    bool json = false;
};

void print(const model::FileInfo& info, bool json) {
    std::cout << (json ? info.json : cli::with_flags(info.text));
}

void run_info(const InfoArgs& args) {
    // A model in the Hugging Face cache or Ollama's store is shown by its resolved path.
    InfoArgs a = args;
    if (a.file != "-") {
        a.file = model::resolve_model_path(a.file, "").string();
    }
    switch (model::info_kind(a.file)) {
    case model::InfoKind::gguf:
        return print(model::gguf_info(a.file), a.json);
    case model::InfoKind::model_folder:
        return print(model::model_folder_info(a.file), a.json);
    case model::InfoKind::safetensors:
        return print(model::safetensors_info(a.file), a.json);
    case model::InfoKind::npz:
        for (const model::FileInfo& info : model::npz_info(a.file)) {
            print(info, a.json);
        }
        return;
    case model::InfoKind::array: // "-": stdin
        return print(model::array_info(a.file, read_array_arg(a.file, io::ArrayKind::mask)),
                     a.json);
    }
}

void info_options(CLI::App& cmd, InfoArgs& a) {
    cmd.add_option("file",
                   a.file,
                   "a .npy or .json array file (- for stdin), a .npz archive (every array; "
                   "x.npz:NAME for one), a .safetensors file, a .gguf file, or a model folder "
                   "(config.json + safetensors)")
        ->required();
    cmd.add_flag("--json",
                 a.json,
                 "print {\"file\", \"shape\", \"dtype\"} as JSON (safetensors: {\"file\", "
                 "\"format\", \"tensors\", \"layers\", \"metadata\"}; gguf: {\"file\", "
                 "\"format\", \"architecture\", \"hyperparameters\", \"tokenizer\", "
                 "\"metadata\", \"tensors\", \"config\"})");
}

} // namespace

void add_info(CLI::App& app) {
    add_command<InfoArgs>(app,
                          {"info",
                           "Print the shape and dtype of an array file (each array of a .npz), or "
                           "the tensors of a .safetensors "
                           "checkpoint and the attention layers (layout, prefix) it holds, or "
                           "the metadata and tensors of a .gguf model"},
                          info_options,
                          run_info);
}

} // namespace attn::app
