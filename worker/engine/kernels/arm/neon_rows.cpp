// The aarch64 tables' row operations and sampler passes (the canonical ones, common/) and peak
// probes (baseline NEON; the dot-product probes live with their kernels, compiled with their flags).
#include <chrono>
#include <cmath>

#include "worker/engine/kernels/arm/neon_common.hpp"
#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"

LF_DEFINE_SAMPLER_PASSES(neon)
LF_DEFINE_CANONICAL_ROWS(neon)

namespace lf::kernels::detail {

double neon_dotprod_probe();
void neon_i8mm_probe(double& int8);

namespace {

constexpr long iterations = 4'000'000;

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double probe_f32() {
  const float32x4_t a = vdupq_n_f32(0.999f), b = vdupq_n_f32(0.001f);
  float32x4_t c[10];
  for (auto& x : c)
    x = vdupq_n_f32(1.0f);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    for (auto& x : c)
      x = vfmaq_f32(b, x, a);
    __asm__ volatile("" : "+w"(c[0]), "+w"(c[1]), "+w"(c[2]), "+w"(c[3]), "+w"(c[4]), "+w"(c[5]), "+w"(c[6]),
                     "+w"(c[7]), "+w"(c[8]), "+w"(c[9]));
  }
  return 10.0 * 4 * iterations / seconds(t0);
}

/// The neon table's int8 sequence per 16 products: smull, smull2, two sadalp.
double probe_int8_widening() {
  const int8x16_t s = vdupq_n_s8(-5);
  int32x4_t c[10];
  for (auto& x : c)
    x = vdupq_n_s32(0);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    for (auto& x : c) {
      const int8x16_t w = vreinterpretq_s8_s32(x);
      x = vpadalq_s16(vpadalq_s16(x, vmull_s8(vget_low_s8(s), vget_low_s8(w))), vmull_high_s8(s, w));
    }
    __asm__ volatile("" : "+w"(c[0]), "+w"(c[1]), "+w"(c[2]), "+w"(c[3]), "+w"(c[4]), "+w"(c[5]), "+w"(c[6]),
                     "+w"(c[7]), "+w"(c[8]), "+w"(c[9]));
  }
  return 10.0 * 16 * iterations / seconds(t0);
}

} // namespace

thread_peaks neon_peak() {
  const double f = probe_f32();
  return {f, f, probe_int8_widening()};  // bf16: widened in registers, two FMAs per pair
}

thread_peaks neon_dotprod_peak() {
  const double f = probe_f32();
  return {f, f, neon_dotprod_probe()};
}

thread_peaks neon_i8mm_peak() {
  double int8 = 0;
  neon_i8mm_probe(int8);
  const double f = probe_f32();
  return {f, f, int8};  // bf16: neon's kernel (bfdot would not give the other tables' bits)
}

} // namespace lf::kernels::detail
