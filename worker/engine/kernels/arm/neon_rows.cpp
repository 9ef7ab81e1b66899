// The aarch64 tables' row operations (layer norm, tanh-GELU, LoRA rows), sampler passes and peak
// probes (baseline NEON; the dot-product probes live with their kernels, compiled with their flags).
#include <chrono>
#include <cmath>

#include "worker/engine/kernels/arm/neon_common.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"

LF_DEFINE_SAMPLER_PASSES(neon)

namespace lf::kernels::detail {

double neon_dotprod_probe();
void neon_i8mm_probe(double& int8, double& bf16);

void neon_layer_norm(const float* x, float* y, int n, const float* gain, const float* bias, float eps) {
  const int full = n / 4 * 4;
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int i = 0; i < full; i += 4)
    acc = vaddq_f32(acc, vld1q_f32(x + i));
  float sum = vaddvq_f32(acc);
  for (int i = full; i < n; ++i)
    sum += x[i];
  const float mean = sum / static_cast<float>(n);
  const float32x4_t vmean = vdupq_n_f32(mean);
  acc = vdupq_n_f32(0.0f);
  for (int i = 0; i < full; i += 4) {
    const float32x4_t d = vsubq_f32(vld1q_f32(x + i), vmean);
    acc = vaddq_f32(acc, vmulq_f32(d, d));
  }
  float var = vaddvq_f32(acc);
  for (int i = full; i < n; ++i)
    var += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
  const float32x4_t vr = vdupq_n_f32(rstd);
  for (int i = 0; i < full; i += 4) {
    const float32x4_t d = vsubq_f32(vld1q_f32(x + i), vmean);
    vst1q_f32(y + i, vaddq_f32(vmulq_f32(vmulq_f32(d, vr), vld1q_f32(gain + i)), vld1q_f32(bias + i)));
  }
  for (int i = full; i < n; ++i)
    y[i] = (x[i] - mean) * rstd * gain[i] + bias[i];
}

void neon_gelu_tanh(float* x, int n) {
  const float32x4_t c0 = vdupq_n_f32(0.79788456080286536f), c1 = vdupq_n_f32(0.044715f);
  const float32x4_t half = vdupq_n_f32(0.5f), one = vdupq_n_f32(1.0f), minus_two = vdupq_n_f32(-2.0f);
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    const float32x4_t u = vmulq_f32(c0, vaddq_f32(v, vmulq_f32(c1, vmulq_f32(vmulq_f32(v, v), v))));
    // tanh(u) = sign(u) (1 - e) / (1 + e), e = exp(-2 |u|) in (0, 1]
    const float32x4_t e = neon_exp4(vmulq_f32(minus_two, vabsq_f32(u)));
    const float32x4_t t = vdivq_f32(vsubq_f32(one, e), vaddq_f32(one, e));
    const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(u), vdupq_n_u32(0x80000000u));
    const float32x4_t st = vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(t), sign));
    vst1q_f32(x + i, vmulq_f32(vmulq_f32(half, v), vaddq_f32(one, st)));
  }
  for (; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
}

void neon_lora_row(const float* x, float* y, int in, int rank, int out, const float* a, const float* b, float* t) {
  for (int j = 0; j < rank; ++j) {
    const float* aj = a + static_cast<std::size_t>(j) * in;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0;
    int k = 0;
    for (; k + 8 <= in; k += 8) {
      acc0 = vfmaq_f32(acc0, vld1q_f32(x + k), vld1q_f32(aj + k));
      acc1 = vfmaq_f32(acc1, vld1q_f32(x + k + 4), vld1q_f32(aj + k + 4));
    }
    float s = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; k < in; ++k)
      s += x[k] * aj[k];
    t[j] = s;
  }
  int c = 0;
  for (; c + 4 <= out; c += 4) {
    float32x4_t acc = vld1q_f32(y + c);
    for (int j = 0; j < rank; ++j)
      acc = vfmaq_n_f32(acc, vld1q_f32(b + static_cast<std::size_t>(j) * out + c), t[j]);
    vst1q_f32(y + c, acc);
  }
  for (; c < out; ++c) {
    float acc = y[c];
    for (int j = 0; j < rank; ++j)
      acc += t[j] * b[static_cast<std::size_t>(j) * out + c];
    y[c] = acc;
  }
}

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
  double int8 = 0, bf16 = 0;
  neon_i8mm_probe(int8, bf16);
  return {probe_f32(), bf16, int8};
}

} // namespace lf::kernels::detail
