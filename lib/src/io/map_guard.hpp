// Mapped files that another process may truncate: a read past the file's new end raises
// SIGBUS, which the handler installed here turns into zero pages and a flag that the
// reader checks before it trusts what it read. Shared by MappedFile and its handler only.
#pragma once

#include <cstddef>

namespace attn::io::detail {

/// Registers a mapping [begin, begin + size) with the SIGBUS handler (installed on the
/// first call) and returns its slot, or -1 when every slot is taken (the mapping is then
/// unguarded: a fault in it ends the process as before).
int guard_mapping(const void* begin, std::size_t size);

/// Unregisters a slot from guard_mapping (-1: nothing); before the mapping is unmapped.
void unguard_mapping(int slot);

/// True once a read inside the slot's mapping faulted: the file shrank while mapped, and
/// the pages past its end now read as zeros. False for slot -1.
bool mapping_faulted(int slot);

} // namespace attn::io::detail
