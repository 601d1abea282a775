// What `attn info` (or any front end) tells of a file: an array (each array of a .npz), a
// .safetensors checkpoint, a .gguf model or a model folder, read with the same strict
// readers as every other command. Each summary is data (safetensors_summary, gguf_summary)
// and two renderings of it: the one JSON line of --json and the text of a terminal.
#pragma once

#include "attn/io/array.hpp"

#include <string>
#include <vector>

namespace attn::model {

/// One summary as printed: `json` is one line, `text` one or more; each ends in '\n'.
/// `text` names options by attn::option_name (the CLI prints them as flags, spell_options
/// as fields).
struct FileInfo {
    std::string json;
    std::string text;
};

/// How `attn info` reads a path: a .gguf first (a whole model too, but its summary is the
/// file's own), then a model folder, a .safetensors file, a bare .npz (every array), and
/// otherwise one array (.npy, .json, x.npz:NAME, - for stdin).
enum class InfoKind { gguf, model_folder, safetensors, npz, array };
InfoKind info_kind(const std::string& path);

/// An array: {"file", "shape", "dtype"}; text "FILE: shape [..], dtype D, N elements".
FileInfo array_info(const std::string& file, const io::Array& arr);

/// Every array of a bare .npz archive, in archive order, as array_info of "FILE:NAME".
std::vector<FileInfo> npz_info(const std::string& file);

/// A .safetensors file: its header (checked strictly; no tensor data is read), every
/// tensor's name, dtype, shape and size, and the layers `params` recognises
/// (safetensors_summary; the text as a table).
FileInfo safetensors_info(const std::string& file);

/// A .gguf file: its header (checked strictly; no tensor is dequantized), the {arch}.*
/// hyper-parameters, the tokenizer in short, the tensor table and the Hugging Face config
/// the model maps to (gguf_summary, with "file").
FileInfo gguf_info(const std::string& file);

/// A model folder: its architecture and sizes, each with where it came from. Throws
/// InputError when the folder has no config.json.
FileInfo model_folder_info(const std::string& folder);

} // namespace attn::model
