// W8A8 int8 with AVX-512 VNNI (vpdpbusd: u8 x s8, four products summed into each int32 lane).
// Called only when the CPU has avx512_vnni.
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

} // namespace

void avx512_vnni_gemm_int8(const gemm_panels& g, int p0, int p1) {
  for_each_tile<6>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    int8_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
