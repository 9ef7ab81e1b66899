#pragma once
// Private to the aarch64 kernel translation units: the output stage, the loop over panels, row
// tiles and column slices the matrix kernels share, and the vector math of attention and the row
// operations. A panel's group row is 16 vectors of 4 columns (packed_matrix.hpp); a tile is R rows
// x CV column vectors: one row takes WIDE vectors at once, more rows slices of SLICE vectors.
// Every helper has internal linkage: a file compiled with +dotprod or +i8mm keeps its own copy.

#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/packed_matrix.hpp"

namespace lf::kernels::detail {

namespace {

/// y[m][col .. col + 4) = v + bias, or y + (v + bias), for the first `left` columns (left >= 1).
inline void neon_store(const gemm_panels& g, int m, int col, int left, float32x4_t v) {
  float* y = g.y + static_cast<std::size_t>(m) * g.ldy + col;
  if (left >= 4) {
    if (g.bias)
      v = vaddq_f32(v, vld1q_f32(g.bias + col));
    if (g.accumulate)
      v = vaddq_f32(vld1q_f32(y), v);
    vst1q_f32(y, v);
    return;
  }
  float t[4];
  vst1q_f32(t, v);
  for (int c = 0; c < left; ++c) {
    float r = t[c];
    if (g.bias)
      r = r + g.bias[col + c];
    y[c] = g.accumulate ? y[c] + r : r;
  }
}

/// Stores vector `t` of a tile whose first column vector is v0 (skipped past the valid columns).
inline void neon_store_vec(const gemm_panels& g, int m, int col0, int v0, int t, int ncols, float32x4_t v) {
  const int left = ncols - 4 * (v0 + t);
  if (left > 0)
    neon_store(g, m, col0 + 4 * (v0 + t), left, v);
}

/// Calls tile(R, CV, panel, col0, v0, ncols, m0) over panels [p0, p1).
template <int MR, int WIDE, int SLICE, class Tile>
inline void neon_tiles(const gemm_panels& g, int p0, int p1, Tile&& tile) {
  for (int p = p0; p < p1; ++p) {
    const int col0 = p * panel_cols;
    const int ncols = std::min(panel_cols, g.w->n() - col0);
    const int nvec = (ncols + 3) / 4;
    const std::byte* panel = g.w->panel(p);
    if (g.m == 1) {
      for (int v0 = 0; v0 < nvec; v0 += WIDE)
        tile(std::integral_constant<int, 1>{}, std::integral_constant<int, WIDE>{}, panel, col0, v0, ncols, 0);
      continue;
    }
    auto rows = [&](auto r, int m0) {
      for (int v0 = 0; v0 < nvec; v0 += SLICE)
        tile(r, std::integral_constant<int, SLICE>{}, panel, col0, v0, ncols, m0);
    };
    int m0 = 0;
    for (; m0 + MR <= g.m; m0 += MR)
      rows(std::integral_constant<int, MR>{}, m0);
    switch (g.m - m0) {
      case 1: rows(std::integral_constant<int, 1>{}, m0); break;
      case 2: if constexpr (MR > 2) rows(std::integral_constant<int, 2>{}, m0); break;
      case 3: if constexpr (MR > 3) rows(std::integral_constant<int, 3>{}, m0); break;
      default: break;
    }
  }
}

/// Four bytes as one 32-bit lane value (unaligned).
inline std::int32_t neon_load_u32(const void* p) noexcept {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// The int8 output stage of one row and CV column vectors (accumulators of sum(a w), or of
/// sum(a' w) with a' = a - 128 when `shifted`): y = (acc - zp * colsum) * row_scale * col_scale.
template <int CV>
inline void neon_int8_out(const gemm_panels& g, int m, int col0, int v0, int ncols, const int32x4_t* acc,
                          bool shifted) {
  const float* ws = g.w->scales() + col0 + 4 * v0;
  const std::int32_t* cs = g.w->col_sums() + col0 + 4 * v0;
  const int32x4_t vzp = vdupq_n_s32(g.a_zero[m] - (shifted ? 128 : 0));
  const float32x4_t as = vdupq_n_f32(g.a_scale[m]);
  for (int t = 0; t < CV; ++t) {
    const int32x4_t d = vsubq_s32(acc[t], vmulq_s32(vzp, vld1q_s32(cs + 4 * t)));
    const float32x4_t v = vmulq_f32(vcvtq_f32_s32(d), vmulq_f32(as, vld1q_f32(ws + 4 * t)));
    neon_store_vec(g, m, col0, v0, t, ncols, v);
  }
}

/// R rows x CV column vectors of an int8 product with a four-products-per-lane instruction: for
/// each row and 4-k group, Dot::prepare(four activation bytes) once, then Dot::mac(acc, that,
/// weights) per column vector. Dot::shifted says the activation is a' = a - 128. Each family's
/// file supplies its Dot (sdot, usdot), compiled with its own flags.
template <int R, int CV, class Dot>
inline void neon_int8_dot_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 4;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  int32x4_t c[R][CV];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      c[m][t] = vdupq_n_s32(0);
  for (int k = 0; k < groups; ++k) {
    const auto* b = reinterpret_cast<const std::int8_t*>(panel + static_cast<std::size_t>(k) * 256) + 16 * v0;
    int8x16_t w[CV];
    for (int t = 0; t < CV; ++t)
      w[t] = vld1q_s8(b + 16 * t);
    for (int m = 0; m < R; ++m) {
      const auto a = Dot::prepare(neon_load_u32(A + static_cast<std::size_t>(m) * g.lda + 4 * k));
      for (int t = 0; t < CV; ++t)
        c[m][t] = Dot::mac(c[m][t], a, w[t]);
    }
  }
  for (int m = 0; m < R; ++m)
    neon_int8_out<CV>(g, m0 + m, col0, v0, ncols, c[m], Dot::shifted);
}

/// R rows x CV column vectors of an int4 product (packed_matrix.hpp, gemm.hpp). Per block, Dot
/// sums the u8 activations times the nibbles (0..15) exactly: Dot::acc is its accumulator of one
/// column vector, Dot::mac(acc, a0, a1, lo, hi) adds a group row (a0 / a1: the row's four
/// activation bytes of k 8r..8r+3 / 8r+4..8r+7, repeated; lo / hi: the masked and shifted
/// nibbles), Dot::sum(acc) gives the column sums. Then D = sum - 8 * sum a - zp * blocksum goes
/// into the float accumulator with one fused multiply-add, blocks in k order; y = f * row scale.
/// Each family's file supplies its Dot (umull / uadalp, udot).
template <int R, int CV, class Dot>
inline void neon_int4_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int blocks = g.w->blocks();
  constexpr int rows_per_block = int4_block / 8;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const std::size_t meta = static_cast<std::size_t>(col0 / panel_cols) * static_cast<std::size_t>(blocks) * panel_cols
                           + static_cast<std::size_t>(4 * v0);
  const float* bs = g.w->block_scales() + meta;
  const std::int16_t* bsum = g.w->block_sums() + meta;
  const uint8x16_t low = vdupq_n_u8(0x0f);
  float32x4_t f[R][CV];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      f[m][t] = vdupq_n_f32(0.0f);
  const auto* b = reinterpret_cast<const std::uint8_t*>(panel) + 16 * v0;
  for (int blk = 0; blk < blocks; ++blk) {
    typename Dot::acc c[R][CV];
    for (int m = 0; m < R; ++m)
      for (int t = 0; t < CV; ++t)
        c[m][t] = Dot::zero();
    const std::uint8_t* ab = A + static_cast<std::size_t>(blk) * int4_block;
    for (int r = 0; r < rows_per_block; ++r, b += 256) {
      uint8x16_t a0[R], a1[R];
      for (int m = 0; m < R; ++m) {
        const std::uint8_t* a = ab + static_cast<std::size_t>(m) * g.lda + 8 * r;
        a0[m] = vreinterpretq_u8_s32(vdupq_n_s32(neon_load_u32(a)));
        a1[m] = vreinterpretq_u8_s32(vdupq_n_s32(neon_load_u32(a + 4)));
      }
      for (int t = 0; t < CV; ++t) {
        const uint8x16_t v = vld1q_u8(b + 16 * t);
        const uint8x16_t lo = vandq_u8(v, low), hi = vshrq_n_u8(v, 4);
        for (int m = 0; m < R; ++m)
          Dot::mac(c[m][t], a0[m], a1[m], lo, hi);
      }
    }
    const float* sc = bs + static_cast<std::size_t>(blk) * panel_cols;
    const std::int16_t* cs = bsum + static_cast<std::size_t>(blk) * panel_cols;
    for (int m = 0; m < R; ++m) {
      const int32x4_t shift = vdupq_n_s32(8 * g.a_block_sums[static_cast<std::size_t>(m0 + m) * blocks + blk]);
      const int32x4_t zp = vdupq_n_s32(g.a_zero[m0 + m]);
      for (int t = 0; t < CV; ++t) {
        const int32x4_t sums = vmovl_s16(vld1_s16(cs + 4 * t));
        const int32x4_t d = vsubq_s32(vsubq_s32(Dot::sum(c[m][t]), shift), vmulq_s32(zp, sums));
        f[m][t] = vfmaq_f32(f[m][t], vld1q_f32(sc + 4 * t), vcvtq_f32_s32(d));
      }
    }
  }
  for (int m = 0; m < R; ++m) {
    const float32x4_t as = vdupq_n_f32(g.a_scale[m0 + m]);
    for (int t = 0; t < CV; ++t)
      neon_store_vec(g, m0 + m, col0, v0, t, ncols, vmulq_f32(f[m][t], as));
  }
}

} // namespace

} // namespace lf::kernels::detail
