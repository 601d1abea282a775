// Checks and messages of the command line: see attn/cli/flags.hpp.
#include "attn/cli/flags.hpp"

#include "attn/io/number_text.hpp"
#include "attn/suggest.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace attn::cli {

namespace {

/// The command being parsed: the last subcommand CLI11 selected, or the root.
const CLI::App& parsed_app(const CLI::App& root) {
    const auto parsed = root.get_subcommands();
    return parsed.empty() ? root : *parsed.back();
}

/// "attn" or "attn compute": the command whose --help answers a parse error.
std::string command_of(const CLI::App& root) {
    const auto parsed = root.get_subcommands();
    return parsed.empty() ? root.get_name() : root.get_name() + " " + parsed.back()->get_name();
}

} // namespace

std::string flag_of(std::string_view field) {
    // The options whose flag is not their field's name.
    static const std::pair<std::string_view, std::string_view> renamed[] = {
        {"colormap", "--cmap"},
        {"annotate=False", "--no-annotate"},
        {"query_tokens", "--ylabels"},
        {"key_tokens", "--xlabels"},
        {"num_heads", "--heads"},
        {"key_padding_mask", "--key-padding"},
    };
    for (const auto& [name, flag] : renamed) {
        if (name == field) {
            return std::string(flag);
        }
    }
    std::string flag = "--" + std::string(field);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

std::string with_flags(std::string_view marked) {
    return spell_options(marked, flag_of);
}

std::string error_text(const InputError& e) {
    return with_flags(e.marked());
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

const CLI::Validator& precision_name() {
    static const CLI::Validator v = CLI::IsMember({"f32", "f64"});
    return v;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
        names.push_back(s->get_name());
    }
    return names;
}

std::string flag_suggestion(const CLI::App& app) {
    std::vector<std::string> flags{"--help"};
    for (const CLI::Option* o : app.get_options()) {
        for (const std::string& n : o->get_lnames()) {
            flags.push_back("--" + n);
        }
    }
    for (const std::string& extra : app.remaining(true)) {
        if (extra.size() > 2 && extra.compare(0, 2, "--") == 0) {
            const std::string word = extra.substr(0, extra.find('='));
            std::string hint = did_you_mean(word, flags);
            if (!hint.empty()) {
                return hint;
            }
        }
    }
    return {};
}

std::string parse_error_text(const CLI::App* root, const CLI::Error& e) {
    std::string msg = "attn: error: " + std::string(e.what());
    if (root != nullptr) {
        if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
            msg += flag_suggestion(parsed_app(*root));
        }
        msg += " (see '" + command_of(*root) + " --help')";
    }
    return msg + "\n";
}

InputError unknown_command(const CLI::App& root, const std::string& word) {
    return InputError("unknown command '" + io::message_text(word) + "'" +
                      did_you_mean(word, subcommand_names(root)) + " (see '" + root.get_name() +
                      " --help')");
}

} // namespace attn::cli
