// The problem's "rope" field: its three forms, the positions (shared list, per-side
// lists, offset, defaults) and one-line refusals naming the key.
#include "attn/error.hpp"
#include "attn/model/rope_field.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using attn::model::parse_rope_field;
using nlohmann::json;
using Ids = std::vector<std::int64_t>;

std::string message_of(const char* text) {
    try {
        (void)parse_rope_field(json::parse(text));
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "(no InputError)";
}

TEST(RopeField, TrueNumberAndObject) {
    EXPECT_EQ(parse_rope_field(json(true)).spec.theta, 10000.0);
    EXPECT_EQ(parse_rope_field(json(500000.0)).spec.theta, 500000.0);
    const auto f = parse_rope_field(json::parse(
        R"({"theta": 1e6, "style": "interleaved", "dim": 32, "offset": 7,
            "scaling": {"rope_type": "linear", "factor": 2}})"));
    EXPECT_EQ(f.spec.theta, 1e6);
    EXPECT_EQ(f.spec.style, attn::RopeStyle::interleaved);
    EXPECT_EQ(f.spec.dim, 32u);
    EXPECT_EQ(f.offset, 7);
    EXPECT_EQ(f.spec.scaling.type, attn::RopeScalingType::linear);
    EXPECT_EQ(attn::model::resolve_rope_positions(f, 2, 5).query, (Ids{7, 8}));
}

TEST(RopeField, Positions) {
    const auto shared = parse_rope_field(json::parse(R"({"positions": [0, 1, 0, 1]})"));
    EXPECT_EQ(shared.positions.query, (Ids{0, 1, 0, 1}));
    EXPECT_EQ(shared.positions.key, (Ids{0, 1, 0, 1}));
    const auto split =
        parse_rope_field(json::parse(R"({"positions": {"query": [9], "key": [-1, 3]}})"));
    EXPECT_EQ(attn::model::resolve_rope_positions(split, 1, 2).query, (Ids{9}));
    EXPECT_EQ(attn::model::resolve_rope_positions(split, 1, 2).key, (Ids{-1, 3}));
    const auto none = parse_rope_field(json(true));
    EXPECT_EQ(attn::model::resolve_rope_positions(none, 2, 3).query, (Ids{1, 2}));
    EXPECT_EQ(attn::model::resolve_rope_positions(none, 2, 3).key, (Ids{0, 1, 2}));
}

TEST(RopeField, Refusals) {
    EXPECT_EQ(message_of(R"({"style": "gptj"})"),
              "rope.style: expected \"neox\" or \"interleaved\", got string \"gptj\"");
    EXPECT_EQ(message_of(R"({"theta": "1e4"})"),
              "rope.theta: expected a number > 0, got string \"1e4\"");
    EXPECT_EQ(message_of(R"({"dim": 0})"),
              "rope.dim: expected a positive even integer, got number 0");
    EXPECT_EQ(message_of(R"({"positions": [0, 1.5]})"),
              "rope.positions[1]: expected an integer, got number 1.5");
    EXPECT_EQ(message_of(R"({"positions": {"query": [0]}})"),
              "rope.positions: expected both \"query\" and \"key\" lists");
    EXPECT_EQ(message_of(R"({"offset": 1, "positions": [0]})"),
              "rope: give \"offset\" or \"positions\", not both");
    EXPECT_EQ(message_of(R"({"thetа": 1})").substr(0, 19), "rope: unknown key '");
    EXPECT_EQ(message_of("false"), "rope: expected true, a theta or an object, got boolean false");
    EXPECT_EQ(message_of(R"({"scaling": {"rope_type": "dynamic", "factor": 2}})"),
              "rope.scaling: rope_type 'dynamic' is not supported (supported: default, linear, "
              "llama3)");
}

} // namespace
