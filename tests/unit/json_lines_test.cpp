// Tests of the JSON Lines unit (attn/io/json_lines.hpp, attn/io/line_pipeline.hpp): the
// fast path of the batch line parser checked against nlohmann (the full parser) on
// accepted, fallen-back and refused inputs, numbers, strings, depth; the messages of
// parse_json_line; the error line; and the reader and the ordered pipeline.
#include "attn/error.hpp"
#include "attn/io/json_lines.hpp"
#include "attn/io/limits.hpp"
#include "attn/io/line_pipeline.hpp"

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using attn::InputError;
using nlohmann::json;
namespace io = attn::io;

/// The fast path accepts `text` and builds exactly what nlohmann builds (same types).
void expect_fast_agrees(const std::string& text) {
    SCOPED_TRACE(text);
    json fast;
    ASSERT_TRUE(io::parse_json_fast(text, fast));
    const json full = json::parse(text);
    EXPECT_EQ(fast, full);
    EXPECT_EQ(fast.dump(), full.dump());
    EXPECT_EQ(io::parse_json_line(text, 1).dump(), full.dump());
}

/// The fast path gives up on valid `text`; parse_json_line still parses it as nlohmann.
void expect_fallback(const std::string& text) {
    SCOPED_TRACE(text);
    json fast;
    EXPECT_FALSE(io::parse_json_fast(text, fast));
    EXPECT_EQ(io::parse_json_line(text, 1).dump(), json::parse(text).dump());
}

/// Both refuse `text`: the message names the line and is one line.
void expect_refused(const std::string& text) {
    SCOPED_TRACE(text);
    json fast;
    EXPECT_FALSE(io::parse_json_fast(text, fast));
    try {
        io::parse_json_line(text, 7);
        ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind("line 7: ", 0), 0u) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
}

std::string nested(int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') + "1" +
           std::string(static_cast<std::size_t>(depth), ']');
}

TEST(JsonLines, FastPathAgreesWithNlohmannOnValidDocuments) {
    for (const char* text : {
             R"({"id":1,"query":[[1,2],[3,4]],"key":[[0.5,-1e-3],[2.5e10,-0]]})",
             R"( { "a" : [ ] , "b" : { } , "c" : [ true , false , null ] } )",
             "\t[1,\r\n2]\n",
             R"({"a":1,"a":2})", // a repeated key: the last wins
             "\"plain ASCII ~!@#$%^&*()\"",
             "[]",
             "{}",
             "0",
             "-0",
             "-0.0",
             "true",
             "null",
             R"({"nested":{"deeper":{"list":[[[]]]}}})",
         }) {
        expect_fast_agrees(text);
    }
}

TEST(JsonLines, NumbersAreRoundedAndTypedAsNlohmann) {
    for (const char* text : {
             "0.1",
             "1e22",
             "1e23",
             "9007199254740993",
             "9007199254740993.0",
             "123456789012345678e-5",
             "5e-324",
             "1.7976931348623157e308",
             "2.2250738585072014e-308",
             "4.9406564584124654e-324",
             "-9223372036854775808",
             "-9223372036854775809",
             "18446744073709551615",
             "18446744073709551616",
             "1E+2",
             "1e-2",
             "0.000001",
             "123456789012345.6",
             "1234567890123456.7",
             "0.30000000000000004",
             "100e-22",
             "0e999999999",
         }) {
        expect_fast_agrees(text);
    }
    // Shortest and 17-digit texts of random doubles of every magnitude.
    std::mt19937_64 rng(12);
    std::uniform_real_distribution<double> mantissa(-10.0, 10.0);
    std::uniform_int_distribution<int> exponent(-300, 300);
    for (int i = 0; i < 2000; ++i) {
        const double x = std::ldexp(mantissa(rng), exponent(rng));
        expect_fast_agrees(json(x).dump());
        char buffer[40];
        std::snprintf(buffer, sizeof buffer, "%.17g", x);
        expect_fast_agrees(buffer);
        std::snprintf(buffer, sizeof buffer, "%.15e", x);
        expect_fast_agrees(buffer);
    }
}

TEST(JsonLines, EscapesUnicodeDeepNestingAndHugeNumbersFallBack) {
    for (const char* text : {
             R"("a\nb")",
             R"("quote \" inside")",
             R"("\u00e9\ud83d\ude00")",
             "\"caf\xc3\xa9\"",
             R"({"k\/":1})",
             "1e400", // out of double range: nlohmann refuses it below
         }) {
        if (std::string(text) == "1e400") {
            json fast;
            EXPECT_FALSE(io::parse_json_fast(text, fast));
            continue;
        }
        expect_fallback(text);
    }
    expect_fallback("1e-400"); // underflows: from_chars says out of range, nlohmann gives 0
    expect_fallback("[-1e-400]");
    expect_fast_agrees(nested(io::max_fast_json_depth)); // the innermost value at depth 32
    expect_fallback(nested(io::max_fast_json_depth + 1));
}

TEST(JsonLines, SyntaxErrorsAreRefusedByBoth) {
    for (const char* text : {
             "",          " ",         "[",           "]",
             "[1,]",      "[,1]",      R"({"a":1,})", R"({"a"})",
             R"({"a":})", "{a:1}",     "{'a':1}",     "01",
             "-01",       "1.",        ".5",          "-",
             "+1",        "1e",        "1e+",         "0x10",
             "tru",       "nul",       "falsey",      "[1 2]",
             "1 2",       "\"abc",     "\"a\tb\"",    "NaN",
             "Infinity",  "-Infinity", R"({"a":1}})", "[[]",
             "\"\\x\"",   "1e400",     "[1e400]",
         }) {
        expect_refused(text);
    }
}

TEST(JsonLines, MessagesArePinned) {
    EXPECT_THROW(
        {
            try {
                io::parse_json_line("{\"a\":", 5);
            } catch (const InputError& e) {
                EXPECT_STREQ(e.what(),
                             "line 5: invalid JSON: parse error at line 1, column 6: syntax "
                             "error while parsing value - unexpected end of input; expected "
                             "'[', '{', or a literal");
                throw;
            }
        },
        InputError);
    EXPECT_THROW(
        {
            try {
                io::parse_json_line(nested(200), 3);
            } catch (const InputError& e) {
                EXPECT_STREQ(e.what(), "line 3: JSON nested deeper than 128 levels (at byte 128)");
                throw;
            }
        },
        InputError);
}

TEST(JsonLines, ErrorLineIsOneValidJsonLine) {
    EXPECT_EQ(io::json_error_line(json(), "bad"), R"({"id":null,"error":"bad"})");
    EXPECT_EQ(io::json_error_line(json("x"), "q\"\n"), R"({"id":"x","error":"q\"\n"})");
    const std::string invalid_utf8 = "caf\xc3";
    const std::string line = io::json_error_line(json(7), invalid_utf8);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    const json back = json::parse(line);
    EXPECT_EQ(back.at("id"), 7);
    EXPECT_TRUE(back.at("error").is_string());
}

TEST(JsonLines, BlankLines) {
    EXPECT_TRUE(io::blank_line(""));
    EXPECT_TRUE(io::blank_line(" \t\r"));
    EXPECT_FALSE(io::blank_line(" x "));
    EXPECT_FALSE(io::blank_line("\f"));
}

/// A pipe holding `text` (small: it fits the pipe buffer), for a LineReader.
int pipe_with(const std::string& text) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    EXPECT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fds[1]);
    return fds[0];
}

TEST(LinePipeline, ReaderSplitsLinesAndSkipsOverlongOnes) {
    const int fd = pipe_with("one\n\n  \nlong line here\nlast");
    io::LineReader reader(fd, "<pipe>", 8);
    std::vector<std::string> lines;
    std::vector<std::uint64_t> overlong;
    std::string line;
    while (reader.next(line)) {
        lines.push_back(line);
        overlong.push_back(reader.overlong());
    }
    ::close(fd);
    EXPECT_EQ(lines, (std::vector<std::string>{"one", "", "  ", "", "last"}));
    EXPECT_EQ(overlong, (std::vector<std::uint64_t>{0, 0, 0, 14, 0}));
    EXPECT_EQ(reader.bytes_read(), 27u);
}

/// Runs run_lines over `input` with stdout captured; returns what it wrote.
std::string run_captured(const std::string& input, unsigned jobs, io::LineWriter& writer) {
    const int fd = pipe_with(input);
    io::LineReader reader(fd, "<pipe>", 16);
    std::FILE* out = std::tmpfile();
    std::fflush(stdout);
    const int saved = ::dup(STDOUT_FILENO);
    ::dup2(::fileno(out), STDOUT_FILENO);
    std::mt19937 rng(jobs);
    std::vector<int> delays;
    delays.reserve(64);
    for (int i = 0; i < 64; ++i) {
        delays.push_back(static_cast<int>(rng() % 3));
    }
    io::run_lines(reader, writer, jobs, [&](const std::string& line, std::uint64_t line_no) {
        std::this_thread::sleep_for(std::chrono::milliseconds(delays[line_no % delays.size()]));
        return io::LineResult{
            line + "@" + std::to_string(line_no) + "\n", line_no, line == "bad", line == "noted"};
    });
    std::fflush(stdout);
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    ::close(fd);
    std::string text;
    std::rewind(out);
    for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) {
        text += static_cast<char>(c);
    }
    std::fclose(out);
    return text;
}

TEST(LinePipeline, WritesInInputOrderForAnyJobs) {
    std::string input;
    std::string expected;
    for (int i = 1; i <= 40; ++i) {
        const std::string line = i == 5 ? "bad" : i == 9 ? "noted" : "l" + std::to_string(i);
        input += line + "\n";
        expected += line + "@" + std::to_string(i) + "\n";
    }
    input += "\n  \n" + std::string(20, 'x') + "\nend";
    expected +=
        R"({"id":null,"error":"line 43: 20 B long, more than the memory limit of 16 B: skipped"})"
        "\nend@44\n";
    for (const unsigned jobs : {1u, 2u, 5u}) {
        SCOPED_TRACE(jobs);
        std::uint64_t progress_calls = 0;
        io::LineWriter writer([&](std::uint64_t, std::uint64_t) { ++progress_calls; });
        EXPECT_EQ(run_captured(input, jobs, writer), expected);
        EXPECT_EQ(writer.done(), 42u);
        EXPECT_EQ(writer.failed(), 2u); // "bad" and the overlong line
        EXPECT_EQ(writer.noted(), 1u);
        EXPECT_EQ(writer.first_noted_line(), 9u);
        EXPECT_EQ(progress_calls, 42u);
    }
}

} // namespace
