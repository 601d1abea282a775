// The shell completions (bash, zsh, fish) and the man page, written from the CLI11
// definitions themselves so that they never drift from the flags: `attn --completions SHELL`
// and `attn --man` (hidden), run at build time by cmake/attn_shell_files.cmake.
#include "attn/cli/shell_files.hpp"

#include "attn/error.hpp"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace attn::cli {

namespace {

/// What the completions and the man page need of one option.
struct OptionInfo {
    std::vector<std::string> names;   ///< "--query", "-q"
    std::string description;          ///< its first line
    std::string value;                ///< "FILE", "TEXT", ...; empty for a flag
    std::vector<std::string> choices; ///< the values an IsMember option takes
};

/// What they need of one command: the root (name "attn") or a subcommand.
struct CommandInfo {
    std::string name;
    std::string description;
    std::vector<std::string> positionals; ///< "PROBLEM", ...
    std::vector<OptionInfo> options;
};

std::string first_line(const std::string& s) {
    return s.substr(0, s.find('\n'));
}

/// "TEXT:{f32,f64}" -> {f32, f64}.
std::vector<std::string> choices_of(const std::string& type_name) {
    std::vector<std::string> out;
    const auto open = type_name.find('{');
    const auto close = type_name.find('}', open);
    if (open == std::string::npos || close == std::string::npos) {
        return out;
    }
    std::string item;
    for (std::size_t i = open + 1; i <= close; ++i) {
        if (type_name[i] == ',' || i == close) {
            if (!item.empty()) {
                out.push_back(item);
            }
            item.clear();
        } else if (type_name[i] != ' ') {
            item += type_name[i];
        }
    }
    return out;
}

CommandInfo command_info(const CLI::App& app, const std::string& name) {
    CommandInfo c{name, first_line(app.get_description()), {}, {}};
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) { // hidden
            continue;
        }
        if (!o->nonpositional()) {
            c.positionals.push_back(o->get_name(true));
            continue;
        }
        OptionInfo info;
        for (const std::string& l : o->get_lnames()) {
            info.names.push_back("--" + l);
        }
        for (const std::string& s : o->get_snames()) {
            info.names.push_back("-" + s);
        }
        info.description = first_line(o->get_description());
        if (o->get_type_size_min() > 0 && o->get_expected_min() > 0) {
            const std::string type = o->get_type_name();
            info.value = type.empty() ? "VALUE" : type.substr(0, type.find(':'));
            info.choices = choices_of(type);
        }
        c.options.push_back(std::move(info));
    }
    return c;
}

std::vector<CommandInfo> commands_of(const CLI::App& root) {
    std::vector<CommandInfo> out{command_info(root, "")};
    for (const CLI::App* s : root.get_subcommands([](const CLI::App*) { return true; })) {
        out.push_back(command_info(*s, s->get_name()));
    }
    return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
    std::string out;
    for (const std::string& s : v) {
        out += (out.empty() ? "" : sep) + s;
    }
    return out;
}

/// `s` inside single quotes for bash, zsh and fish ('it'\''s').
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (const char c : s) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

std::string bash(const std::vector<CommandInfo>& cmds) {
    std::vector<std::string> names;
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        names.push_back(cmds[i].name);
    }
    std::string s =
        "# bash completion for attn (written by `attn --completions bash`)\n"
        "_attn() {\n"
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "    local cmd= i\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        case \"${COMP_WORDS[i]}\" in\n"
        "            " +
        join(names, "|") +
        ") cmd=\"${COMP_WORDS[i]}\"; break ;;\n"
        "        esac\n"
        "    done\n"
        "    local words values choices\n"
        "    case \"$cmd\" in\n";
    for (const CommandInfo& c : cmds) {
        std::vector<std::string> words = c.name.empty() ? names : std::vector<std::string>{};
        std::vector<std::string> values;
        std::string choices;
        for (const OptionInfo& o : c.options) {
            words.insert(words.end(), o.names.begin(), o.names.end());
            if (!o.value.empty()) {
                values.insert(values.end(), o.names.begin(), o.names.end());
            }
            if (!o.choices.empty()) {
                choices += "                " + join(o.names, "|") +
                           ") choices=" + quoted(join(o.choices, " ")) + " ;;\n";
            }
        }
        if (c.name.empty()) {
            words.emplace_back("help");
        }
        s += "        " + (c.name.empty() ? std::string("''") : c.name) + ")\n" +
             "            words=" + quoted(join(words, " ")) + "\n" +
             "            values=" + quoted(" " + join(values, " ") + " ") + "\n";
        if (!choices.empty()) {
            s += "            case \"$prev\" in\n" + choices + "            esac\n";
        }
        s += "            ;;\n";
    }
    s += "    esac\n"
         "    if [[ -n $choices ]]; then\n"
         "        COMPREPLY=($(compgen -W \"$choices\" -- \"$cur\"))\n"
         "    elif [[ $values == *\" $prev \"* ]]; then\n"
         "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "    elif [[ $cur == -* || -z $cmd ]]; then\n"
         "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "    else\n"
         "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "    fi\n"
         "}\n"
         "complete -o filenames -o bashdefault -F _attn attn\n";
    return s;
}

/// An _arguments spec's description: no brackets, no colons.
std::string zsh_text(std::string s) {
    for (char& c : s) {
        if (c == '[' || c == ']') {
            c = c == '[' ? '(' : ')';
        } else if (c == ':') {
            c = ',';
        }
    }
    return s;
}

std::string zsh(const std::vector<CommandInfo>& cmds) {
    std::string s = "#compdef attn\n# zsh completion for attn (written by `attn --completions "
                    "zsh`)\n_attn() {\n    local -a commands\n    commands=(\n";
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        s += "        " + quoted(cmds[i].name + ":" + zsh_text(cmds[i].description)) + "\n";
    }
    s += "    )\n"
         "    if (( CURRENT == 2 )); then\n"
         "        _describe -t commands 'attn command' commands\n"
         "        _arguments '--help[print help]' '--version[print the version]'\n"
         "        return\n"
         "    fi\n"
         "    local cmd=$words[2]\n"
         "    shift words\n"
         "    (( CURRENT-- ))\n"
         "    case $cmd in\n";
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        s += "        " + cmds[i].name + ")\n            _arguments -s \\\n";
        for (const OptionInfo& o : cmds[i].options) {
            std::string action;
            if (!o.value.empty()) {
                action = ":" + zsh_text(o.value) + ":" +
                         (o.choices.empty() ? "_files" : "(" + join(o.choices, " ") + ")");
            }
            for (const std::string& n : o.names) {
                s += "                " + quoted(n + "[" + zsh_text(o.description) + "]" + action) +
                     " \\\n";
            }
        }
        s += "                '*:file:_files'\n            ;;\n";
    }
    s += "    esac\n}\n_attn \"$@\"\n";
    return s;
}

std::string fish(const std::vector<CommandInfo>& cmds) {
    std::vector<std::string> names;
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        names.push_back(cmds[i].name);
    }
    std::string s = "# fish completion for attn (written by `attn --completions fish`)\n";
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        s += "complete -c attn -f -n '__fish_use_subcommand' -a " + cmds[i].name + " -d " +
             quoted(cmds[i].description) + "\n";
    }
    for (const CommandInfo& c : cmds) {
        const std::string when = c.name.empty() ? "'__fish_use_subcommand'"
                                                : "'__fish_seen_subcommand_from " + c.name + "'";
        for (const OptionInfo& o : c.options) {
            s += "complete -c attn -n " + when;
            for (const std::string& n : o.names) {
                s += (n.size() > 2 && n[1] == '-') ? " -l " + n.substr(2) : " -s " + n.substr(1);
            }
            if (!o.choices.empty()) {
                s += " -x -a " + quoted(join(o.choices, " "));
            } else if (!o.value.empty()) {
                s += " -r -F";
            }
            s += " -d " + quoted(o.description) + "\n";
        }
    }
    return s;
}

std::string
man(const CLI::App& root, const std::vector<CommandInfo>& cmds, std::string_view version) {
    std::string s = ".\\\" The man page of attn, written by `attn --man` from its CLI "
                    "definitions.\n.TH ATTN 1 \"\" \"attn " +
                    std::string(version) +
                    "\" \"User Commands\"\n"
                    ".SH NAME\nattn \\- compute, check and visualise attention\n"
                    ".SH SYNOPSIS\n.B attn\n.I command\n[\\fIoptions\\fR] [\\fIfiles\\fR]\n"
                    ".br\n.B attn\n.BR \\-\\-help \" | \" \\-\\-version\n"
                    ".SH DESCRIPTION\n" +
                    roff(root.get_description()) + "\n";
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        const CommandInfo& c = cmds[i];
        s += ".SH \"attn " + c.name + "\"\n.B attn " + c.name;
        for (const std::string& p : c.positionals) {
            s += " [\\fI" + roff(p) + "\\fR]";
        }
        s += " [\\fIoptions\\fR]\n.PP\n" + roff(c.description) + "\n";
        for (const OptionInfo& o : c.options) {
            s += ".TP\n.B " + roff(join(o.names, ", "));
            if (!o.value.empty()) {
                s += " \" \" \\fI" + roff(o.value) + "\\fR";
            }
            s += "\n" + roff(o.description) + "\n";
        }
    }
    s += ".SH \"EXIT STATUS\"\n0 on success; 2 for bad input (a one-line message names the "
         "culprit); 1 for anything else (an output that cannot be written, out of memory).\n"
         ".SH \"SEE ALSO\"\nThe README.md and docs/ of attn's sources.\n";
    return s;
}

} // namespace

std::string roff(const std::string& text) {
    std::string out;
    for (const char c : text) {
        out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
    }
    if (!out.empty() && (out[0] == '.' || out[0] == '\'')) {
        out.insert(0, "\\&");
    }
    return out;
}

std::string shell_file(const CLI::App& root, const std::string& what, std::string_view version) {
    const std::vector<CommandInfo> cmds = commands_of(root);
    if (what == "bash") {
        return bash(cmds);
    }
    if (what == "zsh") {
        return zsh(cmds);
    }
    if (what == "fish") {
        return fish(cmds);
    }
    if (what == "man") {
        return man(root, cmds, version);
    }
    throw InputError("--completions: expected bash, zsh or fish, got '" + what + "'");
}

} // namespace attn::cli
