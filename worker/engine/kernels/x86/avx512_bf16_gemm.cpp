// bf16 with avx512_bf16 (vdpbf16ps: bf16 pairs multiplied and summed into f32 lanes). Called only
// when the CPU has avx512_bf16.
#include "worker/engine/kernels/x86/avx512_gemm_common.hpp"

namespace lf::kernels::detail {

namespace {

template <int R>
void bf16_tile(const gemm_panels& g, const std::byte* panel, int col0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 2;
  const auto* A = static_cast<const std::uint16_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  LF_TILE_DECLARE(__m512, _mm512_setzero_ps());
  for (int k = 0; k < groups; ++k) {
    const std::byte* b = panel + static_cast<std::size_t>(k) * 256;
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 64),
                   b2 = (__m512bh)_mm512_load_si512(b + 128), b3 = (__m512bh)_mm512_load_si512(b + 192);
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const __m512bh a =                                                                             \
      (__m512bh)_mm512_set1_epi32(load_u32(A + static_cast<std::size_t>(m) * g.lda + 2 * k));      \
    c##m##0 = _mm512_dpbf16_ps(c##m##0, a, b0);                                                    \
    c##m##1 = _mm512_dpbf16_ps(c##m##1, a, b1);                                                    \
    c##m##2 = _mm512_dpbf16_ps(c##m##2, a, b2);                                                    \
    c##m##3 = _mm512_dpbf16_ps(c##m##3, a, b3);                                                    \
  }
    LF_TILE_FOR_ROWS(LF_ROW)
#undef LF_ROW
  }
  LF_TILE_FOR_ROWS(LF_TILE_STORE_F32)
}

} // namespace

void avx512_bf16_gemm_bf16(const gemm_panels& g, int p0, int p1) {
  for_each_tile<6>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    bf16_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
