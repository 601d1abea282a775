// A hint for large buffers the kernels fill once: back them with transparent huge pages.
#pragma once

#include <cstddef>

namespace attn::detail {

/// Asks the OS to back the whole pages inside [p, p + bytes) with transparent huge pages
/// (Linux `madvise(MADV_HUGEPAGE)`; THP's default "madvise" mode needs this per range).
/// Call it before the buffer is first written. The attention weights are B·H·Lq·Lk
/// floats (512 MB at L = 4096, H = 8) written once: in 4 KB pages their first touch is
/// 131072 page faults and freeing them as many unmaps, about as much CPU time as both
/// GEMMs; in 2 MB pages, 256. Only a hint: no effect below 4 MB, where the call is not
/// worth it, off Linux, or when the kernel refuses, and never an error.
void advise_huge_pages(void* p, std::size_t bytes);

} // namespace attn::detail
