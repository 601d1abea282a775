// One translation unit of a layering probe (tests/layering/CMakeLists.txt): it includes
// ATTN_PROBE_HEADER with exactly the include path a layer's own sources get. An upward
// include must fail to compile; a header of the layer itself or of a layer below must not.
#include ATTN_PROBE_HEADER

int main() {
    return 0;
}
