// Fuzz target: the .npz reader (io::npz_members, io::npz_member_bytes: libzip's archive
// parsing and inflation behind our size checks, then io::parse_npy on each member).
// Properties: nothing but InputError escapes, its message is one line; a member's bytes are
// never more than its declared size allows (the memory limit fuzz::set_limits() sets);
// every member that parses round-trips through the NPY writer and reader.
#include "attn/io/npz.hpp"
#include "fuzz_common.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

using namespace attn;

ATTN_FUZZ_TARGET(npz) {
    fuzz::set_limits();
    const std::span<const std::uint8_t> archive(data, size);
    std::vector<std::string> members;
    if (!fuzz::only_input_errors("npz_members",
                                 [&] { members = io::npz_members(archive, "fuzz.npz"); })) {
        return 0;
    }
    // A member that is not there must be refused, whatever the archive holds.
    fuzz::expect(!fuzz::only_input_errors(
                     "npz_member_bytes",
                     [&] { io::npz_member_bytes(archive, "no such member\x01", "fuzz.npz"); }),
                 "a missing member was read");
    for (std::size_t i = 0; i < members.size() && i < 8; ++i) {
        std::vector<std::uint8_t> bytes;
        if (!fuzz::only_input_errors("npz_member_bytes", [&] {
                bytes = io::npz_member_bytes(archive, members[i], "fuzz.npz");
            })) {
            continue;
        }
        io::Array a;
        if (!fuzz::only_input_errors("parse_npy",
                                     [&] { a = io::parse_npy(bytes, "fuzz.npz:member"); })) {
            continue;
        }
        (void)fuzz::expect_npy_round_trip(a, false, "member '" + members[i] + "' NPY round trip");
    }
    return 0;
}
