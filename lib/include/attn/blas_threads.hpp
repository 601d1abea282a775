// BLAS's own threads: attn runs BLAS on one thread inside its own parallel loops, so that
// results do not depend on the thread count. Nothing else about BLAS is here.
#pragma once

namespace attn {

/// Makes BLAS single-threaded for the rest of the process and stops OpenBLAS's server
/// threads, which it starts when it is loaded (one per core but one) and which poll for
/// work with sched_yield for about 2^28 cycles (0.1 s at 2.6 GHz) before they sleep:
/// CPU taken from the first tenth of a second of every run. Once per process (later calls
/// do nothing); the kernels call it before BLAS, and the CLI at its start.
void blas_single_threaded();

} // namespace attn
