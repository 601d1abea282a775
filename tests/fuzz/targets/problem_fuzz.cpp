// Fuzz target: the problem document (io::parse_json_text, problem::decode_problem with params
// objects and files, relative paths into a folder of fixture arrays, presets, masks, heads),
// then the limit checks and, for small problems, solve() and the result document.
// Properties: nothing but InputError escapes, its message is one line; an output path equal
// to an input is refused; the result document parses back to the same values.
#include "attn/io/json_text.hpp"
#include "attn/problem/problem.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace attn;

ATTN_FUZZ_TARGET_WITH(problem, fuzz::Setup::fixtures) {
    const std::optional<nlohmann::json> doc = fuzz::input_json(data, size, "problem.json");
    if (!doc) {
        return 0;
    }
    problem::Problem p;
    if (!fuzz::only_input_errors("decode_problem",
                                 [&] { p = problem::decode_problem(*doc, fuzz::fixture_dir()); })) {
        return 0;
    }
    fuzz::check_decoded_problem(p);
    return 0;
}
