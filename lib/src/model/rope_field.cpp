// The "rope" field of a problem document, decoded strictly (it is user input, unlike a
// config.json, whose unknown keys are ignored); "scaling" shares parse_rope_scaling
// with config.json.
#include "attn/model/rope_field.hpp"

#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/io/json_text.hpp"
#include "attn/model/hf_config.hpp"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::model {

using json = nlohmann::json;

namespace {

double theta_of(const json& j, const std::string& where) {
    if (j.is_number() && std::isfinite(j.get<double>()) && j.get<double>() > 0.0) {
        return j.get<double>();
    }
    throw InputError(where + ": expected a number > 0, got " + io::value_text(j));
}

std::vector<std::int64_t> position_list(const json& j, const std::string& where) {
    if (!j.is_array()) {
        throw InputError(where + ": expected a list of integer positions, got " +
                         io::value_text(j));
    }
    std::vector<std::int64_t> out;
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) {
        const json& v = j[i];
        if (!v.is_number_integer()) {
            throw InputError(where + "[" + std::to_string(i) + "]: expected an integer, got " +
                             io::value_text(v));
        }
        if (v.is_number_unsigned() &&
            v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
            throw InputError(where + "[" + std::to_string(i) + "]: out of range");
        }
        out.push_back(v.get<std::int64_t>());
    }
    return out;
}

} // namespace

RopeField parse_rope_field(const json& j, std::string_view where_in) {
    const std::string where(where_in);
    RopeField f;
    if (j.is_boolean() && j.get<bool>()) {
        return f;
    }
    if (j.is_number()) {
        f.spec.theta = theta_of(j, where);
        return f;
    }
    if (!j.is_object()) {
        throw InputError(where + ": expected true, a theta or an object, got " + io::value_text(j));
    }
    for (const auto& [key, value] : j.items()) {
        const std::string name = where + "." + key;
        if (key == "theta") {
            f.spec.theta = theta_of(value, name);
        } else if (key == "style") {
            if (value == "neox") {
                f.spec.style = RopeStyle::neox;
            } else if (value == "interleaved") {
                f.spec.style = RopeStyle::interleaved;
            } else {
                throw InputError(name + ": expected \"neox\" or \"interleaved\", got " +
                                 io::value_text(value));
            }
        } else if (key == "dim") {
            if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0) {
                throw InputError(name + ": expected a positive even integer, got " +
                                 io::value_text(value));
            }
            f.spec.dim = static_cast<std::size_t>(value.get<std::uint64_t>());
        } else if (key == "offset") {
            if (!value.is_number_integer() ||
                (value.is_number_unsigned() &&
                 value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
                throw InputError(name + ": expected an integer, got " + io::value_text(value));
            }
            f.offset = value.get<std::int64_t>();
        } else if (key == "positions") {
            if (value.is_object()) {
                for (const auto& [part, list] : value.items()) {
                    if (part == "query") {
                        f.positions.query = position_list(list, name + ".query");
                    } else if (part == "key") {
                        f.positions.key = position_list(list, name + ".key");
                    } else {
                        throw InputError(name + ": unknown key '" + io::message_text(part, 40) +
                                         "' (expected \"query\" and \"key\")");
                    }
                }
                if (f.positions.query.empty() || f.positions.key.empty()) {
                    throw InputError(name + ": expected both \"query\" and \"key\" lists");
                }
            } else {
                f.positions.query = position_list(value, name);
                f.positions.key = f.positions.query;
            }
        } else if (key == "scaling") {
            f.spec.scaling = parse_rope_scaling(value, name);
        } else {
            throw InputError(where + ": unknown key '" + io::message_text(key, 40) +
                             "' (expected theta, style, dim, offset, positions, scaling)");
        }
    }
    if (f.offset && !f.positions.query.empty()) {
        throw InputError(where + ": give \"offset\" or \"positions\", not both");
    }
    return f;
}

RopePositions resolve_rope_positions(const RopeField& f, std::size_t lq, std::size_t lk) {
    if (!f.positions.query.empty()) {
        return f.positions;
    }
    return rope_positions(lq, lk, f.offset);
}

} // namespace attn::model
