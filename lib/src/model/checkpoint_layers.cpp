// The numbered attention layers of a checkpoint, found from the tensor names alone, and the
// "0,3,5-7" layer selection. See attn/model/checkpoint_layers.hpp.
#include "attn/model/checkpoint_layers.hpp"

#include "attn/error.hpp"
#include "attn/io/number_text.hpp"
#include "detail.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace attn::model {

namespace {

using detail::quote_name;

/// Splits a prefix at its last all-digit component: {"transformer.h.{}.attn.", 3}.
std::optional<std::pair<std::string, std::size_t>> numbered(const std::string& prefix) {
    std::vector<std::string> parts;
    for (std::size_t at = 0; at <= prefix.size();) {
        const std::size_t dot = prefix.find('.', at);
        const std::size_t end = dot == std::string::npos ? prefix.size() : dot;
        parts.push_back(prefix.substr(at, end - at));
        at = end + 1;
    }
    for (std::size_t k = parts.size(); k-- > 0;) {
        const std::string& c = parts[k];
        if (!c.empty() && c.size() <= 9 &&
            std::all_of(c.begin(), c.end(), [](unsigned char x) { return std::isdigit(x) != 0; })) {
            const std::size_t number = std::stoul(c);
            std::string pattern;
            for (std::size_t m = 0; m < parts.size(); ++m) {
                pattern += (m == 0 ? "" : ".") + (m == k ? std::string("{}") : parts[m]);
            }
            return std::make_pair(pattern, number);
        }
    }
    return std::nullopt;
}

} // namespace

std::set<std::pair<ParamsLayout, std::string>>
attention_prefixes(const std::vector<std::string>& names) {
    std::set<std::pair<ParamsLayout, std::string>> out;
    for (const std::string& n : names) {
        for (std::size_t cut = 0; cut < n.size(); cut = n.find('.', cut) + 1) {
            for (const ParamsLayout layout : detect_layouts({n.substr(cut)})) {
                out.insert({layout, n.substr(0, cut)});
            }
            if (n.find('.', cut) == std::string::npos) {
                break;
            }
        }
    }
    return out;
}

std::vector<CheckpointLayer> checkpoint_layers(const std::vector<std::string>& names,
                                               std::string_view what,
                                               std::optional<std::string_view> layout,
                                               std::string_view under) {
    // pattern -> layout -> number -> prefix
    std::map<std::pair<std::string, ParamsLayout>, std::map<std::size_t, std::string>> groups;
    std::vector<std::pair<ParamsLayout, std::string>> unnumbered;
    for (const auto& [l, prefix] : attention_prefixes(names)) {
        if ((layout && layout_name(l) != *layout) || prefix.compare(0, under.size(), under) != 0) {
            continue;
        }
        if (const auto n = numbered(prefix)) {
            groups[{n->first, l}][n->second] = prefix;
        } else {
            unnumbered.emplace_back(l, prefix);
        }
    }
    const std::string where =
        std::string(what) + ": " +
        (layout ? "no " + std::string(*layout) + " attention weights" : "no attention weights") +
        (under.empty() ? std::string() : " under prefix " + quote_name(std::string(under)));
    if (groups.empty() && unnumbered.empty()) {
        throw InputError(where + " (every layer of a checkpoint is needed for hidden_states)");
    }
    std::vector<CheckpointLayer> out;
    if (groups.empty()) {
        if (unnumbered.size() > 1) {
            throw InputError(std::string(what) + ": attention weights at " +
                             std::to_string(unnumbered.size()) +
                             " prefixes without a layer number: set \"prefix\" or \"layout\"");
        }
        out.push_back({0, unnumbered.front().second, unnumbered.front().first});
        return out;
    }
    if (groups.size() > 1) {
        std::string list;
        std::size_t shown = 0;
        for (const auto& [key, layers] : groups) {
            if (shown++ == 3) {
                list += ", ...";
                break;
            }
            list += (list.empty() ? "" : ", ") + quote_name(key.first) + " (" +
                    std::string(layout_name(key.second)) + ", " + std::to_string(layers.size()) +
                    " layers)";
        }
        throw InputError(std::string(what) + ": the attention layers follow " +
                         std::to_string(groups.size()) + " patterns: " + list +
                         "; set \"prefix\" (the part before the layer number) or \"layout\"");
    }
    const auto& [key, layers] = *groups.begin();
    std::size_t expect = 0;
    for (const auto& [number, prefix] : layers) {
        if (number != expect) {
            std::string missing = key.first;
            missing.replace(missing.find("{}"), 2, std::to_string(expect));
            throw InputError(std::string(what) + ": layer " + std::to_string(expect) +
                             " is missing (no attention weights at prefix " + quote_name(missing) +
                             ", but layer " + std::to_string(number) +
                             " exists): layers must be numbered 0 to N-1");
        }
        out.push_back({number, prefix, key.second});
        ++expect;
    }
    return out;
}

std::vector<std::size_t> parse_layer_list(std::string_view text, std::string_view what) {
    return parse_index_list(text, what, "layer");
}

std::vector<std::size_t>
parse_index_list(std::string_view text, std::string_view what, std::string_view noun) {
    const std::string shown = io::message_text(std::string(text), 80);
    const std::string item(noun);
    const auto fail = [&](const std::string& why) -> InputError {
        return InputError(std::string(what) + ": " + why + " in '" + shown + "' (expected " + item +
                          " numbers and ranges, e.g. 0,3,5-7)");
    };
    std::vector<std::size_t> out;
    std::size_t at = 0;
    const auto skip_spaces = [&] {
        while (at < text.size() && text[at] == ' ') {
            ++at;
        }
    };
    const auto number = [&]() -> std::size_t {
        skip_spaces();
        const std::size_t start = at;
        while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0) {
            ++at;
        }
        if (at == start || at - start > 9) {
            throw fail("a " + item + " number is " + (at == start ? "missing" : "too large"));
        }
        const std::size_t n = std::stoul(std::string(text.substr(start, at - start)));
        skip_spaces();
        return n;
    };
    while (true) {
        const std::size_t first = number();
        std::size_t last = first;
        if (at < text.size() && text[at] == '-') {
            ++at;
            last = number();
            if (last < first) {
                throw fail("the range " + std::to_string(first) + "-" + std::to_string(last) +
                           " is reversed");
            }
        }
        for (std::size_t l = first; l <= last; ++l) {
            if (std::find(out.begin(), out.end(), l) != out.end()) {
                throw fail(item + " " + std::to_string(l) + " is given twice");
            }
            if (out.size() >= 100000) {
                throw fail("too many " + item + "s");
            }
            out.push_back(l);
        }
        if (at == text.size()) {
            return out;
        }
        if (text[at] != ',') {
            throw fail("unexpected '" + io::message_text(std::string(1, text[at])) + "'");
        }
        ++at;
    }
}

} // namespace attn::model
