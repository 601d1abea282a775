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
// of openblas_set_num_threads would start them again, hence the order below. Weak: an
// OpenBLAS built without threads (Debian's libopenblas0-serial, chosen at run time by
// update-alternatives) has no such function, and then there is nothing to stop.
extern "C" int blas_thread_shutdown_(void) // NOLINT(readability-identifier-naming): its name
    __attribute__((weak));

namespace attn {

void blas_single_threaded() {
    static std::once_flag once;
    std::call_once(once, [] {
        openblas_set_num_threads(1);
        if (&blas_thread_shutdown_ != nullptr) {
            blas_thread_shutdown_();
        }
    });
}

} // namespace attn
