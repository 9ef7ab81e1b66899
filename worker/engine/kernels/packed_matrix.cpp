#include "worker/engine/kernels/packed_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "worker/engine/kernels/common/half.hpp"
namespace lf::kernels {

std::string_view to_string(weight_type t) noexcept {
  switch (t) {
    case weight_type::f32: return "f32";
    case weight_type::bf16: return "bf16";
    case weight_type::int8: return "int8";
    case weight_type::int4: return "int4";
  }
  return "f32";
}

aligned_buffer::aligned_buffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0)
    return;
  // calloc: a large buffer comes as fresh zero pages that cost memory only once written (a K/V
  // pool holds RSS for the blocks in use, not for its whole budget), a small one is cleared.
  void* base = std::calloc((bytes + 63) / 64 * 64 + 64, 1);
  if (base == nullptr)
    throw std::bad_alloc();
  const auto addr = (reinterpret_cast<std::uintptr_t>(base) + 63) & ~std::uintptr_t{63};
  p_ = std::unique_ptr<std::byte[], deleter>(reinterpret_cast<std::byte*>(addr), deleter{base});
}

void aligned_buffer::deleter::operator()(std::byte*) const noexcept { std::free(base); }

std::size_t packed_matrix::offset(int k, int n) const noexcept {
  const int g = group_of(type_);
  const auto panel = static_cast<std::size_t>(n / panel_cols);
  const int c = n % panel_cols;
  const auto row = static_cast<std::size_t>(k / g);
  const auto per_panel = static_cast<std::size_t>(kp_) * panel_cols;  // elements
  return panel * per_panel + (row * panel_cols + static_cast<std::size_t>(c)) * static_cast<std::size_t>(g)
         + static_cast<std::size_t>(k % g);
}

std::size_t packed_matrix::block_meta(int k, int n) const noexcept {
  const auto panel = static_cast<std::size_t>(n / panel_cols);
  return (panel * static_cast<std::size_t>(blocks()) + static_cast<std::size_t>(k / int4_block)) * panel_cols
         + static_cast<std::size_t>(n % panel_cols);
}

namespace {

/// int4: the byte holding (k, n) given its element index (packed_matrix::offset, G = 8), and
/// whether it is the high nibble: element e = (row * 64 + c) * 8 + k % 8 lies in byte
/// (row * 64 + c) * 4 + k % 4, high for k % 8 >= 4.
inline std::size_t int4_byte(std::size_t e) noexcept { return e / 8 * 4 + e % 4; }
inline bool int4_high(std::size_t e) noexcept { return e % 8 >= 4; }

/// int4: the scale of a block of `len` values: of max |v| / 7 times 32/32, 31/32, ..., 22/32 (the
/// first clips nothing; the smaller ones clip the largest values to 7 steps for finer steps
/// elsewhere), the one with the least squared error (the first of equals). 0 for a block of zeros.
float int4_scale(const float* v, int len) noexcept {
  float amax = 0;
  for (int i = 0; i < len; ++i)
    amax = std::max(amax, std::fabs(v[i]));
  if (!(amax > 0))
    return 0.0f;
  float best_scale = amax / 7.0f;
  float best = -1;
  for (int c = 32; c >= 22; --c) {
    const float s = amax / 7.0f * (static_cast<float>(c) / 32.0f), inv = 1.0f / s;
    float err = 0;
    for (int i = 0; i < len; ++i) {
      // Clamped to [-7, 7], then rounded to nearest even by adding and taking away 1.5 * 2^23
      // (exact for |t| <= 2^22; plain arithmetic the compiler vectorizes, where nearbyint is a
      // libm call on the baseline). The search only picks the scale; pack() rounds with nearbyint.
      const float t = std::min(std::max(v[i] * inv, -7.0f), 7.0f);
      const float q = (t + 12582912.0f) - 12582912.0f;
      const float d = v[i] - q * s;
      err += d * d;
    }
    if (best < 0 || err < best) {
      best = err;
      best_scale = s;
    }
  }
  return best_scale;
}

/// Calls f(k, n) for every element, in the order that reads `src` sequentially.
template <class F>
void for_each_element(int K, int N, const float_source& src, F&& f) {
  if (src.n_stride <= src.k_stride) {
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n)
        f(k, n);
  } else {
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        f(k, n);
  }
}

} // namespace

packed_matrix packed_matrix::pack(weight_type type, int K, int N, float_source src) {
  if (K <= 0 || N <= 0)
    throw std::invalid_argument("packed_matrix: K and N must be positive");
  packed_matrix m;
  m.type_ = type;
  m.k_ = K;
  m.n_ = N;
  const int g = k_multiple_of(type);
  m.kp_ = (K + g - 1) / g * g;
  m.np_ = (N + panel_cols - 1) / panel_cols * panel_cols;
  const std::size_t elems = static_cast<std::size_t>(m.kp_) * static_cast<std::size_t>(m.np_);
  auto value = [&](int k, int n) { return src.at(static_cast<std::size_t>(k), static_cast<std::size_t>(n)); };
  switch (type) {
    case weight_type::f32: {
      m.data_ = aligned_buffer(elems * 4);
      auto* d = reinterpret_cast<float*>(m.data_.data());
      for_each_element(K, N, src, [&](int k, int n) { d[m.offset(k, n)] = value(k, n); });
      break;
    }
    case weight_type::bf16: {
      m.data_ = aligned_buffer(elems * 2);
      auto* d = reinterpret_cast<std::uint16_t*>(m.data_.data());
      for_each_element(K, N, src, [&](int k, int n) { d[m.offset(k, n)] = engine::f32_to_bf16_operand(value(k, n)); });
      break;
    }
    case weight_type::int8: {
      m.data_ = aligned_buffer(elems);
      m.meta_ = aligned_buffer(static_cast<std::size_t>(m.np_) * 8);
      auto* d = reinterpret_cast<std::int8_t*>(m.data_.data());
      auto* scale = reinterpret_cast<float*>(m.meta_.data());
      auto* sums = reinterpret_cast<std::int32_t*>(m.meta_.data() + static_cast<std::size_t>(m.np_) * 4);
      for (int n = 0; n < m.np_; ++n)
        scale[n] = 0.0f;  // the absmax first, then the scale
      for_each_element(K, N, src, [&](int k, int n) { scale[n] = std::max(scale[n], std::fabs(value(k, n))); });
      for (int n = 0; n < m.np_; ++n)
        scale[n] = scale[n] > 0 ? scale[n] / 127.0f : 1.0f;
      for_each_element(K, N, src, [&](int k, int n) {
        const float v = std::nearbyint(value(k, n) / scale[n]);
        const auto q = static_cast<std::int8_t>(std::clamp(v, -127.0f, 127.0f));
        d[m.offset(k, n)] = q;
        sums[n] += q;
      });
      break;
    }
    case weight_type::int4: {
      // Every nibble starts as 8 (q = 0): the padding rows and columns stay exact zeros.
      m.data_ = aligned_buffer(elems / 2);
      std::memset(m.data_.data(), 0x88, elems / 2);
      const std::size_t metas = static_cast<std::size_t>(m.np_) * static_cast<std::size_t>(m.blocks());
      m.meta_ = aligned_buffer(metas * 6);
      auto* d = reinterpret_cast<std::uint8_t*>(m.data_.data());
      auto* scale = reinterpret_cast<float*>(m.meta_.data());
      auto* sums = reinterpret_cast<std::int16_t*>(m.meta_.data() + metas * 4);
      // Block by block: the block's values of every column into `buf` (read in the source's
      // sequential order), each column's scale chosen, then its nibbles and sum written.
      std::vector<float> buf(static_cast<std::size_t>(N) * int4_block);
      for (int k0 = 0; k0 < K; k0 += int4_block) {
        const int len = std::min(int4_block, K - k0);
        auto at = [&](int n, int i) -> float& { return buf[static_cast<std::size_t>(n) * int4_block + static_cast<std::size_t>(i)]; };
        if (src.n_stride <= src.k_stride) {
          for (int i = 0; i < len; ++i)
            for (int n = 0; n < N; ++n)
              at(n, i) = value(k0 + i, n);
        } else {
          for (int n = 0; n < N; ++n)
            for (int i = 0; i < len; ++i)
              at(n, i) = value(k0 + i, n);
        }
        for (int n = 0; n < N; ++n) {
          const std::size_t b = m.block_meta(k0, n);
          const float sc = int4_scale(&at(n, 0), len);
          scale[b] = sc > 0 ? sc : 1.0f;  // a block of zeros: q = 0 whatever the scale
          for (int i = 0; i < len; ++i) {
            const int q = static_cast<int>(std::clamp(std::nearbyint(at(n, i) / scale[b]), -7.0f, 7.0f));
            const std::size_t e = m.offset(k0 + i, n);
            std::uint8_t& byte = d[int4_byte(e)];
            const auto u = static_cast<std::uint8_t>(q + 8);
            byte = int4_high(e) ? static_cast<std::uint8_t>((byte & 0x0f) | (u << 4)) : static_cast<std::uint8_t>((byte & 0xf0) | u);
            sums[b] = static_cast<std::int16_t>(sums[b] + q);
          }
        }
      }
      for (std::size_t i = 0; i < metas; ++i)
        if (!(scale[i] > 0))
          scale[i] = 1.0f;  // padding columns
      break;
    }
  }
  return m;
}

float packed_matrix::at(int k, int n) const noexcept {
  const auto o = offset(k, n);
  switch (type_) {
    case weight_type::f32: return reinterpret_cast<const float*>(data_.data())[o];
    case weight_type::bf16: return engine::bf16_to_f32(reinterpret_cast<const std::uint16_t*>(data_.data())[o]);
    case weight_type::int8: return static_cast<float>(reinterpret_cast<const std::int8_t*>(data_.data())[o]) * scales()[n];
    case weight_type::int4: {
      const auto byte = reinterpret_cast<const std::uint8_t*>(data_.data())[int4_byte(o)];
      const int q = (int4_high(o) ? byte >> 4 : byte & 0x0f) - 8;
      return static_cast<float>(q) * block_scales()[block_meta(k, n)];
    }
  }
  return 0;
}

void packed_matrix::column(int n, float* out) const noexcept {
  for (int k = 0; k < k_; ++k)
    out[k] = at(k, n);
}

} // namespace lf::kernels
