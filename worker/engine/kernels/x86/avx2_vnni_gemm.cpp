// The avx2_vnni table's int8 and int4 products (int4: avx2_int4_tile with vpdpbusd): AVX-VNNI's vpdpbusd on 256-bit registers (VEX-encoded; Intel
// Alder Lake and later, AMD Zen 5) sums four u8 x s8 products into each int32 lane without
// saturation, so the activation needs no shift. Compiled with -mavxvnni; reached only through a
// table that needs avx_vnni. The tiles are avx2's (named accumulators, one noinline function each:
// avx2_gemm_common.hpp says why).
#include "worker/engine/kernels/x86/avx2_gemm_common.hpp"

namespace lf::kernels::detail {

namespace {

/// R rows x 16 columns (2 vectors) of a panel, from column vector v0.
template <int R>
__attribute__((noinline)) void int8_slice(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols,
                                          int m0) {
  const int groups = g.w->k_padded() / 4;
  LF_ROW_POINTERS(std::uint8_t, static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda);
  LF_SLICE_DECLARE(__m256i, _mm256_setzero_si256());
  const std::byte* b = panel + 32 * v0;
  for (int k = 0; k < groups; ++k, b += 256) {
    const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const __m256i a = _mm256_set1_epi32(avx2_load_u32(r##m + 4 * k));                              \
    c##m##0 = _mm256_dpbusd_avx_epi32(c##m##0, a, w0);                                             \
    c##m##1 = _mm256_dpbusd_avx_epi32(c##m##1, a, w1);                                             \
  }
    LF_ROWS(LF_ROW)
#undef LF_ROW
  }
  LF_INT8_SLICE_OUT(false)
}

/// Row 0 across the whole panel (8 vectors), streaming it once in order.
__attribute__((noinline)) void int8_wide(const gemm_panels& g, const std::byte* panel, int col0, int ncols) {
  const int groups = g.w->k_padded() / 4;
  const auto* A = static_cast<const std::uint8_t*>(g.a);
  LF_WIDE_DECLARE(__m256i, _mm256_setzero_si256());
  for (int k = 0; k < groups; ++k) {
    const std::byte* b = panel + static_cast<std::size_t>(k) * 256;
    const __m256i a = _mm256_set1_epi32(avx2_load_u32(A + 4 * k));
#define LF_COL(t) d##t = _mm256_dpbusd_avx_epi32(d##t, a, _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * t)));
    LF_WIDE(LF_COL)
#undef LF_COL
  }
  const __m256i acc[8] = {d0, d1, d2, d3, d4, d5, d6, d7};
  avx2_int8_out<8>(g, 0, col0, 0, ncols, acc, false);
}

/// int4's four u8 x nibble products per lane: vpdpbusd.
struct vnni_dot {
  static __m256i mac(__m256i c, __m256i a, __m256i w) { return _mm256_dpbusd_avx_epi32(c, a, w); }
};

} // namespace

void avx2_vnni_gemm_int4(const gemm_panels& g, int p0, int p1) { avx2_gemm_int4_with<3, vnni_dot>(g, p0, p1); }

void avx2_vnni_gemm_int8(const gemm_panels& g, int p0, int p1) {
  avx2_tiles<6>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    if constexpr (decltype(cv)::value == 8)
      int8_wide(g, panel, col0, ncols);
    else
      int8_slice<decltype(r)::value>(g, panel, col0, v0, ncols, m0);
  });
}

} // namespace lf::kernels::detail
