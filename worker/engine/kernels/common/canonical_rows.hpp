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

/// |u|, for one value or lane by lane.
inline float magnitude(float u) { return std::fabs(u); }
inline vec_f32 magnitude(vec_f32 u) {
  sampler_passes::vec_i32 b;
  __builtin_memcpy(&b, &u, sizeof b);
  b &= 0x7fffffff;
  __builtin_memcpy(&u, &b, sizeof u);
  return u;
}

/// |t| with the sign of u, for one value or lane by lane.
inline float with_sign_of(float t, float u) { return std::copysign(t, u); }
inline vec_f32 with_sign_of(vec_f32 t, vec_f32 u) {
  sampler_passes::vec_i32 tb, ub;
  __builtin_memcpy(&tb, &t, sizeof tb);
  __builtin_memcpy(&ub, &u, sizeof ub);
  tb = (tb & 0x7fffffff) | (ub & static_cast<std::int32_t>(0x80000000u));
  __builtin_memcpy(&t, &tb, sizeof t);
  return t;
}

/// GPT-2's GELU, tanh approximation: 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))), tanh(u)
/// as sign(u) (1 - e) / (1 + e) with e = exp(-2 |u|); for one value or lane by lane (the same
/// operations, so the same bits).
template <class F>
inline F gelu_tanh_of(F v) {
  const F u = 0.79788456080286536f * (v + 0.044715f * ((v * v) * v));
  const F e = sampler_passes::exp_nonpositive(-2.0f * magnitude(u));
  const F t = (1.0f - e) / (1.0f + e);
  return (0.5f * v) * (1.0f + with_sign_of(t, u));
}

inline void gelu_tanh(float* __restrict x, int n) {
  const auto N = static_cast<std::size_t>(n);
  std::size_t i = 0;
  for (; i + vec_lanes <= N; i += vec_lanes) {
    vec_f32 v;
    __builtin_memcpy(&v, x + i, sizeof v);
    v = gelu_tanh_of(v);
    __builtin_memcpy(x + i, &v, sizeof v);
  }
  for (; i < N; ++i)
    x[i] = gelu_tanh_of(x[i]);
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
  bool bad = false;  // the scores are finite; the sampler's check is not needed here
  const float mx = sampler_passes::logits_max(s, n, bad);
  // exp(s - max) and its sum in one pass, 16 lanes a step; the tail padded with -inf, whose exp
  // is 0.
  lanes16 acc;
  float tail[lanes];
  for (std::size_t t = 0; t < n; t += lanes) {
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
      v = sampler_passes::exp_nonpositive(v - mx);
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
