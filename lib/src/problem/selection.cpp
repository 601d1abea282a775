// "select_heads" and "query_rows" decoded and applied (attn/problem/selection.hpp): the
// fields' forms and checks, and the kept part of a result's tensors. Does not: route the
// kernel's weights (layer_analysis.cpp), shape the result (solve.cpp).
#include "attn/problem/selection.hpp"

#include "attn/error.hpp"
#include "attn/model/checkpoint_layers.hpp"
#include "decode_detail.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

namespace attn::problem {

using nlohmann::json;

std::vector<std::size_t>
index_selection(const json& j, std::string_view field, std::string_view noun) {
    const std::string what(field);
    const std::string item(noun);
    if (j.is_string()) {
        return model::parse_index_list(j.get<std::string>(), what, noun);
    }
    if (!j.is_array() || j.empty()) {
        throw InputError(what + ": expected a non-empty list of " + item +
                         " numbers or a string like \"0,3,5-7\", got " + detail::shown(j));
    }
    std::vector<std::size_t> out;
    for (const json& v : j) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
            throw InputError(what + ": expected " + item + " numbers (integers >= 0), got " +
                             detail::shown(v));
        }
        const std::size_t n = v.get<std::size_t>();
        if (std::find(out.begin(), out.end(), n) != out.end()) {
            throw InputError(what + ": " + item + " " + std::to_string(n) + " is given twice");
        }
        out.push_back(n);
    }
    return out;
}

namespace {

/// One end of a slice: empty (nullopt) or an integer, from JSON or from "A:B" text.
using SliceEnd = std::optional<std::int64_t>;

std::string rows_form() {
    return option_name("query_rows") +
           ": expected [A, B] or \"A:B\" (Python slice ends, either may be left out)";
}

SliceEnd slice_end_of(const json& j) {
    if (j.is_null()) {
        return std::nullopt;
    }
    if (!j.is_number_integer()) {
        throw InputError(rows_form() + ", got " + detail::shown(j));
    }
    return j.get<std::int64_t>();
}

SliceEnd slice_end_of(std::string_view text, const json& whole) {
    while (!text.empty() && text.front() == ' ') {
        text.remove_prefix(1);
    }
    while (!text.empty() && text.back() == ' ') {
        text.remove_suffix(1);
    }
    if (text.empty()) {
        return std::nullopt;
    }
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size()) {
        throw InputError(rows_form() + ", got " + detail::shown(whole));
    }
    return n;
}

/// Python's rule for one end: negatives count from the end, then clipped to [0, lq].
std::size_t resolve_end(SliceEnd e, std::size_t lq, std::size_t absent) {
    if (!e) {
        return absent;
    }
    const auto n = static_cast<std::int64_t>(lq);
    std::int64_t v = *e < 0 ? *e + n : *e;
    v = std::clamp<std::int64_t>(v, 0, n);
    return static_cast<std::size_t>(v);
}

std::string end_text(SliceEnd e) {
    return e ? std::to_string(*e) : std::string();
}

} // namespace

std::array<std::size_t, 2> query_rows_of(const json& j, std::size_t lq) {
    SliceEnd a, b;
    if (j.is_string()) {
        const std::string text = j.get<std::string>();
        const std::size_t colon = text.find(':');
        if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) {
            throw InputError(rows_form() + ", got " + detail::shown(j));
        }
        a = slice_end_of(std::string_view(text).substr(0, colon), j);
        b = slice_end_of(std::string_view(text).substr(colon + 1), j);
    } else if (j.is_array() && j.size() == 2) {
        a = slice_end_of(j[0]);
        b = slice_end_of(j[1]);
    } else {
        throw InputError(rows_form() + ", got " + detail::shown(j));
    }
    const std::size_t begin = resolve_end(a, lq, 0);
    const std::size_t end = resolve_end(b, lq, lq);
    if (begin >= end) {
        throw InputError(option_name("query_rows") + ": " + end_text(a) + ":" + end_text(b) +
                         " keeps no row of " + std::to_string(lq) + " query rows (rows " +
                         std::to_string(begin) + " to " + std::to_string(end) +
                         ", end excluded, once negatives count from the end)");
    }
    return {begin, end};
}

namespace detail {

void decode_selection(DecodeContext& cx, Problem& p) {
    if (cx.has("select_heads")) {
        const std::size_t n_heads = p.direct_heads ? p.q4.shape()[1] : p.num_heads;
        std::vector<std::size_t> heads =
            index_selection(cx.doc["select_heads"], option_name("select_heads"), "head");
        for (const std::size_t h : heads) {
            if (h >= n_heads) {
                throw InputError(option_name("select_heads") + ": head " + std::to_string(h) +
                                 " does not exist: the problem has " + std::to_string(n_heads) +
                                 " head" + (n_heads == 1 ? "" : "s") + " (0 to " +
                                 std::to_string(n_heads - 1) + ")");
            }
        }
        std::sort(heads.begin(), heads.end()); // the result's H axis is ascending
        p.select_heads = std::move(heads);
    }
    if (cx.has("query_rows")) {
        p.query_rows = query_rows_of(cx.doc["query_rows"], p.lq);
    }
}

} // namespace detail

Selection::Selection(const Problem& p, std::size_t heads_in, std::size_t lq)
    : all_heads(heads_in), all_rows(lq) {
    heads = p.select_heads;
    if (heads.empty()) {
        for (std::size_t h = 0; h < heads_in; ++h) {
            heads.push_back(h);
        }
    }
    row_end = lq;
    if (p.query_rows) {
        row_begin = std::min((*p.query_rows)[0], lq);
        row_end = std::min((*p.query_rows)[1], lq);
    }
}

template <class T> xt::xtensor<T, 4> Selection::slice(const xt::xtensor<T, 4>& t) const {
    const auto& s = t.shape();
    ATTN_ASSERT(s[1] == all_heads && s[2] == all_rows);
    xt::xtensor<T, 4> out = xt::xtensor<T, 4>::from_shape({s[0], heads.size(), rows(), s[3]});
    forward(0, t.data(), t.size(), s[3], [&out](std::size_t at, const T* v, std::size_t n) {
        std::copy(v, v + n, out.data() + at);
    });
    return out;
}

template xt::xtensor<float, 4> Selection::slice(const xt::xtensor<float, 4>&) const;
template xt::xtensor<double, 4> Selection::slice(const xt::xtensor<double, 4>&) const;

HeadStatTotals Selection::slice(const HeadStatTotals& t) const {
    HeadStatTotals out;
    out.batch = t.batch;
    out.heads = heads.size();
    for (std::size_t k = 0; k < kHeadStats; ++k) {
        for (std::size_t b = 0; b < t.batch; ++b) {
            for (const std::size_t h : heads) {
                out.sum[k].push_back(t.sum[k][b * t.heads + h]);
                out.rows[k].push_back(t.rows[k][b * t.heads + h]);
            }
        }
    }
    return out;
}

} // namespace attn::problem
