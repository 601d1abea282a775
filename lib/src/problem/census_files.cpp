// A census's files (attn/problem/census_files.hpp): JSON and CSV text, np.savez's archive,
// and that archive read back strictly for `attn census merge`.
#include "attn/problem/census_files.hpp"

#include "attn/error.hpp"
#include "attn/io/json_array.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/npz.hpp"
#include "attn/io/number_text.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace attn::problem {

namespace {

/// Statistic `stat`'s means (or sums), [layers, H].
std::vector<double> values_of(const Census& c, std::size_t stat, bool sums) {
    std::vector<double> v(c.layers * c.heads);
    for (std::size_t x = 0; x < v.size(); ++x) {
        v[x] = sums ? c.sum[stat][x] : c.mean(stat, x);
    }
    return v;
}

/// A [layers][H] JSON array of integers (rows) or booleans (sink).
template <class F> std::string grid(const Census& c, F cell) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t l = 0; l < c.layers; ++l) {
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t h = 0; h < c.heads; ++h) {
            row.push_back(cell(l * c.heads + h));
        }
        out.push_back(std::move(row));
    }
    return out.dump();
}

io::Array int_array(const Census& c, const std::vector<std::int64_t>& v) {
    io::Array a;
    a.shape = {c.layers, c.heads};
    a.dtype = "int64";
    a.values.assign(v.begin(), v.end());
    a.values64.assign(v.begin(), v.end()); // exact past 2^24
    return a;
}

} // namespace

std::string census_json(const Census& c) {
    const std::vector<std::size_t> shape{c.layers, c.heads};
    std::string out = "{\"layers\":" + std::to_string(c.layers) +
                      ",\"heads\":" + std::to_string(c.heads) +
                      ",\"sink_threshold\":" + io::format_double(c.sink_threshold);
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        const std::string name = head_stat_names()[stat];
        out +=
            ",\"" + name + "\":" + io::encode_json_array(shape, values_of(c, stat, false).data());
        out += ",\"" + name +
               "_sum\":" + io::encode_json_array(shape, values_of(c, stat, true).data());
        out += ",\"" + name + "_rows\":" + grid(c, [&](std::size_t x) { return c.rows[stat][x]; });
    }
    out += ",\"sink\":" + grid(c, [&](std::size_t x) { return c.sink(x); }) + "}";
    return out;
}

std::string census_csv(const Census& c) {
    std::string out = "layer,head";
    for (const char* name : head_stat_names()) {
        out += std::string(",") + name;
    }
    out += ",sink";
    for (const char* name : head_stat_names()) {
        out += std::string(",") + name + "_rows";
    }
    out += "\n";
    for (std::size_t l = 0; l < c.layers; ++l) {
        for (std::size_t h = 0; h < c.heads; ++h) {
            const std::size_t x = l * c.heads + h;
            out += std::to_string(l) + "," + std::to_string(h);
            for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
                out += "," + io::format_double(c.mean(stat, x));
            }
            out += c.sink(x) ? ",true" : ",false";
            for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
                out += "," + std::to_string(c.rows[stat][x]);
            }
            out += "\n";
        }
    }
    return out;
}

std::vector<std::uint8_t> census_npz(const Census& c) {
    const std::vector<std::size_t> shape{c.layers, c.heads};
    std::vector<io::NpzMember> members;
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        const std::string name = head_stat_names()[stat];
        members.push_back({name, io::encode_npy(shape, values_of(c, stat, false).data(), true)});
        members.push_back(
            {name + "_sum", io::encode_npy(shape, values_of(c, stat, true).data(), true)});
        members.push_back({name + "_rows", io::encode_npy_int64(int_array(c, c.rows[stat]))});
    }
    std::vector<std::int64_t> sink(c.layers * c.heads);
    for (std::size_t x = 0; x < sink.size(); ++x) {
        sink[x] = c.sink(x) ? 1 : 0;
    }
    members.push_back({"sink", io::encode_npy_int64(int_array(c, sink))});
    members.push_back({"sink_threshold", io::encode_npy({1}, &c.sink_threshold, true)});
    return io::encode_npz(members);
}

Census read_census_npz(const std::filesystem::path& file) {
    const auto member = [&](const std::string& name) {
        return io::read_npz_array(file, name, io::Precision::f64);
    };
    const io::Array threshold = member("sink_threshold");
    if (threshold.values64.size() != 1 || !std::isfinite(threshold.values64[0])) {
        throw InputError::at(file, "sink_threshold: expected one finite number");
    }
    Census c;
    c.sink_threshold = threshold.values64[0];
    for (std::size_t stat = 0; stat < kHeadStats; ++stat) {
        const std::string name = head_stat_names()[stat];
        const io::Array sum = member(name + "_sum");
        const io::Array rows = member(name + "_rows");
        if (sum.shape.size() != 2 || rows.shape != sum.shape ||
            (stat > 0 && (sum.shape[0] != c.layers || sum.shape[1] != c.heads))) {
            throw InputError::at(file,
                                 name + "_sum, " + name + "_rows: expected shape [" +
                                     std::to_string(c.layers) + ", " + std::to_string(c.heads) +
                                     "] (layers, heads), got " + shape_string(sum.shape) + " and " +
                                     shape_string(rows.shape));
        }
        c.layers = sum.shape[0];
        c.heads = sum.shape[1];
        c.sum[stat] = sum.values64;
        for (const double r : rows.values64) {
            if (!(r >= 0.0) || r != std::floor(r) || r > 9.0e15) {
                throw InputError::at(file, name + "_rows: expected whole numbers >= 0");
            }
            c.rows[stat].push_back(static_cast<std::int64_t>(r));
        }
    }
    return c;
}

} // namespace attn::problem
