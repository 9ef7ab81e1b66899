#pragma once
/// The decode-step attention kernel of the paged KV cache: one query token attends over its
/// sequence's cached positions, reading K/V in place through the block table (no gather copy).
/// Plain C++ on float pointers, so it is tested against a naive reference without ATen.

#include <cstdint>

namespace lf::engine {

/// Where one layer's K/V pool lives: slot s, head h starts at (s * n_head + h) * head_dim.
struct kv_layer_view {
  const float* k = nullptr;
  const float* v = nullptr;
  int n_head = 0;
  int head_dim = 0;
  std::uint32_t block_size = 0;
};

/// out[head_dim] = softmax(scale * q . K[0..len)) . V[0..len) for one head, positions mapped to
/// slots by `block_table` (position p -> block_table[p / block_size] * block_size + p % block_size).
/// `scratch` must hold `len` floats.
void paged_decode_head(const kv_layer_view& kv, const std::int32_t* block_table, std::int64_t len,
                       int head, const float* q, float scale, float* out, float* scratch);

} // namespace lf::engine
