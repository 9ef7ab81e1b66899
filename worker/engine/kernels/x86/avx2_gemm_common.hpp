#pragma once
// Private to the AVX2 kernel translation units (compiled with AVX2 + FMA flags, reached only
// through a table whose needs the CPU meets): the output stage and the loop over panels, row
// tiles and column slices that the matrix kernels share.
//
// A panel's group row is 8 vectors of 8 columns (packed_matrix.hpp). A tile is R rows x CV column
// vectors; the batch's first row takes the whole panel width (CV = 8: the panel is streamed once,
// front to back), the other rows slices of 2 vectors (16 columns) so R rows of accumulators fit
// the 16 registers. The tile shape never changes an output element's order of
// operations, so a row's result does not depend on M.

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/packed_matrix.hpp"

namespace lf::kernels::detail {

/// Lanes [0, left) set (left in 1..7).
inline __m256i avx2_first_lanes(int left) noexcept {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// y[m][col .. col + 8) = v + bias, or y + (v + bias), for the first `left` columns (left >= 1).
inline void avx2_store(const gemm_panels& g, int m, int col, int left, __m256 v) {
  float* y = g.y + static_cast<std::size_t>(m) * g.ldy + col;
  if (left >= 8) {
    if (g.bias)
      v = _mm256_add_ps(v, _mm256_loadu_ps(g.bias + col));
    if (g.accumulate)
      v = _mm256_add_ps(_mm256_loadu_ps(y), v);
    _mm256_storeu_ps(y, v);
    return;
  }
  const __m256i mask = avx2_first_lanes(left);
  if (g.bias)
    v = _mm256_add_ps(v, _mm256_maskload_ps(g.bias + col, mask));
  if (g.accumulate)
    v = _mm256_add_ps(_mm256_maskload_ps(y, mask), v);
  _mm256_maskstore_ps(y, mask, v);
}

/// Stores vector `t` of a tile whose first column vector is v0 (skipped past the valid columns).
inline void avx2_store_vec(const gemm_panels& g, int m, int col0, int v0, int t, int ncols, __m256 v) {
  const int left = ncols - 8 * (v0 + t);
  if (left > 0)
    avx2_store(g, m, col0 + 8 * (v0 + t), left, v);
}

/// Calls tile(R, CV, panel, col0, v0, ncols, m0) (R and CV as integral_constant) over panels
/// [p0, p1): row 0 takes whole panels (CV 8), the rest tiles of MR rows x 2 vectors.
template <int MR, class Tile>
inline void avx2_tiles(const gemm_panels& g, int p0, int p1, Tile&& tile) {
  using wide = std::integral_constant<int, 8>;
  using slice = std::integral_constant<int, 2>;
  for (int p = p0; p < p1; ++p) {
    const int col0 = p * panel_cols;
    const int ncols = std::min(panel_cols, g.w->n() - col0);
    const int nvec = (ncols + 7) / 8;
    const std::byte* panel = g.w->panel(p);
    if (p + 1 < p1)
      _mm_prefetch(reinterpret_cast<const char*>(g.w->panel(p + 1)), _MM_HINT_T0);
    // Row 0 takes the whole panel width: it streams the panel from memory in order, once, and
    // the other rows' slices find it in cache. (Slices alone read one line of every 256-byte
    // group row per pass: a strided pattern that left the f32 LM head at 8 rows at a quarter
    // of the read bandwidth.)
    tile(std::integral_constant<int, 1>{}, wide{}, panel, col0, 0, ncols, 0);
    // While the slices compute, the next panel is fetched into L2 a share per slice, so that
    // the next row 0 does not wait for memory with the vector units idle.
    const char* next = p + 1 < p1 ? reinterpret_cast<const char*>(g.w->panel(p + 1)) : nullptr;
    const auto row_tiles = static_cast<std::size_t>((g.m - 1 + MR - 1) / MR);
    const std::size_t slices = row_tiles * static_cast<std::size_t>((nvec + 1) / 2);
    const std::size_t lines = g.w->panel_bytes() / 64, share = slices ? (lines + slices - 1) / slices : 0;
    std::size_t fetched = 0;
    auto rows = [&](auto r, int m0) {
      for (int v0 = 0; v0 < nvec; v0 += 2) {
        if (next != nullptr)
          for (const auto end = std::min(lines, fetched + share); fetched < end; ++fetched)
            _mm_prefetch(next + 64 * fetched, _MM_HINT_T1);
        tile(r, slice{}, panel, col0, v0, ncols, m0);
      }
    };
    int m0 = 1;
    for (; m0 + MR <= g.m; m0 += MR)
      rows(std::integral_constant<int, MR>{}, m0);
    switch (g.m - m0) {
      case 1: rows(std::integral_constant<int, 1>{}, m0); break;
      case 2: if constexpr (MR > 2) rows(std::integral_constant<int, 2>{}, m0); break;
      case 3: if constexpr (MR > 3) rows(std::integral_constant<int, 3>{}, m0); break;
      case 4: if constexpr (MR > 4) rows(std::integral_constant<int, 4>{}, m0); break;
      case 5: if constexpr (MR > 5) rows(std::integral_constant<int, 5>{}, m0); break;
      default: break;
    }
  }
}

// The tiles' registers, for every AVX2 kernel file. Named accumulators, not arrays: GCC 12 keeps
// an array of vectors that a loop updates partly in memory (a store per update; the avx2_vnni
// kernel's array tile stored 9 of its 12 accumulators every k). Each tile is its own (noinline)
// function: inlined into the panel loop, GCC 12 spilled a weight vector and the row addresses to
// the stack. A slice tile holds c<row><0|1> for up to six rows (guarded by
// `if constexpr (R > row)`); a wide tile (one row, whole panel) d0..d7.
#define LF_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define LF_WIDE(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define LF_SLICE_DECLARE(type, zero)                                                               \
  type c00 = zero, c01 = zero, c10 = zero, c11 = zero, c20 = zero, c21 = zero, c30 = zero,         \
       c31 = zero, c40 = zero, c41 = zero, c50 = zero, c51 = zero
#define LF_WIDE_DECLARE(type, zero)                                                                \
  type d0 = zero, d1 = zero, d2 = zero, d3 = zero, d4 = zero, d5 = zero, d6 = zero, d7 = zero
// Row pointers r0..r5 (rows past R point at row 0 and are never read): GCC otherwise recomputes
// each row's address from values it spills, and runs out of registers for the accumulators.
#define LF_ROW_POINTERS(T, base)                                                                   \
  const T* r0 = (base);                                                                            \
  const T* r1 = r0 + (R > 1 ? g.lda : 0);                                                          \
  const T* r2 = r0 + (R > 2 ? 2 * g.lda : 0);                                                      \
  const T* r3 = r0 + (R > 3 ? 3 * g.lda : 0);                                                      \
  const T* r4 = r0 + (R > 4 ? 4 * g.lda : 0);                                                      \
  const T* r5 = r0 + (R > 5 ? 5 * g.lda : 0);                                                      \
  (void)r1, (void)r2, (void)r3, (void)r4, (void)r5

// Stores an int8 slice tile's rows (c<row>0, c<row>1 for rows below R) through avx2_int8_out;
// `shifted` as there. Used inside a slice tile, where g, m0, col0, v0 and ncols are in scope.
#define LF_INT8_SLICE_OUT_ROW(m, shifted)                                                          \
  if constexpr (R > m) {                                                                           \
    const __m256i acc[2] = {c##m##0, c##m##1};                                                     \
    avx2_int8_out<2>(g, m0 + m, col0, v0, ncols, acc, shifted);                                    \
  }
#define LF_INT8_SLICE_OUT(shifted)                                                                 \
  LF_INT8_SLICE_OUT_ROW(0, shifted) LF_INT8_SLICE_OUT_ROW(1, shifted)                              \
  LF_INT8_SLICE_OUT_ROW(2, shifted) LF_INT8_SLICE_OUT_ROW(3, shifted)                              \
  LF_INT8_SLICE_OUT_ROW(4, shifted) LF_INT8_SLICE_OUT_ROW(5, shifted)

/// Four bytes as one 32-bit lane value (unaligned).
inline int avx2_load_u32(const void* p) noexcept {
  int v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

/// The int8 output stage of one row and CV column vectors: y = (acc - zp * colsum) * row_scale *
/// col_scale, acc given as sum(a' w) with a' = a - 128 (so acc = sum(a w) - 128 * colsum).
template <int CV>
inline void avx2_int8_out(const gemm_panels& g, int m, int col0, int v0, int ncols, const __m256i* acc,
                          bool shifted) {
  const float* ws = g.w->scales() + col0 + 8 * v0;
  const std::int32_t* cs = g.w->col_sums() + col0 + 8 * v0;
  const std::int32_t zp = g.a_zero[m] - (shifted ? 128 : 0);
  const __m256i vzp = _mm256_set1_epi32(zp);
  const __m256 as = _mm256_set1_ps(g.a_scale[m]);
  for (int t = 0; t < CV; ++t) {
    const __m256i d = _mm256_sub_epi32(acc[t], _mm256_mullo_epi32(vzp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cs + 8 * t))));
    const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(as, _mm256_loadu_ps(ws + 8 * t)));
    avx2_store_vec(g, m, col0, v0, t, ncols, v);
  }
}

/// R rows x CV column vectors (from vector v0) of an int4 product (packed_matrix.hpp, gemm.hpp):
/// per block, Dot::mac sums four u8 x nibble products per int32 lane exactly (the nibbles u =
/// q + 8 are 0..15, so u8 x u fits any signed-byte operand); the block's integer
/// D = acc - 8 * sum a - zp * blocksum then goes into the float accumulator with one FMA, blocks
/// in k order. The float accumulators live in a small array (one load and store per block); the
/// integer ones in registers. Dot is file-local in each including file (avx2, avx2_vnni), so each
/// instantiation is its own symbol, compiled with its file's flags.
template <int R, int CV, class Dot>
inline void avx2_int4_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int blocks = g.w->blocks();
  constexpr int rows_per_block = int4_block / 8;
  const std::size_t meta = static_cast<std::size_t>(col0 / panel_cols) * static_cast<std::size_t>(blocks) * panel_cols
                           + static_cast<std::size_t>(8 * v0);
  const float* bs = g.w->block_scales() + meta;
  const std::int16_t* bsum = g.w->block_sums() + meta;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const std::int32_t* asum = g.a_block_sums + static_cast<std::size_t>(m0) * static_cast<std::size_t>(blocks);
  const __m256i low = _mm256_set1_epi8(0x0f);
  alignas(32) float f[R][8 * CV] = {};
  const std::byte* b = panel + 32 * v0;
  for (int blk = 0; blk < blocks; ++blk) {
    __m256i c[R][CV];
    for (int m = 0; m < R; ++m)
      for (int t = 0; t < CV; ++t)
        c[m][t] = _mm256_setzero_si256();
    const std::uint8_t* ab = A + static_cast<std::size_t>(blk) * int4_block;
    for (int r = 0; r < rows_per_block; ++r, b += 256) {
      __m256i a0[R], a1[R];
      for (int m = 0; m < R; ++m) {
        const std::uint8_t* a = ab + static_cast<std::size_t>(m) * g.lda + 8 * r;
        a0[m] = _mm256_set1_epi32(avx2_load_u32(a));
        a1[m] = _mm256_set1_epi32(avx2_load_u32(a + 4));
      }
      for (int t = 0; t < CV; ++t) {
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * t));
        const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        for (int m = 0; m < R; ++m) {
          c[m][t] = Dot::mac(c[m][t], a0[m], lo);
          c[m][t] = Dot::mac(c[m][t], a1[m], hi);
        }
      }
    }
    const float* sc = bs + static_cast<std::size_t>(blk) * panel_cols;
    const std::int16_t* cs = bsum + static_cast<std::size_t>(blk) * panel_cols;
    for (int m = 0; m < R; ++m) {
      const __m256i shift = _mm256_set1_epi32(8 * asum[static_cast<std::size_t>(m) * blocks + blk]);
      const __m256i zp = _mm256_set1_epi32(g.a_zero[m0 + m]);
      for (int t = 0; t < CV; ++t) {
        const __m256i sums = _mm256_cvtepi16_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(cs + 8 * t)));
        const __m256i d = _mm256_sub_epi32(_mm256_sub_epi32(c[m][t], shift), _mm256_mullo_epi32(zp, sums));
        const __m256 acc = _mm256_fmadd_ps(_mm256_load_ps(sc + 8 * t), _mm256_cvtepi32_ps(d), _mm256_load_ps(f[m] + 8 * t));
        _mm256_store_ps(f[m] + 8 * t, acc);
      }
    }
  }
  for (int m = 0; m < R; ++m) {
    const __m256 as = _mm256_set1_ps(g.a_scale[m0 + m]);
    for (int t = 0; t < CV; ++t)
      avx2_store_vec(g, m0 + m, col0, v0, t, ncols, _mm256_mul_ps(_mm256_load_ps(f[m] + 8 * t), as));
  }
}

/// An int4 product over panels [p0, p1) with avx2_int4_tile: row 0 whole panels, the other rows
/// slices of MR rows x 2 vectors (avx2_tiles).
template <int MR, class Dot>
inline void avx2_gemm_int4_with(const gemm_panels& g, int p0, int p1) {
  avx2_tiles<MR>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    avx2_int4_tile<decltype(r)::value, decltype(cv)::value, Dot>(g, panel, col0, v0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
