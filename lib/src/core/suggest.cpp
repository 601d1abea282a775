// closest_name: optimal string alignment distance (Damerau-Levenshtein without repeated
// edits of one substring), case-insensitive. See attn/suggest.hpp.
#include "attn/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace attn {

namespace {

char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

std::size_t distance(std::string_view a, std::string_view b) {
    const std::size_t n = a.size();
    const std::size_t m = b.size();
    // d[i][j]: edits between a[0, i) and b[0, j); three rows suffice for the swap rule.
    std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
    for (std::size_t j = 0; j <= m; ++j) {
        prev[j] = j;
    }
    for (std::size_t i = 1; i <= n; ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1])) {
                cur[j] = std::min(cur[j], prev2[j - 2] + 1);
            }
        }
        std::swap(prev2, prev);
        std::swap(prev, cur);
    }
    return prev[m];
}

} // namespace

std::string closest_name(std::string_view word, const std::vector<std::string>& candidates) {
    const std::size_t allowed = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
    std::string best;
    std::size_t best_distance = allowed + 1;
    for (const std::string& c : candidates) {
        const std::size_t d = distance(word, c);
        if (d < best_distance) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    const std::string best = closest_name(word, candidates);
    return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

} // namespace attn
