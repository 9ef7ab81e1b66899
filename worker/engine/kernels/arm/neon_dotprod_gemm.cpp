// The neon_dotprod table's int8 product and peak probe: sdot sums four s8 x s8 products into each
// int32 lane, exactly the panel's 4-k groups. The activation is shifted to a' = a - 128 (signed);
// the output stage adds back 128 * colsum. int4 (also the neon_i8mm table's): udot sums four
// u8 activation x nibble (0..15) products per lane as they are, then the block's fold into f32
// (neon_int4_tile). Compiled with +dotprod; reached only through a table that needs it.
#include <chrono>

#include "worker/engine/kernels/arm/neon_common.hpp"

namespace lf::kernels::detail {

namespace {

/// sdot on a' = a - 128 (signed) and the s8 weights.
struct sdot {
  static constexpr bool shifted = true;
  static int8x16_t prepare(std::int32_t bits) {
    return vreinterpretq_s8_s32(vdupq_n_s32(bits ^ static_cast<std::int32_t>(0x80808080u)));
  }
  static int32x4_t mac(int32x4_t acc, int8x16_t a, int8x16_t w) { return vdotq_s32(acc, w, a); }
};

/// int4's exact sums with udot: four u8 activation x nibble products per lane.
struct udot {
  using acc = uint32x4_t;
  static acc zero() { return vdupq_n_u32(0); }
  static void mac(acc& c, uint8x16_t a0, uint8x16_t a1, uint8x16_t lo, uint8x16_t hi) {
    c = vdotq_u32(vdotq_u32(c, a0, lo), a1, hi);
  }
  static int32x4_t sum(const acc& c) { return vreinterpretq_s32_u32(c); }
};

} // namespace

void neon_dotprod_gemm_int4(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 8, 4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    neon_int4_tile<decltype(r)::value, decltype(cv)::value, udot>(g, panel, col0, v0, ncols, m0);
  });
}

void neon_dotprod_gemm_int8(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 16, 4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    neon_int8_dot_tile<decltype(r)::value, decltype(cv)::value, sdot>(g, panel, col0, v0, ncols, m0);
  });
}

/// sdot products per second on this thread (ten independent chains).
double neon_dotprod_probe() {
  constexpr long iterations = 4'000'000;
  const int8x16_t a = vdupq_n_s8(1), b = vdupq_n_s8(2);
  int32x4_t c[10];
  for (auto& x : c)
    x = vdupq_n_s32(0);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    for (auto& x : c)
      x = vdotq_s32(x, a, b);
    __asm__ volatile("" : "+w"(c[0]), "+w"(c[1]), "+w"(c[2]), "+w"(c[3]), "+w"(c[4]), "+w"(c[5]), "+w"(c[6]),
                     "+w"(c[7]), "+w"(c[8]), "+w"(c[9]));
  }
  return 10.0 * 16 * iterations / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace lf::kernels::detail
