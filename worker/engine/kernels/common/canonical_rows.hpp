#pragma once
// The row operations every kernel table runs (layer norm, tanh-GELU, a LoRA row), written once in
// one canonical order so that every table gives the same bits: each table instantiates them in a
// translation unit compiled with its own flags (sampler_passes.hpp's way: GCC vector extensions of
// the register's width, 16 lanes a step), and the arithmetic is the same whatever the width.
// Everything here has internal linkage, so a table's copy never stands in for another's.
//
// The canonical order:
//   - a sum over a row is taken in 16 lanes (lane l adds elements l, l + 16, ... in order; a row's
//     tail is padded with +0), then the lanes in a fixed tree: l[i] + l[i + 8], + 4, + 2, + 1;
//   - products and sums are two roundings each (-ffp-contract=off, no fused multiply-add), so a
//     table with FMA and one without compute the same;
//   - tanh and attention's softmax through exp_nonpositive (sampler_passes.hpp), the same
//     polynomial everywhere; libm's tanh and exp (which differ between libraries) are not used.
// Attention (every table's kernel) follows the same rules for what is not here: a score is four
// fused multiply-add chains over the dims (d mod 4) summed (c0 + c1) + (c2 + c3), times the K
// scale for int8; the output adds weight x value with a fused multiply-add token by token in
// order, then multiplies by 1 / sum (the portable kernel calls std::fma where a table has FMA).

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "worker/engine/kernels/common/sampler_passes.hpp"

namespace lf::kernels::canonical_rows {

namespace {

using sampler_passes::lanes;
using sampler_passes::vec_f32;
using sampler_passes::vec_lanes;
using sampler_passes::vecs;

/// 16 lanes, as vecs vectors of the register's width.
struct lanes16 {
  vec_f32 v[vecs] = {};

  /// Adds x[0 .. 16) lane by lane.
  void add(const float* x) {
    for (std::size_t k = 0; k < vecs; ++k) {
      vec_f32 t;
      __builtin_memcpy(&t, x + k * vec_lanes, sizeof t);
      v[k] += t;
    }
  }
  /// Adds x[0 .. n), n < 16, the other lanes +0.
  void add_tail(const float* x, std::size_t n) {
    float t[lanes] = {};
    __builtin_memcpy(t, x, n * sizeof(float));
    add(t);
  }
  /// The lanes' sum in the fixed tree.
  float sum() const {
    float l[lanes];
    __builtin_memcpy(l, v, sizeof l);
    for (std::size_t w = lanes / 2; w >= 1; w /= 2)
      for (std::size_t i = 0; i < w; ++i)
        l[i] = l[i] + l[i + w];
    return l[0];
  }
};

/// exp_nonpositive (sampler_passes.hpp) on a vector, lane by lane: the same operations in the
/// same order, so the same bits; written on vectors because a loop calling the scalar one is not
/// always vectorized.
inline vec_f32 exp_lanes(vec_f32 z) {
  using sampler_passes::vec_i32;
  const vec_i32 live = z > -87.0f;
  const vec_f32 x = live ? z : vec_f32{} - 87.0f;
  constexpr float round_magic = 12582912.0f;
  const vec_f32 n = (x * 1.44269504088896341f + round_magic) - round_magic;
  const vec_f32 r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  vec_f32 p = vec_f32{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const vec_i32 bits = (__builtin_convertvector(n, vec_i32) + 127) << 23;  // n + 127 >= 1: a shift
  vec_f32 scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return live ? p * scale : vec_f32{};
}

/// y = (x - mean) / sqrt(var + eps) * gain + bias over one row of n.
inline void layer_norm(const float* x, float* y, int n, const float* gain, const float* bias, float eps) {
  const auto N = static_cast<std::size_t>(n);
  lanes16 s;
  std::size_t i = 0;
  for (; i + lanes <= N; i += lanes)
    s.add(x + i);
  if (i < N)
    s.add_tail(x + i, N - i);
  const float mean = s.sum() / static_cast<float>(n);
  lanes16 q;
  float d2[lanes];
  for (i = 0; i + lanes <= N; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const float d = x[i + j] - mean;
      d2[j] = d * d;
    }
    q.add(d2);
  }
  if (i < N) {
    for (std::size_t j = 0; j < N - i; ++j) {
      const float d = x[i + j] - mean;
      d2[j] = d * d;
    }
    q.add_tail(d2, N - i);
  }
  const float rstd = 1.0f / std::sqrt(q.sum() / static_cast<float>(n) + eps);
  for (i = 0; i < N; ++i)
    y[i] = ((x[i] - mean) * rstd) * gain[i] + bias[i];
}

/// GPT-2's GELU, tanh approximation: 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))), tanh(u)
/// as sign(u) (1 - e) / (1 + e) with e = exp(-2 |u|).
inline float gelu_tanh_one(float v) {
  const float u = 0.79788456080286536f * (v + 0.044715f * ((v * v) * v));
  const float e = sampler_passes::exp_nonpositive(-2.0f * std::fabs(u));
  const float t = (1.0f - e) / (1.0f + e);
  return (0.5f * v) * (1.0f + std::copysign(t, u));
}

/// gelu_tanh_one on a vector, lane by lane (the same operations, so the same bits).
inline vec_f32 gelu_tanh_lanes(vec_f32 v) {
  using sampler_passes::vec_i32;
  const vec_f32 u = 0.79788456080286536f * (v + 0.044715f * ((v * v) * v));
  vec_i32 ub;
  __builtin_memcpy(&ub, &u, sizeof ub);
  const vec_i32 magnitude = ub & 0x7fffffff, sign = ub & static_cast<std::int32_t>(0x80000000u);
  vec_f32 au;
  __builtin_memcpy(&au, &magnitude, sizeof au);
  const vec_f32 e = exp_lanes(-2.0f * au);
  const vec_f32 t = (1.0f - e) / (1.0f + e);
  vec_i32 tb;
  __builtin_memcpy(&tb, &t, sizeof tb);
  tb = (tb & 0x7fffffff) | sign;  // copysign(t, u)
  vec_f32 st;
  __builtin_memcpy(&st, &tb, sizeof st);
  return (0.5f * v) * (1.0f + st);
}

inline void gelu_tanh(float* __restrict x, int n) {
  const auto N = static_cast<std::size_t>(n);
  std::size_t i = 0;
  for (; i + vec_lanes <= N; i += vec_lanes) {
    vec_f32 v;
    __builtin_memcpy(&v, x + i, sizeof v);
    v = gelu_tanh_lanes(v);
    __builtin_memcpy(x + i, &v, sizeof v);
  }
  for (; i < N; ++i)
    x[i] = gelu_tanh_one(x[i]);
}

/// y += (x A^T) B for one row: t = x A^T (rank sums over `in`, each in 16 lanes), then each
/// output column adds t[j] * B[j] in the order of j.
inline void lora_row(const float* x, float* __restrict y, int in, int rank, int out, const float* a, const float* b,
                     float* __restrict t) {
  const auto K = static_cast<std::size_t>(in), C = static_cast<std::size_t>(out);
  float prod[lanes];
  for (int j = 0; j < rank; ++j) {
    const float* aj = a + static_cast<std::size_t>(j) * K;
    lanes16 s;
    std::size_t k = 0;
    for (; k + lanes <= K; k += lanes) {
      for (std::size_t l = 0; l < lanes; ++l)
        prod[l] = x[k + l] * aj[k + l];
      s.add(prod);
    }
    if (k < K) {
      for (std::size_t l = 0; l < K - k; ++l)
        prod[l] = x[k + l] * aj[k + l];
      s.add_tail(prod, K - k);
    }
    t[j] = s.sum();
  }
  for (int j = 0; j < rank; ++j) {
    const float tj = t[j];
    const float* bj = b + static_cast<std::size_t>(j) * C;
    for (std::size_t c = 0; c < C; ++c)
      y[c] = y[c] + tj * bj[c];
  }
}

/// Attention's softmax over one query's scores s[0 .. len): s[t] = exp(s[t] - max) in place
/// (exp_nonpositive), and returns their sum, taken in 16 lanes over t and the fixed tree. The
/// maximum is exact in any order. Every table's attention calls this, so their weights and sums
/// are the same bits.
inline float softmax_in_place(float* __restrict s, int len) {
  const auto n = static_cast<std::size_t>(len);
  // The maximum, 16 lanes at a time (a scalar loop of compares does not vectorize); exact.
  vec_f32 m[vecs] = {};
  for (std::size_t k = 0; k < vecs; ++k)
    for (std::size_t j = 0; j < vec_lanes; ++j)
      m[k][j] = sampler_passes::neg_inf;
  std::size_t t = 0;
  for (; t + lanes <= n; t += lanes)
    for (std::size_t k = 0; k < vecs; ++k) {
      vec_f32 v;
      __builtin_memcpy(&v, s + t + k * vec_lanes, sizeof v);
      m[k] = v > m[k] ? v : m[k];
    }
  float mx = sampler_passes::neg_inf;
  for (std::size_t k = 0; k < vecs; ++k)
    for (std::size_t j = 0; j < vec_lanes; ++j)
      mx = m[k][j] > mx ? m[k][j] : mx;
  for (; t < n; ++t)
    mx = s[t] > mx ? s[t] : mx;
  // exp(s - max) and its sum in one pass, 16 lanes a step (exp_lanes: exp_nonpositive's bits);
  // the tail padded with -inf, whose exp is 0.
  lanes16 acc;
  float tail[lanes];
  for (t = 0; t < n; t += lanes) {
    const std::size_t here = n - t < lanes ? n - t : lanes;
    float* at = s + t;
    if (here < lanes) {
      for (std::size_t j = 0; j < lanes; ++j)
        tail[j] = j < here ? at[j] : sampler_passes::neg_inf;
      at = tail;
    }
    for (std::size_t k = 0; k < vecs; ++k) {
      vec_f32 v;
      __builtin_memcpy(&v, at + k * vec_lanes, sizeof v);
      v = exp_lanes(v - mx);
      __builtin_memcpy(at + k * vec_lanes, &v, sizeof v);
      acc.v[k] += v;
    }
    if (here < lanes)
      __builtin_memcpy(s + t, tail, here * sizeof(float));
  }
  return acc.sum();
}

} // namespace

} // namespace lf::kernels::canonical_rows

/// Defines a table's row operations, PREFIX_layer_norm, PREFIX_gelu_tanh and PREFIX_lora_row, in
/// namespace lf::kernels::detail, from the canonical ones compiled with the including file's flags.
#define LF_DEFINE_CANONICAL_ROWS(prefix)                                                           \
  namespace lf::kernels::detail {                                                                  \
  void prefix##_layer_norm(const float* x, float* y, int n, const float* gain, const float* bias,  \
                           float eps) {                                                            \
    canonical_rows::layer_norm(x, y, n, gain, bias, eps);                                          \
  }                                                                                                \
  void prefix##_gelu_tanh(float* x, int n) { canonical_rows::gelu_tanh(x, n); }                    \
  void prefix##_lora_row(const float* x, float* y, int in, int rank, int out, const float* a,      \
                         const float* b, float* t) {                                               \
    canonical_rows::lora_row(x, y, in, rank, out, a, b, t);                                        \
  }                                                                                                \
  }
