// Replays fuzz inputs without libFuzzer (fmt's FMT_FUZZ_LINKMAIN): every file named on the
// command line, and every regular file under every folder named, in sorted order, through
// LLVMFuzzerTestOneInput. A crash or a failed property aborts, which fails the CTest; it is
// how CI runs corpus/ and regressions/ with g++ and in the asan preset. It does not mutate.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// dispatch.cpp, linked beside this file into attn_fuzz, defines it. Not declared weak: in
// the unity build both files are one translation unit, where g++ 12 took the weak
// declaration after the definition for an internal compiler error (or, with the test for
// null, for -Werror=address).
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    LLVMFuzzerInitialize(&argc, &argv);
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        const fs::path arg = argv[i];
        if (fs::is_directory(arg)) {
            for (const fs::directory_entry& e : fs::recursive_directory_iterator(arg)) {
                if (e.is_regular_file()) {
                    files.push_back(e.path());
                }
            }
        } else if (fs::exists(arg)) {
            files.push_back(arg);
        } else {
            std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
            return 2;
        }
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                      std::istreambuf_iterator<char>());
        // An exactly sized heap copy, so that ASan sees any read past the input's end.
        const auto copy = std::make_unique<std::uint8_t[]>(bytes.size() + (bytes.empty() ? 1 : 0));
        if (!bytes.empty()) {
            std::memcpy(copy.get(), bytes.data(), bytes.size());
        }
        std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
        LLVMFuzzerTestOneInput(copy.get(), bytes.size());
    }
    std::fprintf(stderr, "replay: %zu inputs, no failure\n", files.size());
    return 0;
}
