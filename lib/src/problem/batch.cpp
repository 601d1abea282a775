// `attn batch`'s lines: parse, decode, solve, format; any failure is the line's error line.
#include "attn/problem/batch.hpp"

#include "attn/error.hpp"
#include "attn/io/json_lines.hpp"
#include "attn/problem/document.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <sched.h>
#include <thread>

namespace attn::problem {

using nlohmann::json;

unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) {
            return static_cast<unsigned>(n);
        }
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

io::LineResult error_line(const json& id, std::uint64_t line_no, const std::string& message) {
    return {io::json_error_line(id, message) + "\n", line_no, true, false};
}

} // namespace

io::LineResult
process_line(const std::string& line, std::uint64_t line_no, const LineContext& ctx) {
    json id; // null until the line shows one
    try {
        json doc = io::parse_json_line(line, line_no);
        if (doc.is_object()) {
            if (const auto it = doc.find("id"); it != doc.end()) {
                id = *it;
            }
            for (const auto& [field, value] : ctx.defaults.items()) {
                if (!doc.contains(field)) {
                    doc[field] = value;
                }
            }
        }
        const DecodedDocument d = decode_document(std::move(doc), ctx.base, {}, false);
        if (d.first().weights_f16) {
            throw InputError(option_name("weights_dtype") +
                             " f16: a batch line's weights are JSON text; float16 weights are "
                             "written only to NPY and .npz files");
        }
        const Solution s = solve_document(d, ctx.solve, ctx.check_finite);
        return {document_result(d, s) + "\n",
                line_no,
                false,
                s.rows_fully_masked > 0,
                d.first().warnings};
    } catch (const std::bad_alloc&) {
        return error_line(id, line_no, "out of memory");
    } catch (const InputError& e) {
        return error_line(id, line_no, ctx.error_text ? ctx.error_text(e) : e.what());
    } catch (const std::exception& e) {
        return error_line(id, line_no, e.what());
    } catch (...) {
        return error_line(id, line_no, "internal error: unknown exception");
    }
}

void run_batch(io::LineReader& reader, io::LineWriter& writer, const BatchPlan& plan) {
    const LineContext& ctx = plan.lines;
    io::run_lines(
        reader, writer, plan.jobs, [&ctx](const std::string& line, std::uint64_t line_no) {
            return process_line(line, line_no, ctx);
        });
}

std::vector<std::string> batch_warnings(const io::LineWriter& writer) {
    std::vector<std::string> out = writer.warnings();
    if (writer.warning_count() > writer.warnings().size()) {
        out.push_back(std::to_string(writer.warning_count() - writer.warnings().size()) +
                      " more warning(s) not shown");
    }
    if (writer.noted() > 0) {
        out.push_back(
            fully_masked_text(std::to_string(writer.noted()) + " problem(s) have query rows that",
                              "the first on line " + std::to_string(writer.first_noted_line())));
    }
    if (writer.failed() > 0) {
        out.push_back(std::to_string(writer.failed()) + " of " + std::to_string(writer.done()) +
                      " problem(s) failed: see their \"error\" lines");
    }
    return out;
}

} // namespace attn::problem
