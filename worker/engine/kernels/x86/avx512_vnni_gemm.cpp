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

/// R rows x one panel (4 vectors of 16 columns) of an int4 product: the integer accumulators of
/// a block in named registers (c<row><t>), the float ones in `f`, read and written once a block.
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
  alignas(64) float f[R][panel_cols] = {};
  const std::byte* b = panel;
  for (int blk = 0; blk < blocks; ++blk) {
    LF_TILE_DECLARE(__m512i, _mm512_setzero_si512());
    const std::uint8_t* ab = A + static_cast<std::size_t>(blk) * int4_block;
    for (int r = 0; r < rows_per_block; ++r, b += 256) {
      const __m512i v0 = _mm512_load_si512(b), v1 = _mm512_load_si512(b + 64), v2 = _mm512_load_si512(b + 128),
                    v3 = _mm512_load_si512(b + 192);
      const __m512i l0 = _mm512_and_si512(v0, low), l1 = _mm512_and_si512(v1, low),
                    l2 = _mm512_and_si512(v2, low), l3 = _mm512_and_si512(v3, low);
      const __m512i h0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), low),
                    h1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), low),
                    h2 = _mm512_and_si512(_mm512_srli_epi16(v2, 4), low),
                    h3 = _mm512_and_si512(_mm512_srli_epi16(v3, 4), low);
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const std::uint8_t* a = ab + static_cast<std::size_t>(m) * g.lda + 8 * r;                      \
    const __m512i a0 = _mm512_set1_epi32(load_u32(a)), a1 = _mm512_set1_epi32(load_u32(a + 4));    \
    c##m##0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(c##m##0, a0, l0), a1, h0);                   \
    c##m##1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(c##m##1, a0, l1), a1, h1);                   \
    c##m##2 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(c##m##2, a0, l2), a1, h2);                   \
    c##m##3 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(c##m##3, a0, l3), a1, h3);                   \
  }
      if constexpr (R == 1) {
        // One row (decode at batch 1): the read binds, so the panel is fetched 16 KiB ahead; the
        // high nibbles go into row 1's idle accumulators, so no vpdpbusd waits for another; the
        // integer sums are added before the fold (exact).
        for (int l = 0; l < 256; l += 64)
          _mm_prefetch(reinterpret_cast<const char*>(b) + 16384 + l, _MM_HINT_T0);
        const __m512i a0 = _mm512_set1_epi32(load_u32(ab + 8 * r)), a1 = _mm512_set1_epi32(load_u32(ab + 8 * r + 4));
        c00 = _mm512_dpbusd_epi32(c00, a0, l0);
        c01 = _mm512_dpbusd_epi32(c01, a0, l1);
        c02 = _mm512_dpbusd_epi32(c02, a0, l2);
        c03 = _mm512_dpbusd_epi32(c03, a0, l3);
        c10 = _mm512_dpbusd_epi32(c10, a1, h0);
        c11 = _mm512_dpbusd_epi32(c11, a1, h1);
        c12 = _mm512_dpbusd_epi32(c12, a1, h2);
        c13 = _mm512_dpbusd_epi32(c13, a1, h3);
      } else {
        LF_TILE_FOR_ROWS(LF_ROW)
      }
#undef LF_ROW
    }
    if constexpr (R == 1) {
      c00 = _mm512_add_epi32(c00, c10);
      c01 = _mm512_add_epi32(c01, c11);
      c02 = _mm512_add_epi32(c02, c12);
      c03 = _mm512_add_epi32(c03, c13);
    }
    const float* sc = bs + static_cast<std::size_t>(blk) * panel_cols;
    const std::int16_t* cs = bsum + static_cast<std::size_t>(blk) * panel_cols;
    // D = acc - 8 * sum a - zp * blocksum, exact; then f = fma(scale, D, f). (Each accumulator by
    // value: an array of them made GCC 12 store every one to the stack inside the k loop.)
    auto fold = [&](int m, int t, __m512i c) {
      const __m512i shift = _mm512_set1_epi32(8 * asum[static_cast<std::size_t>(m) * blocks + blk]);
      const __m512i zp = _mm512_set1_epi32(g.a_zero[m0 + m]);
      const __m512i sums = _mm512_cvtepi16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(cs + 16 * t)));
      const __m512i d = _mm512_sub_epi32(_mm512_sub_epi32(c, shift), _mm512_mullo_epi32(zp, sums));
      _mm512_store_ps(f[m] + 16 * t,
                      _mm512_fmadd_ps(_mm512_load_ps(sc + 16 * t), _mm512_cvtepi32_ps(d), _mm512_load_ps(f[m] + 16 * t)));
    };
#define LF_FOLD(m)                                                                                 \
  if constexpr (R > m) {                                                                           \
    fold(m, 0, c##m##0);                                                                           \
    fold(m, 1, c##m##1);                                                                           \
    fold(m, 2, c##m##2);                                                                           \
    fold(m, 3, c##m##3);                                                                           \
  }
    LF_TILE_FOR_ROWS(LF_FOLD)
#undef LF_FOLD
  }
  for (int m = 0; m < R; ++m) {
    const __m512 as = _mm512_set1_ps(g.a_scale[m0 + m]);
    __m512 v[4];
    for (int t = 0; t < 4; ++t)
      v[t] = _mm512_mul_ps(_mm512_load_ps(f[m] + 16 * t), as);
    store_out(g, m0 + m, col0, ncols, v);
  }
}

} // namespace

void avx512_vnni_gemm_int4(const gemm_panels& g, int p0, int p1) {
  // Four rows share each unpacked weight vector (16 integer accumulators in registers; the float
  // ones, touched once a block, may live on the stack).
  for_each_tile<4>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    int4_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

void avx512_vnni_gemm_int8(const gemm_panels& g, int p0, int p1) {
  for_each_tile<6>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    int8_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
