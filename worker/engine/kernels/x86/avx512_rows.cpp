// The AVX-512 tables' row operations (layer norm, tanh-GELU, LoRA rows) and sampler passes.
#include <immintrin.h>

#include <cmath>

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"
#include "worker/engine/kernels/x86/avx512_math.hpp"

LF_DEFINE_SAMPLER_PASSES(avx512)

namespace lf::kernels::detail {

namespace {
inline __mmask16 tail(int left) { return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1); }
} // namespace

void avx512_layer_norm(const float* x, float* y, int n, const float* gain, const float* bias, float eps) {
  __m512 acc = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16)
    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(tail(n - i), x + i));
  const float mean = _mm512_reduce_add_ps(acc) / static_cast<float>(n);
  const __m512 vmean = _mm512_set1_ps(mean);
  acc = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail(n - i);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), vmean);
    acc = _mm512_add_ps(acc, _mm512_mul_ps(d, d));
  }
  const float rstd = 1.0f / std::sqrt(_mm512_reduce_add_ps(acc) / static_cast<float>(n) + eps);
  const __m512 vr = _mm512_set1_ps(rstd);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail(n - i);
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmean);
    const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(d, vr), _mm512_maskz_loadu_ps(m, gain + i)),
                                   _mm512_maskz_loadu_ps(m, bias + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

void avx512_gelu_tanh(float* x, int n) {
  const __m512 c0 = _mm512_set1_ps(0.79788456080286536f), c1 = _mm512_set1_ps(0.044715f);
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 u = _mm512_mul_ps(c0, _mm512_add_ps(v, _mm512_mul_ps(c1, _mm512_mul_ps(_mm512_mul_ps(v, v), v))));
    // tanh(u) = sign(u) (1 - e) / (1 + e), e = exp(-2 |u|) in (0, 1]
    const __m512 au = _mm512_abs_ps(u);
    const __m512 e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), two), au));
    const __m512 t = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
    const __m512 st = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),
                                                          _mm512_and_si512(_mm512_castps_si512(u), sign)));
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, st)));
  }
}

void avx512_lora_row(const float* x, float* y, int in, int rank, int out, const float* a,
                     const float* b, float* t) {
  for (int j = 0; j < rank; ++j) {
    const float* aj = a + static_cast<std::size_t>(j) * in;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
    int k = 0;
    for (; k + 32 <= in; k += 32) {
      acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), _mm512_loadu_ps(aj + k), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(aj + k + 16), acc1);
    }
    for (; k < in; k += 16) {
      const __mmask16 m = tail(in - k);
      acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + k), _mm512_maskz_loadu_ps(m, aj + k), acc0);
    }
    t[j] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  }
  for (int c = 0; c < out; c += 16) {
    const __mmask16 m = tail(out - c);
    __m512 acc = _mm512_maskz_loadu_ps(m, y + c);
    for (int j = 0; j < rank; ++j)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(t[j]), _mm512_maskz_loadu_ps(m, b + static_cast<std::size_t>(j) * out + c), acc);
    _mm512_mask_storeu_ps(y + c, m, acc);
  }
}

} // namespace lf::kernels::detail
