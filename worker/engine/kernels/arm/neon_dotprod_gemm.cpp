// The neon_dotprod table's int8 product and peak probe: sdot sums four s8 x s8 products into each
// int32 lane, exactly the panel's 4-k groups. The activation is shifted to a' = a - 128 (signed);
// the output stage adds back 128 * colsum. int4 (also the neon_i8mm table's): udot sums four
// u8 activation x nibble (0..15) products per lane as they are, then the block's fold into f32
// (neon_int4_fold). Compiled with +dotprod; reached only through a table that needs it.
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

template <int R, int CV>
void int4_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int blocks = g.w->blocks();
  constexpr int rows_per_block = int4_block / 8;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const float* bs = neon_int4_scales(g, col0, v0);
  const std::int16_t* bsum = neon_int4_sums(g, col0, v0);
  const uint8x16_t low = vdupq_n_u8(0x0f);
  float32x4_t f[R][CV];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      f[m][t] = vdupq_n_f32(0.0f);
  const auto* b = reinterpret_cast<const std::uint8_t*>(panel) + 16 * v0;
  for (int blk = 0; blk < blocks; ++blk) {
    uint32x4_t c[R][CV];
    for (int m = 0; m < R; ++m)
      for (int t = 0; t < CV; ++t)
        c[m][t] = vdupq_n_u32(0);
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
        const uint8x16_t wl = vandq_u8(v, low), wh = vshrq_n_u8(v, 4);
        for (int m = 0; m < R; ++m) {
          c[m][t] = vdotq_u32(c[m][t], a0[m], wl);
          c[m][t] = vdotq_u32(c[m][t], a1[m], wh);
        }
      }
    }
    for (int m = 0; m < R; ++m) {
      int32x4_t acc[CV];
      for (int t = 0; t < CV; ++t)
        acc[t] = vreinterpretq_s32_u32(c[m][t]);
      neon_int4_fold<CV>(g, m0 + m, blk, bs + static_cast<std::size_t>(blk) * panel_cols,
                         bsum + static_cast<std::size_t>(blk) * panel_cols, acc, f[m]);
    }
  }
  for (int m = 0; m < R; ++m)
    neon_int4_out<CV>(g, m0 + m, col0, v0, ncols, f[m]);
}

} // namespace

void neon_dotprod_gemm_int4(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 8, 4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    int4_tile<decltype(r)::value, decltype(cv)::value>(g, panel, col0, v0, ncols, m0);
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
