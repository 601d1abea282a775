// The Highway targets attn's SIMD sources (core/kernel_ops_hwy.cpp, model/matmul_hwy.cpp,
// render/cell_pass_hwy.cpp) are compiled for, set before hwy/foreach_target.h: every
// target the compiler can emit, not only those above the baseline (-march), the scalar
// fallback included, so it is there to test and to name on every architecture; AVX3_DL
// (Ice Lake and later, Zen 4 and later) is compiled only on request. The same set in
// each, so attn::simd_supported() names the targets any of them dispatches to. Macros only.
#pragma once

#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE 1
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL 1
#endif
// Arm: NEON only. SVE's vectors are sizeless types, which C++ does not allow as members of
// a struct, and the score pipeline passes its steps in structs of vectors (ScoreSteps,
// BaseStep in core/kernel_score-inl.h): the SVE passes do not compile. (A macro of
// Highway's target bits, expanded where Highway has defined them.)
#if defined(__aarch64__) && !defined(HWY_DISABLED_TARGETS)
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
