// `attn batch [FILE]`: JSON Lines in, JSON Lines out, in input order. A line that fails
// becomes {"id": .., "error": ".."} and the run goes on; exit 1 if any line failed.
// Lines are read and answered one at a time, so memory stays bounded.
#include "cli.hpp"
#include "compute_options.hpp"

#include "attn/error.hpp"
#include "attn/io/problem.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace attn::app {

namespace {

struct BatchArgs {
    std::string file;
    bool no_weights = false;
    unsigned threads = 0;
};

int run_batch(const BatchArgs& a) {
    std::ifstream file;
    std::istream* in = &std::cin;
    std::filesystem::path base = std::filesystem::current_path();
    if (!a.file.empty() && a.file != "-") {
        file.open(a.file, std::ios::binary);
        if (!file) {
            throw InputError(a.file + ": cannot read");
        }
        in = &file;
        base = std::filesystem::absolute(a.file).parent_path();
    }
    std::string line;
    std::size_t line_no = 0;
    int failed = 0;
    while (std::getline(*in, line)) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
            continue;
        }
        nlohmann::json id;
        try {
            const nlohmann::json doc =
                io::parse_json_text(line, "line " + std::to_string(line_no));
            if (doc.is_object() && doc.contains("id")) {
                id = doc["id"];
            }
            const io::Problem problem = io::decode_problem(doc, base);
            io::SolveOptions opts;
            opts.want_weights = !a.no_weights;
            opts.threads = a.threads;
            const io::Solution s = io::solve(problem, opts);
            std::cout << io::result_document(problem, s) << '\n';
        } catch (const Error& e) {
            ++failed;
            const auto dump = [](const nlohmann::json& j) {
                return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            };
            std::cout << "{\"id\":" << dump(id) << ",\"error\":" << dump(e.what()) << "}\n";
        }
        std::cout.flush();
    }
    if (!std::cout) {
        throw SystemError("<stdout>: cannot write");
    }
    return failed;
}

}  // namespace

void add_batch(CLI::App& app) {
    auto args = std::make_shared<BatchArgs>();
    CLI::App* cmd = app.add_subcommand(
        "batch",
        "JSON Lines in (one problem per line; - or absent = stdin), JSON Lines out, in order");
    add_version_flag(*cmd);
    cmd->add_option("file", args->file, "JSON Lines file, or - for stdin");
    cmd->add_flag("--no-weights", args->no_weights, "leave the weights out of every result");
    cmd->add_option("--threads", args->threads, "worker threads per problem")
        ->check(CLI::PositiveNumber);
    cmd->callback([args] {
        const int failed = run_batch(*args);
        if (failed > 0) {
            throw ExitCode{1};
        }
    });
}

}  // namespace attn::app
