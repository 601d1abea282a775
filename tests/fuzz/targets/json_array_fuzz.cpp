// Fuzz target: JSON array literals (io::parse_json_text, then io::parse_json_array for
// numeric arrays and for masks). Properties: nothing but InputError escapes, its message is
// one line; whatever parses round-trips: encode_json_array -> parse gives the same shape
// and values (bit for bit, NaN for NaN), the text is stable on a second trip, and the NPY
// writer and reader agree with it too.
#include "attn/io/json_text.hpp"
#include "attn/problem/problem.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace attn;

ATTN_FUZZ_TARGET(json_array) {
    const std::optional<nlohmann::json> j = fuzz::input_json(data, size, "fuzz.json");
    if (!j) {
        return 0;
    }
    for (const io::ArrayKind kind : {io::ArrayKind::numeric, io::ArrayKind::mask}) {
        io::Array a;
        if (!fuzz::only_input_errors("parse_json_array",
                                     [&] { a = io::parse_json_array(*j, "fuzz.json", kind); })) {
            continue;
        }
        fuzz::expect(!a.shape.empty() && a.shape.size() <= 4, "rank outside 1..4");
        fuzz::expect(a.values.size() == fuzz::element_count(a.shape),
                     "values do not fill the shape");
        fuzz::expect(!a.is_bool || kind == io::ArrayKind::mask, "booleans in a numeric array");

        const std::string encoded = io::encode_json_array(a.shape, a.values.data());
        io::Array b;
        fuzz::expect(fuzz::only_input_errors("reparse",
                                             [&] {
                                                 b = io::parse_json_array(
                                                     io::parse_json_text(encoded, "rt.json"),
                                                     "rt.json",
                                                     io::ArrayKind::numeric);
                                             }),
                     "our own JSON array does not parse: " + encoded.substr(0, 200));
        fuzz::expect_same_array(a, b, "JSON round trip");
        fuzz::expect(io::encode_json_array(b.shape, b.values.data()) == encoded,
                     "JSON text changes on a second round trip");

        (void)fuzz::expect_npy_round_trip(a, false, "JSON -> NPY round trip");
    }
    return 0;
}
