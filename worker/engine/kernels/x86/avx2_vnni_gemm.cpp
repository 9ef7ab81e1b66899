// The avx2_vnni table's int8 product: AVX-VNNI's vpdpbusd on 256-bit registers (VEX-encoded; Intel
// Alder Lake and later, AMD Zen 5) sums four u8 x s8 products into each int32 lane without
// saturation, so the activation needs no shift. Compiled with -mavxvnni; reached only through a
// table that needs avx_vnni.
#include "worker/engine/kernels/x86/avx2_gemm_common.hpp"

namespace lf::kernels::detail {

namespace {

template <int R, int CV>
void int8_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 4;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  __m256i c[R][CV];
#pragma GCC unroll 8
  for (int m = 0; m < R; ++m)
#pragma GCC unroll 8
    for (int t = 0; t < CV; ++t)
      c[m][t] = _mm256_setzero_si256();
  for (int k = 0; k < groups; ++k) {
    const std::byte* b = panel + static_cast<std::size_t>(k) * 256 + 32 * v0;
    __m256i w[CV];
#pragma GCC unroll 8
    for (int t = 0; t < CV; ++t)
      w[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * t));
#pragma GCC unroll 8
    for (int m = 0; m < R; ++m) {
      const __m256i a = _mm256_set1_epi32(avx2_load_u32(A + static_cast<std::size_t>(m) * g.lda + 4 * k));
#pragma GCC unroll 8
      for (int t = 0; t < CV; ++t)
        c[m][t] = _mm256_dpbusd_avx_epi32(c[m][t], a, w[t]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < R; ++m)
    avx2_int8_out<CV>(g, m0 + m, col0, v0, ncols, c[m], false);
}

} // namespace

void avx2_vnni_gemm_int8(const gemm_panels& g, int p0, int p1) {
  avx2_tiles<6>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    int8_tile<decltype(r)::value, decltype(cv)::value>(g, panel, col0, v0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
