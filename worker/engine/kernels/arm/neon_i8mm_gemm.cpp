// The neon_i8mm table's int8 and bf16 products and peak probe (Armv8.6 I8MM and BF16: Neoverse
// V1 / N2 and later, Graviton 3, Apple M2 and later).
//
//   int8: usdot sums four u8 x s8 products into each int32 lane: the activation's bytes as they
//         are, the panel's 4-k groups as they are (no shift, no sign trick). smmla would need a
//         2 x 8 interleaved panel; usdot keeps the one layout every table reads.
//   bf16: neon's kernel (two FMAs per pair, the odd element first), not bfdot: bfdot rounds a
//         pair's sum its own way, and every table must give the same bits.
// Compiled with +i8mm+bf16; reached only through a table that needs both.
#include <chrono>

#include "worker/engine/kernels/arm/neon_common.hpp"

namespace lf::kernels::detail {

namespace {

/// usdot on the activation's bytes as they are (u8) and the s8 weights.
struct usdot {
  static constexpr bool shifted = false;
  static uint8x16_t prepare(std::int32_t bits) { return vreinterpretq_u8_s32(vdupq_n_s32(bits)); }
  static int32x4_t mac(int32x4_t acc, uint8x16_t a, int8x16_t w) { return vusdotq_s32(acc, a, w); }
};

} // namespace

void neon_i8mm_gemm_int8(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 16, 4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    neon_int8_dot_tile<decltype(r)::value, decltype(cv)::value, usdot>(g, panel, col0, v0, ncols, m0);
  });
}

/// usdot products per second on this thread (ten independent chains).
void neon_i8mm_probe(double& int8) {
  constexpr long iterations = 4'000'000;
  {
    const uint8x16_t a = vdupq_n_u8(1);
    const int8x16_t b = vdupq_n_s8(2);
    int32x4_t c[10];
    for (auto& x : c)
      x = vdupq_n_s32(0);
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) {
      for (auto& x : c)
        x = vusdotq_s32(x, a, b);
      __asm__ volatile("" : "+w"(c[0]), "+w"(c[1]), "+w"(c[2]), "+w"(c[3]), "+w"(c[4]), "+w"(c[5]), "+w"(c[6]),
                       "+w"(c[7]), "+w"(c[8]), "+w"(c[9]));
    }
    int8 = 10.0 * 16 * iterations / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

} // namespace lf::kernels::detail
