// The one fuzz program's entry points: every targets/<name>_fuzz.cpp registers its function
// (ATTN_FUZZ_TARGET), and the program runs the target its name says — the build links
// `<name>_fuzz` to `attn_fuzz` for each — or, started as `attn_fuzz`, the one in
// ATTN_FUZZ_TARGET. One program instead of one per target: each target's own build
// compiled the same headers and linked the same sanitized library again (CI's build and
// clang-tidy paid that 15 times, issue #40).
#include "fuzz_common.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace attn::fuzz {
namespace {

struct Target {
    TargetFunction run = nullptr;
    Setup setup = Setup::none;
};

std::map<std::string, Target>& registry() {
    static std::map<std::string, Target> targets;
    return targets;
}

TargetFunction chosen = nullptr;

/// The target the program was started as: `<name>_fuzz`, or ATTN_FUZZ_TARGET's name.
std::string target_name(const char* argv0) {
    std::string name = std::filesystem::path(argv0 != nullptr ? argv0 : "").filename().string();
    const std::string suffix = "_fuzz";
    if (name != "attn_fuzz" && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return name.substr(0, name.size() - suffix.size());
    }
    const char* env = std::getenv("ATTN_FUZZ_TARGET");
    return env != nullptr ? env : "";
}

} // namespace

bool register_target(const char* name, TargetFunction run, Setup setup) {
    registry()[name] = Target{run, setup};
    return true;
}

} // namespace attn::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    using namespace attn::fuzz;
    const std::string name = target_name(*argc > 0 ? (*argv)[0] : nullptr);
    const auto it = registry().find(name);
    if (it == registry().end()) {
        std::string names;
        for (const auto& [known, target] : registry()) {
            names += (names.empty() ? "" : ", ") + known;
        }
        const std::string which =
            name.empty() ? "no fuzz target named" : "no fuzz target '" + name + "'";
        std::fprintf(stderr,
                     "attn_fuzz: %s: run it as <target>_fuzz or set ATTN_FUZZ_TARGET to one "
                     "of: %s\n",
                     which.c_str(),
                     names.c_str());
        std::exit(2);
    }
    chosen = it->second.run;
    if (it->second.setup == Setup::fixtures) {
        (void)fixture_dir();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return attn::fuzz::chosen(data, size);
}
