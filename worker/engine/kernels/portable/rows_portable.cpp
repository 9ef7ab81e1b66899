// The portable table's row operations and sampler passes (the canonical ones, common/) and its peak
// probe: plain C++ for the baseline of the architecture.
#include <chrono>
#include <cmath>

#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"

LF_DEFINE_SAMPLER_PASSES(portable)
LF_DEFINE_CANONICAL_ROWS(portable)

namespace lf::kernels::detail {

thread_peaks portable_peak() {
  // Sixteen independent chains of 4-lane multiply-adds: what the baseline vector unit sustains.
  typedef float f4 __attribute__((vector_size(16)));
  typedef std::int32_t i4 __attribute__((vector_size(16)));
  constexpr long iterations = 2'000'000;
  f4 c[16];
  i4 q[16];
  for (int i = 0; i < 16; ++i) {
    c[i] = f4{1, 1, 1, 1};
    q[i] = i4{1, 1, 1, 1};
  }
  const f4 a = {0.999f, 0.999f, 0.999f, 0.999f}, b = {0.001f, 0.001f, 0.001f, 0.001f};
  const i4 qa = {3, 3, 3, 3}, qb = {1, 1, 1, 1};
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    for (auto& v : c)
      v = v * a + b;
    __asm__ volatile("" : : "g"(&c) : "memory");
  }
  const double f = 16.0 * 4 * iterations / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    for (auto& v : q)
      v = v * qa + qb;
    __asm__ volatile("" : : "g"(&q) : "memory");
  }
  const double n = 16.0 * 4 * iterations / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {f, f, n};  // bf16: widened to f32, one multiply-add per product, as f32
}

} // namespace lf::kernels::detail
