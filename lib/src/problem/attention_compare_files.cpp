// A comparison's files (attn/problem/attention_compare_files.hpp): JSON and CSV text,
// np.savez's archive, and the summary line.
#include "attn/problem/attention_compare_files.hpp"

#include "attn/error.hpp"
#include "attn/io/json_array.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/number_text.hpp"

#include <cmath>
#include <cstdio>

namespace attn::problem {

namespace {

std::string three_digits(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

std::vector<std::uint8_t> int_npy(std::int64_t v) {
    io::Array a;
    a.shape = {1};
    a.dtype = "int64";
    a.values = {static_cast<float>(v)};
    a.values64 = {static_cast<double>(v)};
    return io::encode_npy_int64(a);
}

} // namespace

std::string compare_json(const AttentionComparison& c) {
    std::string out = "{";
    for (std::size_t m = 0; m < kCompareMetrics; ++m) {
        out += std::string(m == 0 ? "" : ",") + "\"" + compare_metric_names()[m] +
               "\":" + io::encode_json_array(c.grid, c.values[m].data());
    }
    out += ",\"top_k\":" + std::to_string(c.top_k) + ",\"rows\":" + std::to_string(c.rows) + "}";
    return out;
}

std::string compare_csv(const AttentionComparison& c) {
    std::string out = "layer,head";
    for (const char* name : compare_metric_names()) {
        out += std::string(",") + name;
    }
    out += "\n";
    const std::size_t heads = c.grid.empty() ? 1 : c.grid.back();
    for (std::size_t x = 0; x < c.cells(); ++x) {
        out += std::to_string(x / heads) + "," + std::to_string(x % heads);
        for (std::size_t m = 0; m < kCompareMetrics; ++m) {
            out += "," + io::format_double(c.values[m][x]);
        }
        out += "\n";
    }
    return out;
}

std::vector<std::uint8_t> compare_npz(const AttentionComparison& c) {
    std::vector<io::NpzMember> members;
    for (std::size_t m = 0; m < kCompareMetrics; ++m) {
        members.push_back(
            {compare_metric_names()[m], io::encode_npy(c.grid, c.values[m].data(), true)});
    }
    members.push_back({"top_k", int_npy(static_cast<std::int64_t>(c.top_k))});
    members.push_back({"rows", int_npy(c.rows)});
    return io::encode_npz(members);
}

std::string compare_summary(const AttentionComparison& c) {
    if (c.cells() == 0) {
        return "nothing compared";
    }
    const std::size_t x = c.most_different();
    const std::vector<std::size_t> at = c.cell_index(x);
    std::string where;
    if (at.size() == 2) {
        where = "layer " + std::to_string(at[0]) + " head " + std::to_string(at[1]);
    } else if (at.size() == 1) {
        where = "head " + std::to_string(at[0]);
    } else {
        where = at.empty() ? "the one map" : "map " + shape_string(at);
    }
    return "most different: " + where + " (js " + three_digits(c.values[0][x]) + "); mean js " +
           three_digits(c.mean_js()) + " over " + std::to_string(c.cells()) +
           (c.cells() == 1 ? " map" : " maps") + ", " + std::to_string(c.rows) + " query rows each";
}

} // namespace attn::problem
