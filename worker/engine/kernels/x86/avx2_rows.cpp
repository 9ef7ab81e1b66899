// The AVX2 tables' row operations and sampler passes (the canonical ones, common/) and peak
// probes. Compiled with AVX2 + FMA flags (the probe of AVX-VNNI with a target attribute).
#include <immintrin.h>

#include <chrono>
#include <cmath>

#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/x86/peak_body.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"

LF_DEFINE_SAMPLER_PASSES(avx2)
LF_DEFINE_CANONICAL_ROWS(avx2)

namespace lf::kernels::detail {

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
