// The BF16 pair products on AMX-BF16 tiles: y's 32 x 32 blocks as four 16 x 16 float32
// tiles (tmm0-3), two tiles of 16 activation rows x 16 pairs (tmm4-5) and two of 16 pairs x
// 16 weight rows (tmm6-7, the packed panel's layout as it is: one weight row a lane), four
// TDPBF16PS per block of 16 pairs. Tiles of y that reach past its rows or columns go through
// a scratch tile; the activations and the panel are padded by the driver (matmul_bf16.cpp),
// so every tile load reads memory of the call.
#include "model/matmul_amx.hpp"

#include "attn/cpuid.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#if defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ATTN_AMX 1
#endif

namespace attn::model::detail {

#ifdef ATTN_AMX
namespace {

constexpr int kAmxArchPerm = 0x1023;      // Linux's arch_prctl code (asm/prctl.h)
constexpr int kAmxXtiledata = 18;         // the tile data state's XSAVE feature number
constexpr std::size_t kAmxTile = 16;      // rows of every tile, float32 columns of y's
constexpr std::size_t kAmxTileBytes = 64; // bytes of a tile's row

/// The tile configuration (ldtilecfg's 64 bytes, palette 1): all eight tiles 16 rows of 64
/// bytes.
struct AmxTileConfig {
    std::uint8_t palette = 1;
    std::uint8_t start_row = 0;
    std::array<std::uint8_t, 14> reserved{};
    std::array<std::uint16_t, 16> colsb{};
    std::array<std::uint8_t, 16> rows{};
};

/// One of a block's four y tiles: loaded from and stored to `at` (`stride` bytes a row):
/// y itself where all 16 x 16 lie in y, else `scratch`, whose `rows` x `cols` part that
/// does is copied in from `corner` (when accumulating) and back.
struct AmxYTile {
    float* at = nullptr;
    std::size_t stride = 0;
    bool scratch = false;
    float* corner = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;
};

using AmxScratch = std::array<float, kAmxTile * kAmxTile>;

AmxYTile amx_y_tile(const DotBf16Args& a, std::size_t r, std::size_t c, AmxScratch& scratch) {
    const std::size_t rows = r < a.n ? std::min(kAmxTile, a.n - r) : 0;
    const std::size_t cols = c < a.m ? std::min(kAmxTile, a.m - c) : 0;
    if (rows == kAmxTile && cols == kAmxTile) {
        return {.at = a.y + r * a.ldy + c, .stride = a.ldy * sizeof(float)};
    }
    scratch.fill(0.0F);
    AmxYTile t{
        .at = scratch.data(), .stride = kAmxTileBytes, .scratch = true, .rows = rows, .cols = cols};
    if (rows > 0 && cols > 0) {
        t.corner = a.y + r * a.ldy + c;
        for (std::size_t i = 0; a.accumulate && i < rows; ++i) {
            std::copy_n(t.corner + i * a.ldy, cols, scratch.data() + i * kAmxTile);
        }
    }
    return t;
}

void amx_copy_back(const AmxYTile& t, std::size_t ldy) {
    for (std::size_t i = 0; t.corner != nullptr && i < t.rows; ++i) {
        std::copy_n(t.at + i * kAmxTile, t.cols, t.corner + i * ldy);
    }
}

/// The block of y's rows r .. r + 32 and columns c .. c + 32 over the call's pairs
/// (`pairs` a multiple of 16). The tile numbers are immediates: no loop over the tiles.
__attribute__((target("amx-tile,amx-bf16"))) void amx_block(const DotBf16Args& a,
                                                            std::size_t r,
                                                            std::size_t c,
                                                            std::size_t pairs,
                                                            const std::array<AmxYTile, 4>& t) {
    // A scratch tile holds zeros or y's part; y itself is read only when accumulating.
    if (a.accumulate || t[0].scratch) {
        _tile_loadd(0, t[0].at, t[0].stride);
    } else {
        _tile_zero(0);
    }
    if (a.accumulate || t[1].scratch) {
        _tile_loadd(1, t[1].at, t[1].stride);
    } else {
        _tile_zero(1);
    }
    if (a.accumulate || t[2].scratch) {
        _tile_loadd(2, t[2].at, t[2].stride);
    } else {
        _tile_zero(2);
    }
    if (a.accumulate || t[3].scratch) {
        _tile_loadd(3, t[3].at, t[3].stride);
    } else {
        _tile_zero(3);
    }
    const std::uint32_t* x0 = a.x + r * a.ldx;
    const std::uint32_t* x1 = x0 + kAmxTile * a.ldx;
    const std::size_t x_stride = a.ldx * sizeof(std::uint32_t);
    const std::uint32_t* w0 = a.w + c;
    const std::uint32_t* w1 = w0 + kAmxTile;
    constexpr std::size_t kWStride = kPanelRows * sizeof(std::uint32_t);
    for (std::size_t p = 0; p < pairs; p += kAmxBlockPairs) {
        _tile_loadd(4, x0 + p, x_stride);
        _tile_loadd(5, x1 + p, x_stride);
        _tile_loadd(6, w0 + p * kPanelRows, kWStride);
        _tile_loadd(7, w1 + p * kPanelRows, kWStride);
        _tile_dpbf16ps(0, 4, 6); // rows r, columns c
        _tile_dpbf16ps(1, 4, 7); // rows r, columns c + 16
        _tile_dpbf16ps(2, 5, 6); // rows r + 16, columns c
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, t[0].at, t[0].stride);
    _tile_stored(1, t[1].at, t[1].stride);
    _tile_stored(2, t[2].at, t[2].stride);
    _tile_stored(3, t[3].at, t[3].stride);
}

__attribute__((target("amx-tile,amx-bf16"))) void amx_products(const DotBf16Args& a) {
    AmxTileConfig config;
    for (std::size_t i = 0; i < 8; ++i) {
        config.colsb[i] = kAmxTileBytes;
        config.rows[i] = kAmxTile;
    }
    _tile_loadconfig(&config);
    const std::size_t pairs = round_up(a.pairs, kAmxBlockPairs);
    std::array<AmxScratch, 4> scratch{};
    for (std::size_t c = 0; c < a.m; c += 2 * kAmxTile) {
        for (std::size_t r = 0; r < a.n; r += 2 * kAmxTile) {
            const std::array<AmxYTile, 4> t = {
                amx_y_tile(a, r, c, scratch[0]),
                amx_y_tile(a, r, c + kAmxTile, scratch[1]),
                amx_y_tile(a, r + kAmxTile, c, scratch[2]),
                amx_y_tile(a, r + kAmxTile, c + kAmxTile, scratch[3])};
            amx_block(a, r, c, pairs, t);
            for (const AmxYTile& tile : t) {
                amx_copy_back(tile, a.ldy);
            }
        }
    }
    _tile_release();
}

} // namespace

bool amx_bf16_ready() {
    static const bool ready = [] {
        const unsigned edx = attn::detail::cpuid(7, 0)[3];
        if ((edx & (1U << 24U)) == 0 || (edx & (1U << 22U)) == 0) {
            return false;
        }
        return syscall(SYS_arch_prctl, kAmxArchPerm, kAmxXtiledata) == 0;
    }();
    return ready;
}

void amx_dot_bf16(const DotBf16Args& args) {
    amx_products(args);
}

#else

bool amx_bf16_ready() {
    return false;
}

void amx_dot_bf16(const DotBf16Args& /*args*/) {}

#endif

} // namespace attn::model::detail
