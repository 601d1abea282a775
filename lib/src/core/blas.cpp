// The non-template half of blas.hpp: BLAS's int range and its thread count.
#include "blas.hpp"

#include "attn/blas_threads.hpp"
#include "attn/error.hpp"

#include <climits>
#include <mutex>
#include <string>

namespace attn::detail {

blasint to_blas(std::size_t n) {
    if (n > static_cast<std::size_t>(INT_MAX)) {
        throw InputError("matrix dimension " + std::to_string(n) + " exceeds BLAS's int range");
    }
    return static_cast<blasint>(n);
}

} // namespace attn::detail

// OpenBLAS's (blas_server.c), not in its headers: joins its server threads. A later call
// of openblas_set_num_threads would start them again, hence the order below.
extern "C" int blas_thread_shutdown_(void); // NOLINT(readability-identifier-naming): its name

namespace attn {

void blas_single_threaded() {
    static std::once_flag once;
    std::call_once(once, [] {
        openblas_set_num_threads(1);
        blas_thread_shutdown_();
    });
}

} // namespace attn
