#include "tools/train/xent_kernel.hpp"

#include <cmath>
#include <cstring>
#include <limits>

// Row loops are compiled for AVX-512, AVX2 and the baseline and picked at load time (GCC's
// function multi-versioning), so one binary runs everywhere and uses the widest vectors it finds.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define LF_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
// The vector helpers are always inlined into the clones, so their ABI never matters.
#pragma GCC diagnostic ignored "-Wpsabi"
#define LF_INLINE __attribute__((always_inline)) inline
#else
#define LF_MULTIVERSION
#define LF_INLINE inline
#endif

namespace lf::train {

namespace {

// GCC/Clang vector extensions: 16 floats per operation, lowered to whatever the target clone
// has (one zmm, two ymm or four xmm registers), with no intrinsics and no -ffast-math.
using vf = float __attribute__((vector_size(64)));
using vi = std::int32_t __attribute__((vector_size(64)));
using vu = std::uint32_t __attribute__((vector_size(64)));
using vh = std::uint16_t __attribute__((vector_size(32)));
constexpr std::int64_t lanes = 16;

LF_INLINE float bits_to_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

LF_INLINE std::uint32_t float_to_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

LF_INLINE vf load16(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

LF_INLINE vf load16(const std::uint16_t* p) {
  vh h;
  std::memcpy(&h, p, sizeof h);
  return reinterpret_cast<vf>(__builtin_convertvector(h, vu) << 16);
}

LF_INLINE void store16(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

LF_INLINE void store16(std::uint16_t* p, vf v) {
  auto b = reinterpret_cast<vu>(v);
  b += 0x7fffu + ((b >> 16) & 1u); // round to nearest even (gradients are finite)
  vh h = __builtin_convertvector(b >> 16, vh);
  std::memcpy(p, &h, sizeof h);
}

LF_INLINE float load1(const float* p) { return *p; }
LF_INLINE float load1(const std::uint16_t* p) {
  return bits_to_float(static_cast<std::uint32_t>(*p) << 16);
}

LF_INLINE void store1(float* p, float v) { *p = v; }
LF_INLINE void store1(std::uint16_t* p, float v) {
  std::uint32_t b = float_to_bits(v);
  b += 0x7fffu + ((b >> 16) & 1u);
  *p = static_cast<std::uint16_t>(b >> 16);
}

/// 2^n for integral n in [-126, 127].
LF_INLINE float pow2(float n) {
  return bits_to_float(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23);
}
LF_INLINE vf pow2(vf n) {
  return reinterpret_cast<vf>((__builtin_convertvector(n, vi) + 127) << 23);
}

// exp(x), x <= 0: 2^(x log2 e) = 2^n * 2^f with n = round(t), |f| <= 1/2, 2^f = e^(f ln 2) by its
// Taylor series to degree 6 (relative error below 2e-7). T is float or vf.
template <class T>
LF_INLINE T exp_le0_t(T x) {
  x = x < -87.0f ? x - x - 87.0f : x;
  const T t = x * 1.4426950408889634f;
  const float shifter = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  const T n = (t + shifter) - shifter;
  const T f = (t - n) * 0.6931471805599453f;
  T p = f * (1.0f / 720.0f) + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  return p * pow2(n);
}

template <class T>
LF_INLINE double rows_impl(T* logits, std::int64_t vocab, const std::int64_t* targets,
                           std::int64_t row_begin, std::int64_t row_end, float grad_scale,
                           bool write_grad, float* s) {
  double total = 0;
  const std::int64_t body = vocab - vocab % lanes;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    T* row = logits + r * vocab;
    // Pass 1: widen into the scratch row and find the max.
    vf mx = vf{} + neg_inf;
    for (std::int64_t j = 0; j < body; j += lanes) {
      const vf v = load16(row + j);
      store16(s + j, v);
      mx = v > mx ? v : mx;
    }
    float m = neg_inf;
    for (std::int64_t k = 0; k < lanes; ++k)
      m = mx[k] > m ? mx[k] : m;
    for (std::int64_t j = body; j < vocab; ++j) {
      s[j] = load1(row + j);
      m = s[j] > m ? s[j] : m;
    }
    // Pass 2: exponentials (kept in the scratch row) and their sum.
    vf acc = vf{};
    for (std::int64_t j = 0; j < body; j += lanes) {
      const vf e = exp_le0_t(load16(s + j) - m);
      store16(s + j, e);
      acc += e;
    }
    double sum = 0;
    for (std::int64_t k = 0; k < lanes; ++k)
      sum += acc[k];
    for (std::int64_t j = body; j < vocab; ++j) {
      s[j] = exp_le0_t(s[j] - m);
      sum += s[j];
    }
    const std::int64_t tgt = targets[r];
    total += std::log(sum) - (static_cast<double>(load1(row + tgt)) - m);
    // Pass 3: the gradient grad_scale * (softmax - onehot) over the logits.
    if (write_grad) {
      const auto scale = static_cast<float>(grad_scale / sum);
      for (std::int64_t j = 0; j < body; j += lanes)
        store16(row + j, load16(s + j) * scale);
      for (std::int64_t j = body; j < vocab; ++j)
        store1(row + j, s[j] * scale);
      store1(row + tgt, s[tgt] * scale - grad_scale);
    }
  }
  return total;
}

} // namespace

float exp_nonpositive(float x) noexcept { return exp_le0_t(x); }

LF_MULTIVERSION
double xent_rows_f32(float* logits, std::int64_t vocab, const std::int64_t* targets,
                     std::int64_t row_begin, std::int64_t row_end, float grad_scale,
                     bool write_grad, float* scratch) {
  return rows_impl(logits, vocab, targets, row_begin, row_end, grad_scale, write_grad, scratch);
}

LF_MULTIVERSION
double xent_rows_bf16(std::uint16_t* logits, std::int64_t vocab, const std::int64_t* targets,
                      std::int64_t row_begin, std::int64_t row_end, float grad_scale,
                      bool write_grad, float* scratch) {
  return rows_impl(logits, vocab, targets, row_begin, row_end, grad_scale, write_grad, scratch);
}

} // namespace lf::train
