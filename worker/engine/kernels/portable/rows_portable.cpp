// The portable table's row operations (layer norm, tanh-GELU, LoRA rows), its sampler passes and
// its peak probe: plain C++ for the baseline of the architecture.
#include <chrono>
#include <cmath>

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"

LF_DEFINE_SAMPLER_PASSES(portable)

namespace lf::kernels::detail {

void portable_layer_norm(const float* x, float* y, int n, const float* gain, const float* bias, float eps) {
  float sum = 0;
  for (int i = 0; i < n; ++i)
    sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float var = 0;
  for (int i = 0; i < n; ++i)
    var += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i)
    y[i] = (x[i] - mean) * rstd * gain[i] + bias[i];
}

void portable_gelu_tanh(float* x, int n) {
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
}

void portable_lora_row(const float* x, float* y, int in, int rank, int out, const float* a, const float* b,
                       float* t) {
  for (int j = 0; j < rank; ++j) {
    const float* aj = a + static_cast<std::size_t>(j) * in;
    float acc = 0;
    for (int k = 0; k < in; ++k)
      acc += x[k] * aj[k];
    t[j] = acc;
  }
  for (int j = 0; j < rank; ++j) {
    const float v = t[j];
    const float* bj = b + static_cast<std::size_t>(j) * out;
    for (int c = 0; c < out; ++c)
      y[c] += v * bj[c];
  }
}

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
