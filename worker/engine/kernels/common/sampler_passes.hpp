#pragma once
// The sampler's passes over a row of logits, written so a compiler vectorizes them 16 lanes at a
// time (GCC vector extensions): each kernel table instantiates them in a translation unit compiled
// with its own flags (one AVX-512 register, two AVX2 or four NEON / SSE registers per 16 lanes,
// as vectors of the register's width).
// Everything here has internal linkage, so a table's copy never stands in for another's.
//
// The results do not depend on the vector width: the maximum and the first index are exact, exp
// is elementwise, and block masses are summed in a fixed order of double lanes. So a seed draws
// the same token with every table (-ffp-contract=off keeps a * b + c two roundings everywhere).

#include <cstdint>
#include <cstring>
#include <limits>

namespace lf::kernels::sampler_passes {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();
constexpr float pos_inf = std::numeric_limits<float>::infinity();

/// 16 lanes a step, held in vectors of the including file's register width: GCC lowers a vector
/// wider than the registers one lane at a time (a 64-byte vector under AVX2 compiled to scalar code
/// with stack spills, 10x slower), so the width follows the flags and a step takes k of them.
#if defined(__AVX512F__)
constexpr std::size_t vector_bytes = 64;
#elif defined(__AVX__)
constexpr std::size_t vector_bytes = 32;
#else
constexpr std::size_t vector_bytes = 16;  // SSE2, NEON
#endif
typedef float vec_f32 __attribute__((vector_size(vector_bytes)));
typedef std::int32_t vec_i32 __attribute__((vector_size(vector_bytes)));
constexpr std::size_t lanes = 16;
constexpr std::size_t vec_lanes = vector_bytes / sizeof(float);
constexpr std::size_t vecs = lanes / vec_lanes;

/// 2^n for an integral n >= -126 held in a float (a normal float: built from its exponent bits),
/// for one value or lane by lane.
inline float pow2_of(float n) {
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return scale;
}
inline vec_f32 pow2_of(vec_f32 n) {
  const vec_i32 bits = (__builtin_convertvector(n, vec_i32) + 127) << 23;
  vec_f32 scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return scale;
}

/// exp(z) for z <= 0 (including -inf) within 1e-7 relative error, and exactly 0 for z <= -87.
/// Plain arithmetic, the same bits on every CPU (libm picks FMA or not). F is float, or vec_f32
/// lane by lane (the same operations, so the same bits), for loops a compiler does not vectorize.
template <class F>
inline F exp_nonpositive(F z) {
  const auto live = z > -87.0f;  // bool, or a lane mask
  const F x = live ? z : F{} - 87.0f;
  // Cody-Waite: x = n ln2 + r with |r| <= ln2 / 2; adding 1.5 * 2^23 rounds to an integer.
  constexpr float round_magic = 12582912.0f;
  const F n = (x * 1.44269504088896341f + round_magic) - round_magic;
  const F r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  // Cephes expf polynomial.
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  return live ? p * pow2_of(n) : F{};  // n + 127 >= 1 after the clamp
}


/// The largest logit; `bad` when one is NaN or +inf.
inline float logits_max(const float* logits, std::size_t n, bool& bad) {
  vec_f32 m[vecs];
  vec_i32 ok[vecs];
  for (std::size_t k = 0; k < vecs; ++k) {  // whole vectors: GCC 12 warns of lanes set one by one
    m[k] = vec_f32{} + neg_inf;
    ok[k] = vec_i32{} - 1;
  }
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t k = 0; k < vecs; ++k) {
      vec_f32 v;
      __builtin_memcpy(&v, logits + i + k * vec_lanes, sizeof v);
      ok[k] &= v < pos_inf;  // 0 where NaN or +inf
      m[k] = v > m[k] ? v : m[k];
    }
  float max = neg_inf;
  bool any_bad = false;
  for (std::size_t k = 0; k < vecs; ++k)
    for (std::size_t j = 0; j < vec_lanes; ++j) {
      max = m[k][j] > max ? m[k][j] : max;
      any_bad |= ok[k][j] == 0;
    }
  for (; i < n; ++i) {
    any_bad |= !(logits[i] < pos_inf);
    max = logits[i] > max ? logits[i] : max;
  }
  bad = any_bad;
  return max;
}

/// The first i with logits[i] == value (which is there), in blocks of 16 compared at once.
inline std::int32_t first_index_of(const float* logits, std::size_t n, float value) {
  std::size_t i = 0;
  vec_f32 want;
  for (std::size_t j = 0; j < vec_lanes; ++j)
    want[j] = value;
  for (; i + lanes <= n; i += lanes) {
    vec_i32 eq = {};
    for (std::size_t k = 0; k < vecs; ++k) {
      vec_f32 v;
      __builtin_memcpy(&v, logits + i + k * vec_lanes, sizeof v);
      eq |= v == want;
    }
    std::int32_t hit = 0;
    for (std::size_t j = 0; j < vec_lanes; ++j)
      hit |= eq[j];
    if (hit)
      break;
  }
  while (logits[i] != value)
    ++i;
  return static_cast<std::int32_t>(i);
}

/// logits[i] = (logits[i] - max) * inv_t and probs[i] = exp of that, in one pass.
inline void scale_and_exp(float* __restrict logits, float* __restrict probs, std::size_t n, float max,
                          float inv_t) {
  for (std::size_t i = 0; i < n; ++i) {
    const float z = (logits[i] - max) * inv_t;
    logits[i] = z;
    probs[i] = exp_nonpositive(z);
  }
}

/// A block's mass is summed in this many double lanes, then the lanes pairwise.
constexpr std::size_t mass_lanes = 8;

inline double block_mass_of(const float* probs, std::size_t first, std::size_t end) {
  double l[mass_lanes] = {};
  std::size_t i = first;
  for (; i + mass_lanes <= end; i += mass_lanes)
    for (std::size_t j = 0; j < mass_lanes; ++j)
      l[j] += probs[i + j];
  for (std::size_t j = 0; i < end; ++i, ++j)
    l[j] += probs[i];
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/// out[b] = the mass of block b of ids (block_len each); returns their sum in block order.
inline double block_masses(const float* probs, std::size_t n, std::size_t block_len, double* out) {
  const std::size_t blocks = (n + block_len - 1) / block_len;
  double total = 0.0;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t end = (b + 1) * block_len < n ? (b + 1) * block_len : n;
    out[b] = block_mass_of(probs, b * block_len, end);
    total += out[b];
  }
  return total;
}

} // namespace

} // namespace lf::kernels::sampler_passes

/// Defines a table's four sampler entry points, PREFIX_logits_max and so on, in namespace
/// lf::kernels::detail, from the passes above compiled with the including file's flags.
#define LF_DEFINE_SAMPLER_PASSES(prefix)                                                           \
  namespace lf::kernels::detail {                                                                  \
  float prefix##_logits_max(const float* l, std::size_t n, bool& bad) {                            \
    return sampler_passes::logits_max(l, n, bad);                                                  \
  }                                                                                                \
  std::int32_t prefix##_first_index_of(const float* l, std::size_t n, float v) {                   \
    return sampler_passes::first_index_of(l, n, v);                                                \
  }                                                                                                \
  void prefix##_scale_and_exp(float* l, float* p, std::size_t n, float max, float inv_t) {         \
    sampler_passes::scale_and_exp(l, p, n, max, inv_t);                                            \
  }                                                                                                \
  double prefix##_block_masses(const float* p, std::size_t n, std::size_t len, double* out) {      \
    return sampler_passes::block_masses(p, n, len, out);                                           \
  }                                                                                                \
  }
