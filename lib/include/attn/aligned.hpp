// Buffers whose first element starts a cache line. The kernels load whole vectors (32
// bytes on AVX2, 64 on AVX-512) from their packed operands; std::allocator's large blocks
// start 16 bytes past a page, where every AVX-512 load and every second AVX2 load spans
// two lines. Measured on a Sapphire Rapids Xeon, the stored-type products' packed panels
// (bench_matmul, x [512, 2048] · W [2048, 2048]ᵀ, 1 thread): F32 124–130 -> 139–152
// GFLOPS on AVX-512, 85–87 -> 94–96 on AVX2; BF16 on AMX's tiles 239–257 -> 326–345
// (docs/performance.md).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace attn {

/// The alignment of AlignedVector's storage: a cache line, and a whole AVX-512 vector.
inline constexpr std::size_t kCacheLine = 64;

/// std::allocator with the storage on a cache line.
template <class T> struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() noexcept = default;
    template <class U>
    explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) noexcept {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLine}));
    }
    void deallocate(T* p, std::size_t /*n*/) noexcept {
        ::operator delete (p, std::align_val_t{kCacheLine});
    }
    template <class U> bool operator==(const CacheLineAllocator<U>& /*other*/) const noexcept {
        return true;
    }
};

/// A std::vector whose data() is on a cache line.
template <class T> using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

} // namespace attn
