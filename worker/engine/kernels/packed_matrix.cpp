#include "worker/engine/kernels/packed_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "worker/engine/kernels/common/half.hpp"
namespace lf::kernels {

std::string_view to_string(weight_type t) noexcept {
  switch (t) {
    case weight_type::f32: return "f32";
    case weight_type::bf16: return "bf16";
    case weight_type::int8: return "int8";
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

namespace {

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
  const int g = group_of(type);
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
      for_each_element(K, N, src, [&](int k, int n) { d[m.offset(k, n)] = engine::f32_to_bf16(value(k, n)); });
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
  }
  return m;
}

float packed_matrix::at(int k, int n) const noexcept {
  const auto o = offset(k, n);
  switch (type_) {
    case weight_type::f32: return reinterpret_cast<const float*>(data_.data())[o];
    case weight_type::bf16: return engine::bf16_to_f32(reinterpret_cast<const std::uint16_t*>(data_.data())[o]);
    case weight_type::int8: return static_cast<float>(reinterpret_cast<const std::int8_t*>(data_.data())[o]) * scales()[n];
  }
  return 0;
}

void packed_matrix::column(int n, float* out) const noexcept {
  for (int k = 0; k < k_; ++k)
    out[k] = at(k, n);
}

} // namespace lf::kernels
