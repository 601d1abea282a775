// Models where users already keep them: the Hugging Face cache (huggingface_hub's layout:
// models--ORG--NAME/refs/REV -> snapshots/<commit>/) and Ollama's store
// (manifests/HOST/NAMESPACE/MODEL/TAG -> its model layer -> blobs/sha256-<hex>, a GGUF).
// Names are resolved to a path on this machine and nothing else: never the network, and
// nothing in a store is written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace attn::model {

/// The path `name` (a `params` value) names. In order:
/// - an existing file or folder (relative to `base` unless absolute): itself;
/// - "ollama:NAME[:TAG]" (NAME may be NAMESPACE/MODEL or HOST/NAMESPACE/MODEL): the GGUF
///   blob of the model layer of that manifest in Ollama's store ($OLLAMA_MODELS, else
///   ~/.ollama/models; `manifests/` and newer Ollama's `manifests-v2/`);
/// - "ORG/NAME[@REV]": the snapshot folder of that revision (default main; a ref name or
///   a commit hash) in the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else
///   $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub);
/// - anything else: base / name as given (its reader then says what is missing).
/// Throws InputError("params: ...") for a store name that is not there, listing every place
/// it looked, or whose store entry is broken: a ref naming a missing snapshot, a manifest
/// without a model layer or with a malformed digest, a snapshot or blob that resolves
/// outside its store (a symlink out of it).
std::filesystem::path resolve_model_path(const std::string& name,
                                         const std::filesystem::path& base);

/// Whether `name` has the form of a store name ("ollama:..." or "ORG/NAME[@REV]" not ending
/// in a file extension attn reads), whether or not it is in a store. A front end that makes
/// paths absolute keeps such a name as it is when no file or folder of that name exists.
bool is_store_name(const std::string& name);

/// The digest ("sha256:<64 hex>") of the model layer (mediaType
/// "application/vnd.ollama.image.model") of an Ollama manifest's JSON text. Throws
/// InputError naming `shown`: not JSON, no layers, no model layer or more than one, a
/// digest not of sha256's form.
std::string ollama_model_digest(std::string_view manifest, const std::string& shown);

} // namespace attn::model
