// The AVX2 tables' row operations (layer norm, tanh-GELU, LoRA rows), sampler passes and peak
// probes. Compiled with AVX2 + FMA flags (the probe of AVX-VNNI with a target attribute).
#include <immintrin.h>

#include <chrono>
#include <cmath>

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/x86/peak_body.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"
#include "worker/engine/kernels/x86/avx2_math.hpp"

LF_DEFINE_SAMPLER_PASSES(avx2)

namespace lf::kernels::detail {

namespace {

/// x[i .. i + n) for n < 8 into a zero-padded vector.
inline __m256 load_tail(const float* x, int n) {
  alignas(32) float t[8] = {};
  for (int j = 0; j < n; ++j)
    t[j] = x[j];
  return _mm256_load_ps(t);
}

inline void store_tail(float* y, int n, __m256 v) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  for (int j = 0; j < n; ++j)
    y[j] = t[j];
}

} // namespace

void avx2_layer_norm(const float* x, float* y, int n, const float* gain, const float* bias, float eps) {
  const int full = n / 8 * 8;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < full; i += 8)
    acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  if (full < n)
    acc = _mm256_add_ps(acc, load_tail(x + full, n - full));
  const float mean = avx2_hsum(acc) / static_cast<float>(n);
  const __m256 vmean = _mm256_set1_ps(mean);
  acc = _mm256_setzero_ps();
  for (int i = 0; i < full; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(d, d));
  }
  float tail_var = 0;
  for (int i = full; i < n; ++i)
    tail_var += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt((avx2_hsum(acc) + tail_var) / static_cast<float>(n) + eps);
  const __m256 vr = _mm256_set1_ps(rstd);
  for (int i = 0; i < full; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(d, vr), _mm256_loadu_ps(gain + i)),
                                          _mm256_loadu_ps(bias + i)));
  }
  for (int i = full; i < n; ++i)
    y[i] = (x[i] - mean) * rstd * gain[i] + bias[i];
}

void avx2_gelu_tanh(float* x, int n) {
  const __m256 c0 = _mm256_set1_ps(0.79788456080286536f), c1 = _mm256_set1_ps(0.044715f);
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), minus_two = _mm256_set1_ps(-2.0f);
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  auto gelu = [&](__m256 v) {
    const __m256 u = _mm256_mul_ps(c0, _mm256_add_ps(v, _mm256_mul_ps(c1, _mm256_mul_ps(_mm256_mul_ps(v, v), v))));
    // tanh(u) = sign(u) (1 - e) / (1 + e), e = exp(-2 |u|) in (0, 1]
    const __m256 au = _mm256_andnot_ps(sign, u);
    const __m256 e = avx2_exp8(_mm256_mul_ps(minus_two, au));
    const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    const __m256 st = _mm256_or_ps(t, _mm256_and_ps(u, sign));
    return _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, st));
  };
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, gelu(_mm256_loadu_ps(x + i)));
  if (i < n)
    store_tail(x + i, n - i, gelu(load_tail(x + i, n - i)));
}

void avx2_lora_row(const float* x, float* y, int in, int rank, int out, const float* a, const float* b,
                   float* t) {
  for (int j = 0; j < rank; ++j) {
    const float* aj = a + static_cast<std::size_t>(j) * in;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    int k = 0;
    for (; k + 16 <= in; k += 16) {
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(aj + k), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), _mm256_loadu_ps(aj + k + 8), acc1);
    }
    for (; k + 8 <= in; k += 8)
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(aj + k), acc0);
    float s = avx2_hsum(_mm256_add_ps(acc0, acc1));
    for (; k < in; ++k)
      s += x[k] * aj[k];
    t[j] = s;
  }
  int c = 0;
  for (; c + 8 <= out; c += 8) {
    __m256 acc = _mm256_loadu_ps(y + c);
    for (int j = 0; j < rank; ++j)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(t[j]), _mm256_loadu_ps(b + static_cast<std::size_t>(j) * out + c), acc);
    _mm256_storeu_ps(y + c, acc);
  }
  for (; c < out; ++c) {
    float acc = y[c];
    for (int j = 0; j < rank; ++j)
      acc += t[j] * b[static_cast<std::size_t>(j) * out + c];
    y[c] = acc;
  }
}

// -- peak probes: many independent chains of the kernels' inner instruction sequences ----------

namespace {

double probe_f32() {
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  const auto t0 = std::chrono::steady_clock::now();
#define LF_OP(c) _mm256_fmadd_ps(c, a, b)
  LF_PROBE_BODY(__m256, _mm256_set1_ps(1.0f), LF_OP)
#undef LF_OP
  return 10.0 * 8 * probe_iterations / probe_seconds(t0);
}

/// The avx2 int8 kernel's sequence per 32 products: sign, maddubs, madd, add (each chain feeds
/// its own sum back as the signed operand, so nothing can be hoisted out of the loop).
double probe_int8_sign() {
  const __m256i s = _mm256_set1_epi8(-5), u = _mm256_abs_epi8(s), ones = _mm256_set1_epi16(1);
  const auto t0 = std::chrono::steady_clock::now();
#define LF_OP(c) _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_sign_epi8(c, s)), ones))
  LF_PROBE_BODY(__m256i, _mm256_setzero_si256(), LF_OP)
#undef LF_OP
  return 10.0 * 32 * probe_iterations / probe_seconds(t0);
}

__attribute__((target("avxvnni"))) double probe_int8_vnni() {
  const __m256i a = _mm256_set1_epi32(0x01010101), b = a;
  const auto t0 = std::chrono::steady_clock::now();
#define LF_OP(c) _mm256_dpbusd_avx_epi32(c, a, b)
  LF_PROBE_BODY(__m256i, _mm256_setzero_si256(), LF_OP)
#undef LF_OP
  return 10.0 * 32 * probe_iterations / probe_seconds(t0);
}

} // namespace

thread_peaks avx2_peak() {
  const double f = probe_f32();
  return {f, f, probe_int8_sign()};  // bf16: widened in registers, two FMAs per pair
}

thread_peaks avx2_vnni_peak() {
  const double f = probe_f32();
  return {f, f, probe_int8_vnni()};
}

} // namespace lf::kernels::detail
