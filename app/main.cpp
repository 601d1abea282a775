// attn's entry point and its one catch ladder: CLI parse errors and InputError exit 2,
// SystemError, bad_alloc and anything else exit 1. Subcommands live one per file.
#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/io/array.hpp"
#include "attn/kernels.hpp"
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <new>

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
                      << '\n';
            throw CLI::Success();
        },
        "Print the version and exit");
}

const CLI::Validator& positive_count() {
    static const CLI::Validator v(
        [](std::string& text) -> std::string {
            const bool digits = !text.empty() && text.size() <= 9 &&
                                text.find_first_not_of("0123456789") == std::string::npos;
            if (!digits || std::stoul(text) == 0) {
                return "expected a whole number of at least 1, got '" + text + "'";
            }
            return {};
        },
        "COUNT");
    return v;
}

void warn(const std::string& message) {
    std::cerr << "attn: warning: " << message << '\n';
}

} // namespace attn::app

namespace {

int run(int argc, char** argv) {
    CLI::App app{"attn: compute, check and visualise attention "
                 "(softmax(Q·Kᵀ·scale)·V: self, masked, cross, multi-head, grouped-query)",
                 "attn"};
    app.require_subcommand(1);
    app.failure_message([](const CLI::App* a, const CLI::Error& e) {
        std::string msg = "attn: error: " + std::string(e.what());
        if (a != nullptr) {
            msg += " (see '" + a->get_name() + " --help')";
        }
        return msg + "\n";
    });
    attn::app::add_version_flag(app);
    attn::app::add_compute(app);
    attn::app::add_heatmap(app);
    attn::app::add_batch(app);
    attn::app::add_info(app);
    attn::app::add_diff(app);
    attn::app::add_explain(app);

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
    try {
        return run(argc, argv);
    } catch (const attn::InputError& e) {
        std::cerr << "attn: error: " << e.what() << '\n';
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
