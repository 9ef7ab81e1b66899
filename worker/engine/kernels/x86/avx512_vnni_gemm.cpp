// W8A8 int8 and W4A8 int4 with AVX-512 VNNI (vpdpbusd: u8 x s8, four products summed into each
// int32 lane). int4: a 64-byte load of a group row holds 16 columns x 8 k; masked with 0x0f it
// is int8's layout of the first 4 k, shifted right by 4 that of the next 4, and vpdpbusd takes
// the nibbles u = q + 8 (0..15) as they are; the block's output stage subtracts 8 * sum a and
// zp * blocksum (gemm.hpp). Called only when the CPU has avx512_vnni.
#include "worker/engine/kernels/x86/avx512_gemm_common.hpp"

namespace lf::kernels::detail {

namespace {

template <int R>
void int8_tile(const gemm_panels& g, const std::byte* panel, int col0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 4;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  LF_TILE_DECLARE(__m512i, _mm512_setzero_si512());
  for (int k = 0; k < groups; ++k) {
    const std::byte* b = panel + static_cast<std::size_t>(k) * 256;
    const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64),
                  b2 = _mm512_load_si512(b + 128), b3 = _mm512_load_si512(b + 192);
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const __m512i a = _mm512_set1_epi32(load_u32(A + static_cast<std::size_t>(m) * g.lda + 4 * k)); \
    c##m##0 = _mm512_dpbusd_epi32(c##m##0, a, b0);                                                 \
    c##m##1 = _mm512_dpbusd_epi32(c##m##1, a, b1);                                                 \
    c##m##2 = _mm512_dpbusd_epi32(c##m##2, a, b2);                                                 \
    c##m##3 = _mm512_dpbusd_epi32(c##m##3, a, b3);                                                 \
  }
    LF_TILE_FOR_ROWS(LF_ROW)
#undef LF_ROW
  }
  const float* ws = g.w->scales() + col0;
  const std::int32_t* cs = g.w->col_sums() + col0;
  auto out = [&](int m, const __m512i (&c)[4]) {
    const __m512i zp = _mm512_set1_epi32(g.a_zero[m0 + m]);
    const __m512 as = _mm512_set1_ps(g.a_scale[m0 + m]);
    __m512 v[4];
    for (int t = 0; t < 4; ++t) {
      const __m512i d = _mm512_sub_epi32(c[t], _mm512_mullo_epi32(zp, _mm512_load_si512(cs + 16 * t)));
      v[t] = _mm512_mul_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(as, _mm512_load_ps(ws + 16 * t)));
    }
    store_out(g, m0 + m, col0, ncols, v);
  };
#define LF_OUT(m)                                                                                  \
  if constexpr (R > m)                                                                             \
    out(m, {c##m##0, c##m##1, c##m##2, c##m##3});
  LF_TILE_FOR_ROWS(LF_OUT)
#undef LF_OUT
}

/// R rows x one panel (4 vectors of 16 columns) of an int4 product.
template <int R>
void int4_tile(const gemm_panels& g, const std::byte* panel, int col0, int ncols, int m0) {
  const int blocks = g.w->blocks();
  constexpr int rows_per_block = int4_block / 8;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const std::size_t meta = static_cast<std::size_t>(col0 / panel_cols) * static_cast<std::size_t>(blocks) * panel_cols;
  const float* bs = g.w->block_scales() + meta;
  const std::int16_t* bsum = g.w->block_sums() + meta;
  const std::int32_t* asum = g.a_block_sums + static_cast<std::size_t>(m0) * static_cast<std::size_t>(blocks);
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512 f[R][4];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < 4; ++t)
      f[m][t] = _mm512_setzero_ps();
  const std::byte* b = panel;
  for (int blk = 0; blk < blocks; ++blk) {
    __m512i c[R][4];
    for (int m = 0; m < R; ++m)
      for (int t = 0; t < 4; ++t)
        c[m][t] = _mm512_setzero_si512();
    const std::uint8_t* ab = A + static_cast<std::size_t>(blk) * int4_block;
    for (int r = 0; r < rows_per_block; ++r, b += 256) {
      __m512i lo[4], hi[4];
      for (int t = 0; t < 4; ++t) {
        const __m512i v = _mm512_load_si512(b + 64 * t);
        lo[t] = _mm512_and_si512(v, low);
        hi[t] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
      }
#pragma GCC unroll 4
      for (int m = 0; m < R; ++m) {
        const std::uint8_t* a = ab + static_cast<std::size_t>(m) * g.lda + 8 * r;
        const __m512i a0 = _mm512_set1_epi32(load_u32(a)), a1 = _mm512_set1_epi32(load_u32(a + 4));
        for (int t = 0; t < 4; ++t) {
          c[m][t] = _mm512_dpbusd_epi32(c[m][t], a0, lo[t]);
          c[m][t] = _mm512_dpbusd_epi32(c[m][t], a1, hi[t]);
        }
      }
    }
    const float* sc = bs + static_cast<std::size_t>(blk) * panel_cols;
    const std::int16_t* cs = bsum + static_cast<std::size_t>(blk) * panel_cols;
#pragma GCC unroll 4
    for (int m = 0; m < R; ++m) {
      const __m512i shift = _mm512_set1_epi32(8 * asum[static_cast<std::size_t>(m) * blocks + blk]);
      const __m512i zp = _mm512_set1_epi32(g.a_zero[m0 + m]);
      for (int t = 0; t < 4; ++t) {
        const __m512i sums = _mm512_cvtepi16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(cs + 16 * t)));
        const __m512i d = _mm512_sub_epi32(_mm512_sub_epi32(c[m][t], shift), _mm512_mullo_epi32(zp, sums));
        f[m][t] = _mm512_fmadd_ps(_mm512_load_ps(sc + 16 * t), _mm512_cvtepi32_ps(d), f[m][t]);
      }
    }
  }
  for (int m = 0; m < R; ++m) {
    const __m512 as = _mm512_set1_ps(g.a_scale[m0 + m]);
    __m512 v[4];
    for (int t = 0; t < 4; ++t)
      v[t] = _mm512_mul_ps(f[m][t], as);
    store_out(g, m0 + m, col0, ncols, v);
  }
}

} // namespace

void avx512_vnni_gemm_int4(const gemm_panels& g, int p0, int p1) {
  for_each_tile<2>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    int4_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

void avx512_vnni_gemm_int8(const gemm_panels& g, int p0, int p1) {
  for_each_tile<6>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    int8_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
