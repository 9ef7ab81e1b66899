#pragma once
// Private to the AVX2 translation units: horizontal minimum and maximum of a vector.

#include <immintrin.h>

namespace lf::kernels::detail {

/// The smallest of a vector's 8 lanes.
inline float avx2_hmin(__m256 v) {
  __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  s = _mm_min_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

/// The largest of a vector's 8 lanes.
inline float avx2_hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

} // namespace lf::kernels::detail
