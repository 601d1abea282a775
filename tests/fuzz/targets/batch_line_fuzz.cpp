// Fuzz target: one line of `attn batch` (the input up to its first '\n'), handled as
// problem::process_line (lib/src/problem/batch.cpp) handles it: parse
// (io::parse_json_line, the fast path and the full parser behind it), take the id,
// decode, and either the problem or the error line
// {"id": .., "error": ".."} (io::json_error_line). Properties: nothing but InputError
// escapes decode and solve, its message is one line; whatever the fast path accepts, the
// full parser accepts too, as the same document (same types, same dump); the error line and the
// result document are valid JSON that parse back to the same id, message and values.
#include "attn/io/json_lines.hpp"
#include "attn/problem/checks.hpp"
#include "attn/problem/problem.hpp"
#include "attn/problem/solve.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace attn;

ATTN_FUZZ_TARGET_WITH(batch_line, fuzz::Setup::fixtures) {
    std::string_view line = fuzz::input_text(data, size);
    line = line.substr(0, line.find('\n'));

    nlohmann::json fast;
    if (io::parse_json_fast(line, fast)) {
        nlohmann::json full;
        fuzz::expect(fuzz::only_input_errors("full parser",
                                             [&] { full = io::parse_json_text(line, "line 1"); }),
                     "the fast path accepts what the full parser refuses");
        fuzz::expect(fast == full && fast.dump() == full.dump(),
                     "the fast path and the full parser disagree on: " +
                         std::string(line.substr(0, 200)));
    }

    nlohmann::json id;
    problem::Problem p;
    std::string message;
    const bool decoded = fuzz::only_input_errors(
        "line",
        [&] {
            const nlohmann::json doc = io::parse_json_line(line, 1);
            if (doc.is_object()) {
                if (const auto it = doc.find("id"); it != doc.end()) {
                    id = *it;
                }
            }
            p = problem::decode_problem(doc, fuzz::fixture_dir());
        },
        &message);
    if (decoded) {
        fuzz::check_decoded_problem(p);
        return 0;
    }
    // The error line, as batch writes it, must be one valid JSON line.
    const std::string error_line = io::json_error_line(id, message);
    fuzz::expect(error_line.find('\n') == std::string::npos, "line break in an error line");
    nlohmann::json back;
    fuzz::expect(fuzz::only_input_errors("error line",
                                         [&] { back = io::parse_json_text(error_line, "err"); }),
                 "the error line is not valid JSON: " + error_line.substr(0, 200));
    fuzz::expect(back.at("error").is_string(), "the error is not a string");
    return 0;
}
