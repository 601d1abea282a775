// The field groups of the problem document after its sources and weights: scale and causal,
// masks, bias and key padding, the score features (window, softcap, ALiBi, sinks, per-row
// diagnostics), and the token labels.
#include "attn/error.hpp"
#include "attn/io/mask_convention.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn::problem::detail {

namespace {

/// Score features: a list of exactly `want` finite numbers (ALiBi slopes, sink logits).
/// With `neg_inf`, "-inf" (a string, as everywhere a number may stand) is taken too: a
/// sink of -inf takes nothing.
template <class T>
std::vector<T> decode_per_head(const json& j, const char* name, std::size_t want, bool neg_inf) {
    if (!j.is_array() || j.size() != want) {
        throw InputError(std::string(name) + ": expected a list of " + std::to_string(want) +
                         " numbers (one per head), got " + shown(j));
    }
    std::vector<T> out;
    for (const json& x : j) {
        if (neg_inf && x == "-inf") {
            out.push_back(-std::numeric_limits<T>::infinity());
            continue;
        }
        if (!x.is_number() || !std::isfinite(x.get<double>())) {
            throw InputError(std::string(name) + ": expected finite numbers" +
                             (neg_inf ? " or \"-inf\"" : "") + ", got " + shown(x));
        }
        out.push_back(x.get<T>());
    }
    return out;
}

/// The sliding window: "window": [left, right], integers >= -1 (-1 = unbounded).
Window decode_window(const json& j) {
    const auto side = [](const json& x) {
        return x.is_number_integer() && x.get<std::int64_t>() >= -1 &&
               x.get<std::int64_t>() <= (std::int64_t{1} << 40);
    };
    if (!j.is_array() || j.size() != 2 || !side(j[0]) || !side(j[1])) {
        throw InputError::window("window", "[left, right]", shown(j));
    }
    return {.left = j[0].get<std::int64_t>(), .right = j[1].get<std::int64_t>()};
}

Causal decode_causal(const json& j) {
    if (j.is_boolean()) {
        return j.get<bool>() ? Causal::top_left : Causal::none;
    }
    if (j.is_string()) {
        const auto s = j.get<std::string>();
        if (s == "top-left" || s == "true") {
            return Causal::top_left;
        }
        if (s == "bottom-right") {
            return Causal::bottom_right;
        }
        if (s == "false" || s == "none") {
            return Causal::none;
        }
    }
    throw InputError("causal: expected false, true, \"top-left\" or \"bottom-right\", got " +
                     shown(j));
}

std::vector<std::string> decode_tokens(const json& j, const char* name, std::size_t want) {
    if (!j.is_array()) {
        throw InputError::string_list(name, type_name(j));
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) {
            throw InputError::string_list_item(name, i, type_name(j[i]));
        }
        out.push_back(j[i].get<std::string>());
    }
    if (out.size() != want) {
        throw InputError::label_count(name, want, out.size());
    }
    return out;
}

/// bias += an additive term (a bias field or an additive mask: `a` in shape `s`), in each
/// precision. A term alone is kept as it is: its size-1 dims broadcast in the kernels
/// rather than in a copy.
void add_to_bias(Problem& p, const Array& a, const Shape& s, const char* field) {
    for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
        auto term = array_tensor<BasicTensor<T>>(a, s);
        if (in.bias) {
            io::add_bias(in.bias, term, p.lq, p.lk, field);
        } else {
            in.bias = std::move(term);
        }
    });
}

/// True when a keep-mask row looks like a padding mask read in the wrong polarity:
/// blocked, then kept (0…0 1…1) with fewer keys kept than blocked — the true = ignore
/// padding mask of a sequence whose real tokens come first — or nothing kept at all (the
/// longest sequence of such a batch). A random pattern, a right-padded keep mask (1…1 0…0)
/// and a short left padding (0 1…1) are not.
bool looks_inverted(const std::uint8_t* row, std::size_t lk) {
    const std::uint8_t* first_kept = std::find(row, row + lk, std::uint8_t{1});
    const bool suffix_kept = std::find(first_kept, row + lk, std::uint8_t{0}) == row + lk;
    const auto blocked = static_cast<std::size_t>(first_kept - row);
    return suffix_kept && blocked > lk - blocked;
}

/// The polarity check of a keep-mask given without a mask_convention: most rows looking
/// like an inverted padding mask (looks_inverted) suggests PyTorch's true = ignore.
void check_polarity(Problem& p, const Mask& keep, const char* field) {
    const std::size_t lk = keep.shape()[3];
    const std::size_t rows = lk == 0 ? 0 : keep.size() / lk;
    std::size_t inverted = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        inverted += looks_inverted(keep.data() + r * lk, lk) ? 1U : 0U;
    }
    if (rows > 0 && inverted * 2 > rows) {
        p.warnings.push_back(
            std::string(field) + ": keeps only the last keys (or none) in " +
            std::to_string(inverted) + " of " + std::to_string(rows) +
            " rows, like an inverted padding mask; true/1 means keep here; PyTorch's "
            "nn.MultiheadAttention uses true = ignore: add --mask-convention torch-mha "
            "(\"mask_convention\": \"torch-mha\")");
    }
}

} // namespace

void decode_scale_and_causal(DecodeContext& cx, Problem& p) {
    if (cx.has("scale")) {
        const json& s = cx.doc["scale"];
        if (!s.is_number() || !std::isfinite(s.get<double>())) {
            throw InputError("scale: expected a finite number or null, got " + shown(s));
        }
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) { in.scale = s.get<T>(); });
    }
    if (cx.has("causal")) {
        p.causal = decode_causal(cx.doc["causal"]);
    }
}

namespace {

/// Decodes a mask array in `convention` into p's keep mask `slot` (checking its polarity
/// when `polarity`); an additive mask joins the bias (for precision f64 too).
void decode_mask_field(Problem& p,
                       std::optional<Mask>& slot,
                       const Array& a,
                       const Shape& s,
                       io::MaskConvention convention,
                       const char* name,
                       bool polarity) {
    io::DecodedMask m = io::decode_mask(a, s, convention, name);
    if (m.keep && polarity) {
        check_polarity(p, *m.keep, name);
    }
    slot = std::move(m.keep);
    if (m.bias) { // additive: the values themselves, in each precision
        m.bias.reset();
        add_to_bias(p, a, s, name);
    }
}

} // namespace

void decode_masks(DecodeContext& cx, Problem& p) {
    // mask_convention (attn/io/mask_convention.hpp): additive masks join the bias.
    const io::MaskConvention convention =
        cx.has("mask_convention") ? io::decode_mask_convention(cx.doc["mask_convention"])
                                  : io::MaskConvention::keep;
    if (cx.has("mask")) {
        Array a = cx.load(p, "mask", mask_array_kind(convention), nullptr);
        const Shape s = pair_shape(a, "mask", p.batch, p.num_heads, p.lq, p.lk);
        // Polarity only when padding-shaped (one row for every query): a [Lq, Lk] pattern
        // such as a sliding window may well block most keys.
        decode_mask_field(p,
                          p.mask,
                          a,
                          s,
                          convention,
                          "mask",
                          !cx.has("mask_convention") && s[2] == 1 && p.lq > 1);
    }
    if (cx.has("bias")) {
        Array a = cx.load(p, "bias", ArrayKind::numeric, nullptr);
        const Shape s = pair_shape(a, "bias", p.batch, p.num_heads, p.lq, p.lk);
        add_to_bias(p, a, s, "bias");
    }
    if (cx.has("key_padding_mask")) {
        const Array a = cx.load(p, "key_padding_mask", io::mask_array_kind(convention), nullptr);
        Shape s{};
        if (a.shape.size() == 1 && a.shape[0] == p.lk) {
            s = {1, 1, 1, p.lk};
        } else if (a.shape.size() == 2 && (a.shape[0] == p.batch || a.shape[0] == 1) &&
                   a.shape[1] == p.lk) {
            s = {a.shape[0], 1, 1, p.lk};
        } else {
            throw InputError("key_padding_mask: expected shape " + shape_string({p.batch, p.lk}) +
                             " or " + shape_string({p.lk}) + ", got " + shape_string(a.shape));
        }
        decode_mask_field(
            p, p.key_padding, a, s, convention, "key_padding_mask", !cx.has("mask_convention"));
    }
}

namespace {

/// "return": the per-row diagnostics, head statistics and rollout asked for.
void decode_returns(DecodeContext& cx, Problem& p) {
    const json& r = cx.doc["return"];
    if (!r.is_array()) {
        throw InputError("return: expected a list of \"lse\", \"entropy\", \"argmax\", "
                         "\"top_k\", \"head_stats\", \"rollout\", got " +
                         shown(r));
    }
    for (const json& x : r) {
        if (x == "lse") {
            p.return_lse = true;
        } else if (x == "entropy") {
            p.return_entropy = true;
        } else if (x == "argmax") {
            p.return_argmax = true;
        } else if (x == "head_stats") {
            p.return_head_stats = true;
        } else if (x == "rollout") {
            if (p.lq != p.lk) {
                throw InputError("return: \"rollout\" needs as many queries as keys, got " +
                                 std::to_string(p.lq) + " queries and " + std::to_string(p.lk) +
                                 " keys");
            }
            p.return_rollout = true;
        } else if (x == "top_k") {
            if (!cx.has("top_k")) {
                throw InputError("return: \"top_k\" needs \"top_k\": K");
            }
        } else {
            throw InputError("return: expected \"lse\", \"entropy\", \"argmax\", \"top_k\", "
                             "\"head_stats\" or \"rollout\", got " +
                             shown(x));
        }
    }
}

} // namespace

void decode_score_features(DecodeContext& cx, Problem& p) {
    const std::size_t n_heads = p.direct_heads ? p.q4.shape()[1] : p.num_heads;
    if (cx.has("window")) {
        p.window = decode_window(cx.doc["window"]);
    }
    if (cx.has("window_align")) {
        const json& a = cx.doc["window_align"];
        if (a == "top-left") {
            p.window_align = Align::top_left;
        } else if (a == "bottom-right") {
            p.window_align = Align::bottom_right;
        } else {
            throw InputError("window_align: expected \"top-left\" or \"bottom-right\", got " +
                             shown(a));
        }
    }
    if (cx.has("varlen")) {
        p.varlen = boolean(cx.doc["varlen"], "varlen");
        if (p.varlen && !p.key_padding) {
            throw InputError("varlen: needs key_padding_mask (each sequence's real keys)");
        }
    }
    if (cx.has("softcap") && !cx.doc["softcap"].is_null()) {
        const json& c = cx.doc["softcap"];
        if (!c.is_number() || !std::isfinite(c.get<double>()) || c.get<double>() <= 0.0) {
            throw InputError("softcap: expected a finite number > 0 or null, got " + shown(c));
        }
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) { in.softcap = c.get<T>(); });
    }
    if (cx.has("alibi")) {
        const json& a = cx.doc["alibi"];
        if (!a.is_boolean() && !a.is_array()) {
            throw InputError("alibi: expected true, false or a list of " + std::to_string(n_heads) +
                             " slopes, got " + shown(a));
        }
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
            if (a.is_array()) {
                in.alibi_slopes = decode_per_head<T>(a, "alibi", n_heads, false);
            } else if (a.get<bool>()) {
                in.alibi_slopes = alibi_default_slopes<T>(n_heads);
            }
        });
    }
    if (cx.has("sinks")) {
        for_each_precision(p, [&]<class T>(BasicInputs<T>& in) {
            in.sinks = decode_per_head<T>(cx.doc["sinks"], "sinks", n_heads, true);
        });
    }
    if (cx.has("average_heads")) {
        p.average_heads = boolean(cx.doc["average_heads"], "average_heads");
    }
    // "top_k": K asks for the top-k diagnostic by itself (as --top-k K does); "return":
    // ["top_k"] may say so too, but needs the K.
    if (cx.has("top_k")) {
        p.top_k = positive_int(cx.doc["top_k"], "top_k");
    }
    if (cx.has("return")) {
        decode_returns(cx, p);
    }
    if (cx.has("rollout_fusion")) {
        const json& f = cx.doc["rollout_fusion"];
        if (!f.is_string()) {
            throw InputError(option_name("rollout_fusion") + ": expected mean, max or min, got " +
                             shown(f));
        }
        p.rollout_fusion = rollout_fusion(f.get<std::string>());
    }
}

void decode_labels(DecodeContext& cx, Problem& p) {
    if (cx.has("tokens")) {
        if (cx.has("query_tokens") || cx.has("key_tokens")) {
            throw InputError("tokens: give either tokens or query_tokens/key_tokens");
        }
        if (p.lq != p.lk) {
            throw InputError("tokens: queries (" + std::to_string(p.lq) + ") and keys (" +
                             std::to_string(p.lk) +
                             ") differ in length: use query_tokens and key_tokens");
        }
        p.query_tokens = decode_tokens(cx.doc["tokens"], "tokens", p.lq);
        p.key_tokens = p.query_tokens;
    }
    if (cx.has("query_tokens")) {
        p.query_tokens = decode_tokens(cx.doc["query_tokens"], "query_tokens", p.lq);
    }
    if (cx.has("key_tokens")) {
        p.key_tokens = decode_tokens(cx.doc["key_tokens"], "key_tokens", p.lk);
    }
}

} // namespace attn::problem::detail
