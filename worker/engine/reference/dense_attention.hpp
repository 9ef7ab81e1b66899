#pragma once
/// Attention for a rectangular batch [B, T] with a dense per-batch K/V cache: the synchronous
/// batching of the course material (left padding + attention mask + position ids). Also serves the
/// no-KV-cache mode: a fresh cache per step over the whole sequence.

#include <ATen/ATen.h>

#include <vector>

#include "worker/engine/reference/gpt2_model.hpp"

namespace lf::engine {

/// K/V for every layer as [B, H, capacity, D] tensors, filled left to right one step at a time.
class dense_kv_cache final : public attention_backend {
public:
  /// Allocates room for `capacity` positions of `batch` rows.
  dense_kv_cache(const gpt2_config& cfg, std::int64_t batch, std::int64_t capacity,
                 at::ScalarType type);

  /// Prepares a step of `t` new tokens per row. `key_mask`: bool [B, length() + t], true where the
  /// position holds a real token (false for left padding). New tokens are laid out row-major,
  /// token i of row b at flat index b * t + i.
  void begin_step(std::int64_t t, const at::Tensor& key_mask);

  at::Tensor attend(int layer, const at::Tensor& q, const at::Tensor& k,
                    const at::Tensor& v) override;

  /// Commits the step: length() grows by t.
  void end_step();

  /// Positions filled so far.
  std::int64_t length() const noexcept { return len_; }
  std::int64_t capacity() const noexcept { return cap_; }
  std::int64_t batch() const noexcept { return batch_; }

private:
  std::int64_t batch_, cap_, heads_, head_dim_;
  std::int64_t len_ = 0, step_t_ = 0;
  double scale_;
  std::vector<at::Tensor> k_, v_;
  at::Tensor neg_mask_;  ///< [B, 1, t, len + t] true where attention is forbidden; undefined if none
};

} // namespace lf::engine
