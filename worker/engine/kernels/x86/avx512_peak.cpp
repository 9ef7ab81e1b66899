// The AVX-512 tables' peak-rate probes: many independent accumulators of the kernels' inner
// instructions. The bf16 and VNNI probes are compiled with target attributes and run only from the
// tables that need those features.
#include <immintrin.h>

#include <chrono>

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/x86/peak_body.hpp"

namespace lf::kernels::detail {

namespace {

double probe_f32() {
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  const auto t0 = std::chrono::steady_clock::now();
#define LF_OP(c) _mm512_fmadd_ps(c, a, b)
  LF_PROBE_BODY(__m512, _mm512_set1_ps(1.0f), LF_OP)
#undef LF_OP
  return 10.0 * 16 * probe_iterations / probe_seconds(t0);
}

__attribute__((target("avx512bf16"))) double probe_bf16() {
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = a;
  const auto t0 = std::chrono::steady_clock::now();
#define LF_OP(c) _mm512_dpbf16_ps(c, a, b)
  LF_PROBE_BODY(__m512, _mm512_setzero_ps(), LF_OP)
#undef LF_OP
  return 10.0 * 32 * probe_iterations / probe_seconds(t0);
}

__attribute__((target("avx512vnni"))) double probe_int8() {
  const __m512i a = _mm512_set1_epi32(0x01010101), b = a;
  const auto t0 = std::chrono::steady_clock::now();
#define LF_OP(c) _mm512_dpbusd_epi32(c, a, b)
  LF_PROBE_BODY(__m512i, _mm512_setzero_si512(), LF_OP)
#undef LF_OP
  return 10.0 * 64 * probe_iterations / probe_seconds(t0);
}

} // namespace

thread_peaks avx512_peak() {
  const double f = probe_f32();
  return {f, f, 0};  // bf16 emulated: two FMAs per pair; int8 borrows avx2's kernel (avx2_peak)
}

thread_peaks avx512_vnni_peak() {
  const double f = probe_f32();
  return {f, f, probe_int8()};
}

thread_peaks avx512_bf16_peak() { return {probe_f32(), probe_bf16(), probe_int8()}; }

} // namespace lf::kernels::detail
