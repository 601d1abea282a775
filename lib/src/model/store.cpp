// Model names resolved in the Hugging Face cache and Ollama's store: see attn/model/store.hpp.
// Only reads: the refs, manifests and folders those tools wrote, never the network.
#include "attn/model/store.hpp"

#include "attn/error.hpp"
#include "attn/io/detail.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/json_text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <vector>

namespace attn::model {
namespace {

namespace fs = std::filesystem;
using io::detail::quote_name;
using nlohmann::json;

constexpr std::string_view kOllamaPrefix = "ollama:";
constexpr std::string_view kOllamaModelLayer = "application/vnd.ollama.image.model";
/// A manifest is a few hundred bytes; anything larger is not one.
constexpr std::size_t kMaxManifestBytes = 1 << 20;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
}

fs::path home() {
    const std::string h = env("HOME");
    return h.empty() ? fs::path(".") : fs::path(h);
}

/// huggingface_hub's constants: HF_HUB_CACHE, else HF_HOME/hub, HF_HOME defaulting to
/// $XDG_CACHE_HOME/huggingface, then ~/.cache/huggingface.
fs::path hf_cache_root() {
    if (const std::string v = env("HF_HUB_CACHE"); !v.empty()) {
        return v;
    }
    if (const std::string v = env("HF_HOME"); !v.empty()) {
        return fs::path(v) / "hub";
    }
    if (const std::string v = env("XDG_CACHE_HOME"); !v.empty()) {
        return fs::path(v) / "huggingface" / "hub";
    }
    return home() / ".cache" / "huggingface" / "hub";
}

/// Ollama's envconfig.Models(): OLLAMA_MODELS, else ~/.ollama/models.
fs::path ollama_root() {
    if (const std::string v = env("OLLAMA_MODELS"); !v.empty()) {
        return v;
    }
    return home() / ".ollama" / "models";
}

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

/// One path component of a store name: [A-Za-z0-9._-]+, not "." or "..", so that no name
/// can walk out of the store's folders.
bool valid_part(std::string_view s) {
    return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), name_char);
}

bool is_commit_hash(std::string_view s) {
    return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= s.size(); ++i) {
        if (i == s.size() || s[i] == sep) {
            parts.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    }
    return parts;
}

/// Whether `p` (after following every symlink) lies inside `root` (likewise resolved).
bool lies_inside(const fs::path& p, const fs::path& root) {
    std::error_code ec;
    const fs::path real = fs::canonical(p, ec);
    if (ec) {
        return false;
    }
    const fs::path real_root = fs::canonical(root, ec);
    if (ec) {
        return false;
    }
    auto [r, q] = std::mismatch(real_root.begin(), real_root.end(), real.begin(), real.end());
    return r == real_root.end();
}

std::string read_text(const fs::path& p) {
    const std::vector<std::uint8_t> bytes = io::read_file(p);
    return {bytes.begin(), bytes.end()};
}

std::string shown(const fs::path& p) {
    return io::message_text(p.string(), 200);
}

// --- the Hugging Face cache ----------------------------------------------------------------

struct HfName {
    std::string org, name, revision;
};

/// "ORG/NAME[@REV]": one '/', each part a store name; REV a ref name (which may hold '/',
/// as refs/pr/1 does) or a commit. A name ending in a file extension attn reads is a path,
/// not a repository (so "dir/model.safetensors" stays a missing file).
std::optional<HfName> parse_hf_name(std::string_view s) {
    HfName n;
    if (const std::size_t at = s.find('@'); at != std::string_view::npos) {
        n.revision = std::string(s.substr(at + 1));
        s = s.substr(0, at);
        const auto parts = split(n.revision, '/');
        if (!std::all_of(parts.begin(), parts.end(), valid_part)) {
            return std::nullopt;
        }
    }
    const auto parts = split(s, '/');
    if (parts.size() != 2 || !valid_part(parts[0]) || !valid_part(parts[1])) {
        return std::nullopt;
    }
    for (const char* ext : {".safetensors", ".gguf", ".json", ".npz", ".npy", ".bin", ".model"}) {
        if (io::has_extension(parts[1], ext)) {
            return std::nullopt;
        }
    }
    n.org = std::string(parts[0]);
    n.name = std::string(parts[1]);
    return n;
}

/// refs/REV's commit ("main" -> "a1b2..."), or REV itself when it is a commit with no ref.
std::string hf_commit(const fs::path& repo, const std::string& label, const std::string& rev) {
    const fs::path ref = repo / "refs" / rev;
    std::error_code ec;
    if (fs::is_regular_file(ref, ec)) {
        std::string commit = read_text(ref);
        while (!commit.empty() &&
               (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) {
            commit.pop_back();
        }
        if (!is_commit_hash(commit)) {
            throw InputError("params: " + label + ": " + shown(ref) +
                             " holds no commit hash (40 hex digits)");
        }
        return commit;
    }
    if (is_commit_hash(rev)) {
        return rev;
    }
    throw InputError("params: " + label + ": no ref " + quote_name(rev) + " in " +
                     shown(repo / "refs") + " (a ref name such as main, or a commit hash)");
}

/// Every entry of the snapshot (huggingface_hub links them to ../../blobs/) must resolve
/// inside the repository's cache folder.
void check_snapshot_links(const fs::path& snapshot,
                          const fs::path& repo,
                          const std::string& label) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(snapshot, ec)) {
        if (!lies_inside(e.path(), repo)) {
            throw InputError("params: " + label + ": " + shown(e.path()) +
                             " leads outside the cache's folder " + shown(repo));
        }
    }
    if (ec) {
        throw InputError("params: " + label + ": cannot list " + shown(snapshot) + ": " +
                         ec.message());
    }
}

fs::path resolve_hf(const HfName& n, const std::string& label, const fs::path& as_path) {
    const fs::path root = hf_cache_root();
    const fs::path repo = root / ("models--" + n.org + "--" + n.name);
    std::error_code ec;
    if (!fs::is_directory(repo, ec)) {
        throw InputError("params: " + label + " is neither a file or folder (" + shown(as_path) +
                         ") nor a model in the Hugging Face cache (" + shown(repo) + ")");
    }
    const std::string rev = n.revision.empty() ? "main" : n.revision;
    const std::string commit = hf_commit(repo, label, rev);
    fs::path snapshot = repo / "snapshots" / commit;
    if (!fs::is_directory(snapshot, ec)) {
        throw InputError("params: " + label + ": revision " + quote_name(rev) + " is commit " +
                         commit + ", which has no snapshot folder " + shown(snapshot));
    }
    if (!lies_inside(snapshot, repo)) {
        throw InputError("params: " + label + ": " + shown(snapshot) +
                         " leads outside the cache's folder " + shown(repo));
    }
    check_snapshot_links(snapshot, repo, label);
    return snapshot;
}

// --- Ollama's store -----------------------------------------------------------------------

struct OllamaName {
    std::string host, ns, model, tag;
    bool host_given = false;
};

/// NAME[:TAG] with NAME = MODEL, NAMESPACE/MODEL or HOST/NAMESPACE/MODEL (Ollama's
/// model.Name: host registry.ollama.ai, namespace library, tag latest by default).
OllamaName parse_ollama_name(std::string_view s, const std::string& label) {
    OllamaName n{"registry.ollama.ai", "library", "", "latest", false};
    const std::size_t slash = s.rfind('/');
    const std::size_t colon = s.rfind(':');
    if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
        n.tag = std::string(s.substr(colon + 1));
        s = s.substr(0, colon);
    }
    const auto parts = split(s, '/');
    const bool ok = parts.size() <= 3 && std::all_of(parts.begin(), parts.end(), valid_part) &&
                    valid_part(n.tag);
    if (!ok) {
        throw InputError("params: " + label +
                         ": expected ollama:NAME[:TAG] (NAME: MODEL, NAMESPACE/MODEL or "
                         "HOST/NAMESPACE/MODEL; letters, digits, '.', '-', '_')");
    }
    n.model = std::string(parts.back());
    if (parts.size() >= 2) {
        n.ns = std::string(parts[parts.size() - 2]);
    }
    if (parts.size() == 3) {
        n.host = std::string(parts[0]);
        n.host_given = true;
    }
    return n;
}

fs::path resolve_ollama(std::string_view spec, const std::string& label) {
    const OllamaName n = parse_ollama_name(spec, label);
    const fs::path root = ollama_root();
    const std::vector<fs::path> manifests = {
        root / "manifests" / n.host / n.ns / n.model / n.tag,
        root / "manifests-v2" / (n.host_given ? n.host : "ollama.com") / n.ns / n.model / n.tag,
    };
    for (const fs::path& m : manifests) {
        std::error_code ec;
        if (!fs::is_regular_file(m, ec)) {
            continue;
        }
        if (fs::file_size(m, ec) > kMaxManifestBytes) {
            throw InputError("params: " + label + ": " + shown(m) +
                             " is too large to be a manifest");
        }
        std::string digest = ollama_model_digest(read_text(m), shown(m));
        digest[6] = '-'; // "sha256:hex" -> the blob's file name "sha256-hex"
        fs::path blob = root / "blobs" / digest;
        if (!fs::is_regular_file(blob, ec)) {
            throw InputError("params: " + label + ": " + shown(m) + " names the blob " +
                             shown(blob) + ", which is not there");
        }
        if (!lies_inside(blob, root)) {
            throw InputError("params: " + label + ": " + shown(blob) +
                             " leads outside Ollama's store " + shown(root));
        }
        return blob;
    }
    throw InputError("params: " + label + " is not in Ollama's store (looked for " +
                     shown(manifests[0]) + " and " + shown(manifests[1]) + ")");
}

} // namespace

std::string ollama_model_digest(std::string_view manifest, const std::string& shown_name) {
    const json doc = io::parse_json_text(manifest, shown_name);
    if (!doc.is_object() || !doc.contains("layers") || !doc["layers"].is_array()) {
        throw InputError(shown_name + ": not an Ollama manifest (no \"layers\" list)");
    }
    std::optional<std::string> digest;
    for (const json& layer : doc["layers"]) {
        if (!layer.is_object() || !layer.contains("mediaType") ||
            layer["mediaType"] != kOllamaModelLayer) {
            continue;
        }
        if (digest) {
            throw InputError(shown_name + ": more than one model layer");
        }
        const json* d = layer.contains("digest") ? &layer["digest"] : nullptr;
        const std::string text = d != nullptr && d->is_string() ? d->get<std::string>() : "";
        const bool hex =
            text.size() == 71 && std::all_of(text.begin() + 7, text.end(), [](char c) {
                return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            });
        if (!hex || text.compare(0, 6, "sha256") != 0 || (text[6] != ':' && text[6] != '-')) {
            throw InputError(shown_name + ": the model layer's digest is not sha256:<64 hex>");
        }
        digest = text;
    }
    if (!digest) {
        throw InputError(shown_name + ": no model layer (mediaType " +
                         std::string(kOllamaModelLayer) + ")");
    }
    return *digest;
}

bool is_store_name(const std::string& name) {
    return std::string_view(name).substr(0, kOllamaPrefix.size()) == kOllamaPrefix ||
           parse_hf_name(name).has_value();
}

fs::path resolve_model_path(const std::string& name, const fs::path& base) {
    const fs::path given(name);
    fs::path full = given.is_absolute() ? given : base / given;
    std::error_code ec;
    if (fs::exists(full, ec)) {
        return full;
    }
    const std::string label = quote_name(name);
    if (std::string_view(name).substr(0, kOllamaPrefix.size()) == kOllamaPrefix) {
        return resolve_ollama(std::string_view(name).substr(kOllamaPrefix.size()), label);
    }
    if (const std::optional<HfName> hf = parse_hf_name(name)) {
        return resolve_hf(*hf, label, full);
    }
    return full;
}

} // namespace attn::model
