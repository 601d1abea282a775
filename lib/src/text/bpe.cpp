// tokenizer.json's BPE model: the vocabulary, merges by rank (as "a b" strings or [a, b]
// pairs), unk (fused or not), byte_fallback (<0xE6> tokens), continuing_subword_prefix,
// end_of_word_suffix and ignore_merges, as Hugging Face's models/bpe runs them. Dropout
// (random merges, a training aid) is refused rather than run.
#include "attn/error.hpp"
#include "detail.hpp"

#include <array>
#include <cstdio>
#include <limits>
#include <mutex>
#include <unordered_map>

namespace attn::text::detail {

namespace {

struct Merge {
    std::uint32_t rank = 0;
    std::int64_t id = 0;
};

class Bpe final : public Model {
  public:
    Bpe(const nlohmann::json& j, const std::string& name);
    void tokenize(std::string_view word, std::vector<Token>& out) const override;
    std::int64_t id_of(std::string_view token) const override {
        const auto it = vocab_.find(std::string(token));
        return it == vocab_.end() ? -1 : it->second;
    }

  private:
    static std::uint64_t key(std::int64_t a, std::int64_t b) {
        return (static_cast<std::uint64_t>(a) << 32U) | static_cast<std::uint64_t>(b);
    }
    /// The symbols of `word` before any merge: one per character (with the prefix and
    /// suffix), bytes for a character the vocabulary lacks (byte_fallback), else unk.
    std::vector<std::int64_t> initial_symbols(std::string_view word) const;
    void read_merges(const nlohmann::json& merges, const std::string& what);

    /// The merged symbols of words seen before (as Hugging Face's BPE caches them): text
    /// repeats its words. Bounded; guarded, since encode() may run on several threads.
    std::vector<std::int64_t> merged(std::string_view word) const;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<std::int64_t>> cache_;
    static constexpr std::size_t kCacheEntries = 1U << 16U;

    std::unordered_map<std::string, std::int64_t> vocab_;
    std::unordered_map<std::int64_t, std::string> tokens_;
    std::unordered_map<std::uint64_t, Merge> merges_;
    std::string prefix_;
    std::string suffix_;
    std::int64_t unk_ = -1;
    bool fuse_unk_ = false;
    bool byte_fallback_ = false;
    bool ignore_merges_ = false;
};

Bpe::Bpe(const nlohmann::json& j, const std::string& name) {
    const std::string what = name + ": model";
    for (auto& [token, id] :
         read_vocab(field_or<nlohmann::json>(j, "vocab", nullptr, what), what + ": vocab")) {
        tokens_[id] = token;
        vocab_[std::move(token)] = id;
    }
    prefix_ = field_or<std::string>(j, "continuing_subword_prefix", "", what);
    suffix_ = field_or<std::string>(j, "end_of_word_suffix", "", what);
    fuse_unk_ = field_or<bool>(j, "fuse_unk", false, what);
    byte_fallback_ = field_or<bool>(j, "byte_fallback", false, what);
    ignore_merges_ = field_or<bool>(j, "ignore_merges", false, what);
    const auto dropout = field_or<double>(j, "dropout", 0.0, what);
    if (dropout != 0.0) {
        throw InputError(what + ": dropout " + std::to_string(dropout) +
                         " makes the merges random (a training aid); set it to null");
    }
    const auto unk = field_or<std::string>(j, "unk_token", "", what);
    if (!unk.empty()) {
        unk_ = id_of(unk);
        if (unk_ < 0) {
            throw InputError(what + ": the unk_token " + quote_input(unk) +
                             " is not in the vocabulary");
        }
    }
    read_merges(field_or<nlohmann::json>(j, "merges", nlohmann::json::array(), what),
                what + ": merges");
}

void Bpe::read_merges(const nlohmann::json& merges, const std::string& what) {
    if (!merges.is_array()) {
        throw InputError(what + ": expected a list");
    }
    if (merges.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw InputError(what + ": too many merges");
    }
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const nlohmann::json& m = merges[rank];
        const std::string at = what + "[" + std::to_string(rank) + "]";
        std::string a;
        std::string b;
        if (m.is_string()) {
            const auto& s = m.get_ref<const std::string&>();
            const std::size_t space = s.find(' ');
            if (space == std::string::npos) {
                throw InputError(at + ": expected \"a b\" (two tokens and a space)");
            }
            a = s.substr(0, space);
            b = s.substr(space + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            a = m[0].get<std::string>();
            b = m[1].get<std::string>();
        } else {
            throw InputError(at + ": expected \"a b\" or [\"a\", \"b\"]");
        }
        const std::int64_t ia = id_of(a);
        const std::int64_t ib = id_of(b);
        if (ia < 0 || ib < 0) {
            throw InputError(at + ": the token " + quote_input(ia < 0 ? a : b) +
                             " is not in the vocabulary");
        }
        const bool strip = !prefix_.empty() && b.compare(0, prefix_.size(), prefix_) == 0;
        const std::string merged = a + (strip ? b.substr(prefix_.size()) : b);
        const std::int64_t id = id_of(merged);
        if (id < 0) {
            throw InputError(at + ": the merged token " + quote_input(merged) +
                             " is not in the vocabulary");
        }
        // A pair listed twice keeps its first (lowest) rank.
        merges_.try_emplace(key(ia, ib), Merge{static_cast<std::uint32_t>(rank), id});
    }
}

std::vector<std::int64_t> Bpe::initial_symbols(std::string_view word) const {
    std::vector<std::int64_t> symbols;
    bool pending_unk = false;
    const auto cps = code_points(word);
    for (std::size_t i = 0; i < cps.size(); ++i) {
        const std::size_t end = i + 1 < cps.size() ? cps[i + 1].second : word.size();
        std::string s(word.substr(cps[i].second, end - cps[i].second));
        if (i > 0) {
            s.insert(0, prefix_);
        }
        if (end == word.size()) {
            s += suffix_;
        }
        if (const std::int64_t id = id_of(s); id >= 0) {
            pending_unk = false;
            symbols.push_back(id);
            continue;
        }
        if (byte_fallback_) {
            std::vector<std::int64_t> bytes;
            for (const char c : s) {
                std::array<char, 8> name{};
                std::snprintf(name.data(), name.size(), "<0x%02X>", static_cast<unsigned char>(c));
                bytes.push_back(id_of(name.data()));
            }
            if (std::find(bytes.begin(), bytes.end(), -1) == bytes.end()) {
                symbols.insert(symbols.end(), bytes.begin(), bytes.end());
                continue;
            }
        }
        // Unknown: unk (one for a run of unknowns when fuse_unk), or dropped without one,
        // as Hugging Face's BPE does.
        if (unk_ >= 0 && !(fuse_unk_ && pending_unk)) {
            symbols.push_back(unk_);
        }
        pending_unk = unk_ >= 0;
    }
    return symbols;
}

void Bpe::tokenize(std::string_view word, std::vector<Token>& out) const {
    if (ignore_merges_) {
        if (const std::int64_t id = id_of(word); id >= 0) {
            out.push_back({id, std::string(word)});
            return;
        }
    }
    std::vector<std::int64_t> symbols;
    {
        const std::lock_guard<std::mutex> lock(cache_mutex_);
        if (const auto it = cache_.find(std::string(word)); it != cache_.end()) {
            symbols = it->second;
        }
    }
    if (symbols.empty()) {
        symbols = merged(word);
        const std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kCacheEntries) {
            cache_.clear();
        }
        cache_.emplace(word, symbols);
    }
    for (const std::int64_t id : symbols) {
        out.push_back({id, tokens_.at(id)});
    }
}

std::vector<std::int64_t> Bpe::merged(std::string_view word) const {
    std::vector<std::int64_t> symbols = initial_symbols(word);
    // Merge the adjacent pair of lowest rank (the leftmost of equal ranks) until none is
    // left: the order Hugging Face's priority queue pops them in.
    for (;;) {
        std::size_t best = symbols.size();
        Merge best_merge{std::numeric_limits<std::uint32_t>::max(), 0};
        for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
            const auto it = merges_.find(key(symbols[i], symbols[i + 1]));
            if (it != merges_.end() && it->second.rank < best_merge.rank) {
                best = i;
                best_merge = it->second;
            }
        }
        if (best == symbols.size()) {
            break;
        }
        symbols[best] = best_merge.id;
        symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    return symbols;
}

} // namespace

std::vector<std::pair<std::string, std::int64_t>> read_vocab(const nlohmann::json& j,
                                                             const std::string& what) {
    if (!j.is_object()) {
        throw InputError(what + ": expected an object {\"token\": id, ...}");
    }
    std::vector<std::pair<std::string, std::int64_t>> out;
    out.reserve(j.size());
    std::unordered_map<std::int64_t, std::string> seen;
    for (const auto& [token, id] : j.items()) {
        check_utf8(token, what);
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
            id.get<std::int64_t>() > std::numeric_limits<std::uint32_t>::max()) {
            throw InputError(what + ": the id of " + quote_input(token) +
                             " is not an integer in [0, 2^32)");
        }
        const auto n = id.get<std::int64_t>();
        if (const auto [it, fresh] = seen.try_emplace(n, token); !fresh) {
            throw InputError(what + ": id " + std::to_string(n) + " names both " +
                             quote_input(it->second) + " and " + quote_input(token));
        }
        out.emplace_back(token, n);
    }
    return out;
}

std::unique_ptr<Model> make_bpe(const nlohmann::json& j, const std::string& name) {
    return std::make_unique<Bpe>(j, name);
}

} // namespace attn::text::detail
