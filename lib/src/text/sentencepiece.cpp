// tokenizer.model: a SentencePiece model (BPE or unigram) through Debian's
// libsentencepiece, with BOS/EOS added as llama's tokenizer adds them. The library does
// the tokenizing; this file only loads, guards and translates errors.
//
// Hostile files: the ModelProto is parsed by protobuf-lite, whose parser is bounds-checked
// (a truncated or malformed message is a parse error, not a crash), and the file's size is
// capped by read_file's memory limit before parsing. What SentencePiece does not check is
// the normalizer's precompiled_charsmap: a Darts-clone double array whose offsets it
// follows without bounds checks, so a forged charsmap could read out of bounds while a
// text is normalized. precompiled_charsmap_ok() walks the protobuf to that field and
// refuses an array with an offset outside it (the check Darts itself leaves out), before
// SentencePiece sees the file.
#include "attn/error.hpp"
#include "detail.hpp"

#include <optional>
#include <sentencepiece_processor.h>

namespace attn::text {

namespace {

/// A protobuf reader over `bytes`: varints and length-delimited fields only as far as
/// the walk needs; nullopt on anything malformed.
struct ProtoReader {
    std::string_view bytes;
    std::size_t at = 0;

    std::optional<std::uint64_t> varint() {
        std::uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            if (at >= bytes.size()) {
                return std::nullopt;
            }
            const auto b = static_cast<unsigned char>(bytes[at++]);
            v |= static_cast<std::uint64_t>(b & 0x7FU) << shift;
            if ((b & 0x80U) == 0) {
                return v;
            }
        }
        return std::nullopt;
    }

    /// The payload of field `number` (wire type 2) in this message, the last one when it
    /// repeats (as protobuf merges), empty when absent; nullopt when the message is malformed.
    std::optional<std::string_view> field(std::uint64_t number) {
        std::string_view found;
        while (at < bytes.size()) {
            const auto tag = varint();
            if (!tag) {
                return std::nullopt;
            }
            const std::uint64_t wire = *tag & 7U;
            std::uint64_t skip = 0;
            if (wire == 0) {
                if (!varint()) {
                    return std::nullopt;
                }
            } else if (wire == 1 || wire == 5) {
                skip = wire == 1 ? 8 : 4;
            } else if (wire == 2) {
                const auto n = varint();
                if (!n || *n > bytes.size() - at) {
                    return std::nullopt;
                }
                if ((*tag >> 3U) == number) {
                    found = bytes.substr(at, *n);
                }
                skip = *n;
            } else {
                return std::nullopt;
            }
            if (skip > bytes.size() - at) {
                return std::nullopt;
            }
            at += skip;
        }
        return found;
    }
};

/// The Darts-clone array in a precompiled charsmap (a little-endian uint32 size, the
/// array's units, then the normalized strings) has every child offset inside the array
/// and every value inside the strings.
bool charsmap_ok(std::string_view blob) {
    if (blob.empty()) {
        return true;
    }
    if (blob.size() < 4) {
        return false;
    }
    const auto le32 = [&](std::size_t at) {
        std::uint32_t u = 0;
        for (std::size_t k = 4; k-- > 0;) {
            u = (u << 8U) | static_cast<unsigned char>(blob[at + k]);
        }
        return u;
    };
    const std::uint32_t trie_size = le32(0);
    if (trie_size % 4 != 0 || trie_size > blob.size() - 4 || trie_size == 0) {
        return false;
    }
    const std::size_t units = trie_size / 4;
    const std::size_t strings = blob.size() - 4 - trie_size;
    const auto unit = [&](std::size_t i) { return le32(4 + i * 4); };
    for (std::size_t i = 0; i < units; ++i) {
        const std::uint32_t u = unit(i);
        if ((u >> 31U) != 0) { // a leaf: its value indexes the normalized strings
            if ((u & 0x7FFFFFFFU) >= strings) {
                return false;
            }
            continue;
        }
        const std::size_t offset = (u >> 10U) << ((u & (1U << 9U)) >> 6U);
        // Children are at i ^ offset ^ label for any byte label, so the whole block of 256
        // from (i ^ offset) & ~255 must lie inside the array.
        if (((i ^ offset) | 0xFFU) >= units) {
            return false;
        }
    }
    // The normalized strings are read as C strings: the last one must end.
    return strings == 0 || blob.back() == '\0';
}

bool precompiled_charsmap_ok(std::string_view model) {
    ProtoReader m{model};
    const auto normalizer = m.field(3); // ModelProto.normalizer_spec
    if (!normalizer) {
        return false;
    }
    ProtoReader n{*normalizer};
    const auto charsmap = n.field(2); // NormalizerSpec.precompiled_charsmap
    if (!charsmap) {
        return false;
    }
    ProtoReader d{model};
    const auto denormalizer = d.field(5); // ModelProto.denormalizer_spec
    if (!denormalizer) {
        return false;
    }
    ProtoReader dn{*denormalizer};
    const auto decharsmap = dn.field(2);
    return decharsmap && charsmap_ok(*charsmap) && charsmap_ok(*decharsmap);
}

class SentencePieceTokenizer final : public Tokenizer {
  public:
    SentencePieceTokenizer(std::string_view bytes,
                           const std::string& name,
                           bool add_bos,
                           bool add_eos)
        : add_bos_(add_bos), add_eos_(add_eos) {
        if (!precompiled_charsmap_ok(bytes)) {
            throw InputError(name + ": not a SentencePiece model (malformed protobuf or "
                                    "normalizer charsmap)");
        }
        const auto status =
            sp_.LoadFromSerializedProto(absl::string_view(bytes.data(), bytes.size()));
        if (!status.ok()) {
            throw InputError(name + ": not a SentencePiece model: " + detail_of(status.ToString()));
        }
        for (int id = 0; id < sp_.GetPieceSize(); ++id) {
            detail::check_utf8(sp_.IdToPiece(id), name + ": piece " + std::to_string(id));
        }
    }

    Encoding encode(std::string_view text, bool add_special_tokens) const override {
        Encoding e;
        e.ids = encode_ids(text, add_special_tokens);
        for (const std::int64_t id : e.ids) {
            e.tokens.push_back(sp_.IdToPiece(static_cast<int>(id)));
            e.labels.push_back(readable_token(e.tokens.back(), false));
        }
        return e;
    }

    std::vector<std::int64_t> encode_ids(std::string_view text,
                                         bool add_special_tokens) const override {
        detail::check_utf8(text, "text");
        std::vector<int> ids;
        const auto status = sp_.Encode(absl::string_view(text.data(), text.size()), &ids);
        if (!status.ok()) {
            throw InputError("text: SentencePiece: " + detail_of(status.ToString()));
        }
        std::vector<std::int64_t> out;
        out.reserve(ids.size() + 2);
        if (add_special_tokens && add_bos_ && sp_.bos_id() >= 0) {
            out.push_back(sp_.bos_id());
        }
        out.insert(out.end(), ids.begin(), ids.end());
        if (add_special_tokens && add_eos_ && sp_.eos_id() >= 0) {
            out.push_back(sp_.eos_id());
        }
        return out;
    }

  private:
    static std::string detail_of(const std::string& s) { return io::message_text(s); }

    sentencepiece::SentencePieceProcessor sp_;
    bool add_bos_;
    bool add_eos_;
};

} // namespace

std::unique_ptr<Tokenizer> parse_sentencepiece_model(std::string_view bytes,
                                                     std::string_view name,
                                                     bool add_bos,
                                                     bool add_eos) {
    return std::make_unique<SentencePieceTokenizer>(bytes, std::string(name), add_bos, add_eos);
}

} // namespace attn::text
