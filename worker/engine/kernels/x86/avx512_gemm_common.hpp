#pragma once
// Private to the AVX-512 kernel translation units (compiled with AVX-512 flags and called only on
// CPUs that have them): the output stage and the panel / row-tile loop they share.

#include <immintrin.h>

#include <algorithm>

#include "worker/engine/kernels/common/family.hpp"

namespace lf::kernels::detail {

/// Columns [col0 + 16 t, ...) valid in a panel with `ncols` valid columns.
inline __mmask16 col_mask(int ncols, int t) noexcept {
  const int left = ncols - 16 * t;
  return left >= 16 ? static_cast<__mmask16>(0xffff) : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
}

/// y[m][col0 ..] = (acc + bias) or y + (acc + bias), for the valid columns of a panel.
inline void store_out(const gemm_panels& g, int m, int col0, int ncols, const __m512 v[4]) {
  float* y = g.y + static_cast<std::size_t>(m) * g.ldy + col0;
  for (int t = 0; t < 4; ++t) {
    const __mmask16 mk = col_mask(ncols, t);
    if (mk == 0)
      break;
    __m512 r = v[t];
    if (g.bias)
      r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, g.bias + col0 + 16 * t));
    if (g.accumulate)
      r = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, y + 16 * t), r);
    _mm512_mask_storeu_ps(y + 16 * t, mk, r);
  }
}

/// Runs `tile<R>(panel, col0, ncols, m0)` over panels [p0, p1) and row tiles of at most MR rows.
template <int MR, class Tile>
inline void for_each_tile(const gemm_panels& g, int p0, int p1, Tile&& tile) {
  for (int p = p0; p < p1; ++p) {
    const int col0 = p * panel_cols;
    const int ncols = std::min(panel_cols, g.w->n() - col0);
    const std::byte* panel = g.w->panel(p);
    if (p + 1 < p1)
      _mm_prefetch(reinterpret_cast<const char*>(g.w->panel(p + 1)), _MM_HINT_T0);
    int m0 = 0;
    for (; m0 + MR <= g.m; m0 += MR)
      tile(std::integral_constant<int, MR>{}, panel, col0, ncols, m0);
    switch (g.m - m0) {
      case 0: break;
      case 1: tile(std::integral_constant<int, 1>{}, panel, col0, ncols, m0); break;
      case 2: if constexpr (MR > 2) tile(std::integral_constant<int, 2>{}, panel, col0, ncols, m0); break;
      case 3: if constexpr (MR > 3) tile(std::integral_constant<int, 3>{}, panel, col0, ncols, m0); break;
      case 4: if constexpr (MR > 4) tile(std::integral_constant<int, 4>{}, panel, col0, ncols, m0); break;
      case 5: if constexpr (MR > 5) tile(std::integral_constant<int, 5>{}, panel, col0, ncols, m0); break;
      default: break;
    }
  }
}

// Named accumulators for a tile of up to six rows x four 16-column vectors: GCC 12 keeps an array
// of vectors that a loop updates in memory (a store per update), so each tile kernel declares
// c<row><t> variables and guards the rows above R with `if constexpr`.
#define LF_TILE_DECLARE(type, zero)                                                                \
  type c00 = zero, c01 = zero, c02 = zero, c03 = zero, c10 = zero, c11 = zero, c12 = zero,        \
       c13 = zero, c20 = zero, c21 = zero, c22 = zero, c23 = zero, c30 = zero, c31 = zero,        \
       c32 = zero, c33 = zero, c40 = zero, c41 = zero, c42 = zero, c43 = zero, c50 = zero,        \
       c51 = zero, c52 = zero, c53 = zero
#define LF_TILE_FOR_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
// Row m of an f32 tile (c<m>0..c<m>3) written out by store_out; LF_TILE_FOR_ROWS(LF_TILE_STORE_F32)
// in a tile kernel with R, g, m0, col0 and ncols in scope.
#define LF_TILE_STORE_F32(m)                                                                       \
  if constexpr (R > m) {                                                                           \
    const __m512 v[4] = {c##m##0, c##m##1, c##m##2, c##m##3};                                      \
    store_out(g, m0 + m, col0, ncols, v);                                                          \
  }

/// Four bytes as one 32-bit lane value (unaligned).
inline int load_u32(const void* p) noexcept {
  int v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

} // namespace lf::kernels::detail
