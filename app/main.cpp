// attn's entry point and its one catch ladder: CLI parse errors and InputError exit 2,
// SystemError, bad_alloc and anything else exit 1. Subcommands live one per file.
#include "attn/attention.hpp"
#include "attn/blas_threads.hpp"
#include "attn/cli/flags.hpp"
#include "attn/cli/shell_files.hpp"
#include "attn/error.hpp"
#include "attn/huge_pages.hpp"
#include "attn/io/array.hpp"
#include "attn/io/atomic_file.hpp"
#include "attn/io/file_read.hpp"
#include "attn/io/number_text.hpp"
#include "attn/kernels.hpp"
#include "attn/model/matmul.hpp"
#include "attn_git_commit.h"
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace attn::app {

const char* version() {
    return ATTN_VERSION;
}

void add_version_flag(CLI::App& app) {
    app.add_flag_callback(
        "--version",
        [] {
            std::cout << "attn " << version() << '\n' << "SIMD targets compiled in:";
            for (const attn::Simd simd : attn::simd_compiled()) {
                std::cout << ' ' << attn::simd_name(simd);
            }
            std::cout << "\nSIMD target this CPU uses: " << attn::simd_name(attn::Simd::best)
                      << "\nBF16 pair products (activations bf16): "
                      << attn::model::bf16_products(attn::Simd::best)
                      << "\nInteger products (activations q8): "
                      << attn::model::int8_products(attn::Simd::best) << "\nBuilt from commit "
                      << ATTN_GIT_COMMIT << '\n';
            throw CLI::Success();
        },
        "Print the version and exit");
}

namespace {

/// The subcommand whose flags this run declares, or empty for every subcommand's.
std::string& flags_only_of() {
    static std::string name;
    return name;
}

/// A run that starts with a word that may be a subcommand's name (`attn compute …`, or a
/// misspelling, which is refused by name) declares that subcommand's flags only: declaring
/// every subcommand's took most of a sanitized build's start-up (CLI11 allocates per flag,
/// and AddressSanitizer records each allocation's stack), and the test suite starts attn
/// thousands of times. `attn`, `attn help …`, `--help`, `--version`, `--completions` and
/// `--man` declare them all.
void declare_flags_of(int argc, char** argv) {
    if (argc >= 2 && argv[1][0] != '-' && std::string_view(argv[1]) != "help") {
        flags_only_of() = argv[1];
    }
}

} // namespace

bool declares_flags(const char* name) {
    return flags_only_of().empty() || flags_only_of() == name;
}

CLI::App* add_command(CLI::App& app, const CommandHelp& help) {
    CLI::App* cmd = app.add_subcommand(help.name, help.description);
    if (*help.footer != '\0') {
        cmd->footer(help.footer);
    }
    add_version_flag(*cmd);
    return cmd;
}

void flush_stdout() {
    std::cout.flush();
    if (!std::cout) {
        throw SystemError("<stdout>: cannot write");
    }
}

std::string table_format(const std::string& path) {
    if (path.empty() || path == "-") {
        return "";
    }
    for (const char* ext : {"json", "csv", "npz"}) {
        if (io::has_extension(path, std::string(".") + ext)) {
            return ext;
        }
    }
    throw InputError("--output " + io::message_text(path, 80) +
                     ": expected a .json, .csv or .npz file");
}

void write_table(const std::string& path, const TableFiles& files) {
    const std::string format = table_format(path);
    if (format.empty()) {
        std::cout << files.json() << '\n';
        flush_stdout();
    } else if (format == "npz") {
        io::write_file_atomic(path, files.npz());
    } else {
        io::write_file_atomic(path, format == "csv" ? files.csv() : files.json() + "\n");
    }
}

void warn(const std::string& message) {
    std::cerr << "attn: warning: " << message << '\n';
}

} // namespace attn::app

namespace {

std::vector<CLI::App*> subcommands(CLI::App& app) {
    return app.get_subcommands([](CLI::App*) { return true; });
}

int run(int argc, char** argv) {
    CLI::App app{"attn: compute, check and visualise attention "
                 "(softmax(Q·Kᵀ·scale)·V: self, masked, cross, multi-head, grouped-query)",
                 "attn"};
    app.require_subcommand(1);
    app.failure_message(attn::cli::parse_error_text);
    attn::app::declare_flags_of(argc, argv);
    attn::app::add_version_flag(app);
    attn::app::add_compute(app);
    attn::app::add_heatmap(app);
    attn::app::add_batch(app);
    attn::app::add_info(app);
    attn::app::add_diff(app);
    attn::app::add_explain(app);
    attn::app::add_tokenize(app);
    attn::app::add_census(app);
    attn::app::add_compare(app);

    // `attn`, `attn help` and `attn help CMD` print help (exit 0); an unknown command is
    // named, with the closest one, before CLI11 would call it a missing subcommand.
    if (argc < 2) {
        std::cout << app.help();
        return 0;
    }
    const std::string first = argv[1];
    // Hidden: the shell completions and the man page, from the definitions above (the build
    // writes them for `cmake --install`).
    if (first == "--completions" || first == "--man") {
        if (first == "--completions" && argc != 3) {
            throw attn::InputError("--completions: expected bash, zsh or fish");
        }
        std::cout << attn::cli::shell_file(
            app, first == "--man" ? "man" : argv[2], attn::app::version());
        attn::app::flush_stdout();
        return 0;
    }
    const std::vector<std::string> names = attn::cli::subcommand_names(app);
    if (first == "help") {
        if (argc == 2) {
            std::cout << app.help();
            return 0;
        }
        for (CLI::App* s : subcommands(app)) {
            if (s->get_name() == argv[2]) {
                std::cout << s->help(app.get_name());
                return 0;
            }
        }
        throw attn::cli::unknown_command(app, argv[2]);
    }
    if (!first.empty() && first[0] != '-' &&
        std::find(names.begin(), names.end(), first) == names.end()) {
        throw attn::cli::unknown_command(app, first);
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    } catch (const attn::app::ExitCode& e) {
        return e.code;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    // SIGINT/SIGTERM/SIGHUP remove the temp files of unfinished atomic writes, then the
    // signal takes its default course: an interrupted run leaves no partial output.
    attn::io::install_signal_cleanup();
    // A layer's tensors reuse the pages the layer before freed (no fault storm per layer).
    attn::keep_freed_memory();
    // BLAS on one thread, and OpenBLAS's polling server threads stopped before any work.
    attn::blas_single_threaded();
    try {
        return run(argc, argv);
    } catch (const attn::InputError& e) {
        std::cerr << "attn: error: " << attn::cli::error_text(e) << '\n';
        return 2;
    } catch (const attn::SystemError& e) {
        std::cerr << "attn: error: " << e.what() << '\n';
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "attn: error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "attn: error: " << e.what() << '\n';
        return 1;
    }
}
