#include "worker/engine/kernels/kv_cache.hpp"

#include <cstring>
#include <stdexcept>

namespace lf::kernels {

std::string_view to_string(kv_type t) noexcept {
  switch (t) {
    case kv_type::f32: return "f32";
    case kv_type::bf16: return "bf16";
    case kv_type::int8: return "int8";
  }
  return "bf16";
}

std::optional<kv_type> parse_kv_type(std::string_view s) noexcept {
  for (auto t : {kv_type::f32, kv_type::bf16, kv_type::int8})
    if (to_string(t) == s)
      return t;
  return std::nullopt;
}

std::size_t kv_cache::bytes_per_block(const kv_shape& s) noexcept {
  const std::size_t elem = s.type == kv_type::f32 ? 4 : s.type == kv_type::bf16 ? 2 : 1;
  std::size_t per_layer = 2 * static_cast<std::size_t>(s.heads) * s.head_dim * s.block_size * elem;
  if (s.type == kv_type::int8)
    per_layer += 2 * static_cast<std::size_t>(s.heads) * s.block_size * 4;
  return per_layer * static_cast<std::size_t>(s.layers);
}

std::uint32_t kv_cache::blocks_for_budget(std::size_t budget, kv_shape s) noexcept {
  const auto per = bytes_per_block(s);
  return per == 0 ? 0 : static_cast<std::uint32_t>(budget / per);
}

kv_cache::kv_cache(const kv_shape& s) : shape_(s) {
  if (s.layers <= 0 || s.heads <= 0 || s.head_dim <= 0 || s.block_size <= 0 || s.num_blocks == 0)
    throw std::invalid_argument("kv_cache: every dimension must be positive");
  for (int l = 0; l < s.layers; ++l) {
    kv_layer probe{s.type, s.heads, s.head_dim, s.block_size, nullptr, nullptr, nullptr, nullptr};
    const std::size_t per = probe.head_bytes() * static_cast<std::size_t>(s.heads) * s.num_blocks;
    k_.emplace_back(per);
    v_.emplace_back(per);
    if (s.type == kv_type::int8) {
      const std::size_t scales = static_cast<std::size_t>(s.heads) * s.block_size * s.num_blocks * 4;
      ks_.emplace_back(scales);
      vs_.emplace_back(scales);
    }
  }
}

kv_layer kv_cache::layer(int l) const noexcept {
  const auto i = static_cast<std::size_t>(l);
  const bool q = shape_.type == kv_type::int8;
  return {shape_.type, shape_.heads, shape_.head_dim, shape_.block_size, k_[i].data(), v_[i].data(),
          q ? reinterpret_cast<float*>(ks_[i].data()) : nullptr,
          q ? reinterpret_cast<float*>(vs_[i].data()) : nullptr};
}

namespace {

/// The four regions of block `b` in layer `l`: K, V (head_bytes per head), then the K and V
/// scales of int8 (block_size floats per head). fn(pointer, bytes) visits them in that order.
template <class F>
void for_block_regions(const kv_layer& l, std::uint32_t b, F&& fn) {
  const std::size_t heads = static_cast<std::size_t>(l.heads);
  const std::size_t kv_bytes = l.head_bytes() * heads;
  fn(l.k + b * kv_bytes, kv_bytes);
  fn(l.v + b * kv_bytes, kv_bytes);
  if (l.type == kv_type::int8) {
    const std::size_t n = heads * static_cast<std::size_t>(l.block_size);
    fn(reinterpret_cast<std::byte*>(l.k_scale + b * n), n * sizeof(float));
    fn(reinterpret_cast<std::byte*>(l.v_scale + b * n), n * sizeof(float));
  }
}

} // namespace

void kv_cache::read_block(std::uint32_t b, std::byte* out) const {
  if (b >= shape_.num_blocks)
    throw std::out_of_range("kv_cache::read_block: block outside the pool");
  for (int l = 0; l < shape_.layers; ++l)
    for_block_regions(layer(l), b, [&](const std::byte* p, std::size_t n) {
      std::memcpy(out, p, n);
      out += n;
    });
}

void kv_cache::write_block(std::uint32_t b, const std::byte* in) {
  if (b >= shape_.num_blocks)
    throw std::out_of_range("kv_cache::write_block: block outside the pool");
  for (int l = 0; l < shape_.layers; ++l)
    for_block_regions(layer(l), b, [&](std::byte* p, std::size_t n) {
      std::memcpy(p, in, n);
      in += n;
    });
}

} // namespace lf::kernels
