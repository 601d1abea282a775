// Token lists for labels: comma-separated, or a file with one token per line (so "," is a
// token) or a JSON list of strings.
#include "attn/error.hpp"
#include "attn/io/token_list.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace attn::io {
namespace {

using Tokens = std::vector<std::string>;

std::string temp_file(const std::string& name, const std::string& bytes) {
    const auto p = std::filesystem::temp_directory_path() /
                   ("attn-token-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
}

TEST(TokenList, CommaSeparated) {
    EXPECT_EQ(parse_token_list("the,cat,sat", "--tokens"), (Tokens{"the", "cat", "sat"}));
    EXPECT_EQ(parse_token_list("a,,b", "--tokens"), (Tokens{"a", "", "b"}));
    EXPECT_EQ(parse_token_list("one", "--tokens"), (Tokens{"one"}));
}

TEST(TokenList, OnePerLineSoACommaIsAToken) {
    const std::string f = temp_file("lines.txt", "\xEF\xBB\xBFHello\r\n,\r\n world\n");
    EXPECT_EQ(parse_token_list(f, "--tokens"), (Tokens{"Hello", ",", " world"}));
    const std::string g = temp_file("nofinal.txt", "a\nb");
    EXPECT_EQ(parse_token_list(g, "--tokens"), (Tokens{"a", "b"}));
    const std::string e = temp_file("empty.txt", "");
    EXPECT_THROW(parse_token_list(e, "--tokens"), InputError);
    std::filesystem::remove(f);
    std::filesystem::remove(g);
    std::filesystem::remove(e);
}

TEST(TokenList, JsonList) {
    const std::string f = temp_file("list.json", "  [\"a,b\", \"\\n\", \"\xE7\x8C\xAB\"]\n");
    EXPECT_EQ(parse_token_list(f, "--xlabels"), (Tokens{"a,b", "\n", "\xE7\x8C\xAB"}));
    const std::string bad = temp_file("bad.json", "[\"a\", 3]");
    try {
        parse_token_list(bad, "--xlabels");
        ADD_FAILURE() << "no throw";
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "--xlabels " + bad + ": [1]: expected a string, got number");
    }
    std::filesystem::remove(f);
    std::filesystem::remove(bad);
}

TEST(TokenList, AMissingFileIsNotOneToken) {
    for (const char* arg : {"tokens.txt", "dir/tokens", "x.json"}) {
        try {
            parse_token_list(arg, "--tokens");
            ADD_FAILURE() << arg;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
        }
    }
}

} // namespace
} // namespace attn::io
