// One translation unit of a layering probe (tests/layering/CMakeLists.txt): it includes
// ATTN_PROBE_HEADER with exactly the include path a layer's own sources get. An upward
// include must fail to compile; a header of the layer itself or of a layer below must not.
// (The tests always define it; the compile database's entry for this file does not, and
// clang-tidy reads that entry.)
#ifdef ATTN_PROBE_HEADER
#include ATTN_PROBE_HEADER
#endif

int main() {
    return 0;
}
