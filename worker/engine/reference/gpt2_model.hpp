#pragma once
/// The GPT-2 forward pass over a flat batch of new tokens. How attention reads and stores K/V is
/// delegated to an attention_backend, so the same model serves the dense per-batch KV cache, the
/// no-cache recompute mode and the paged block pool.

#include <ATen/ATen.h>

#include "worker/engine/reference/weights.hpp"

namespace lf::engine {

/// Stores this step's K/V and computes attention for the new tokens of a step.
class attention_backend {
public:
  virtual ~attention_backend() = default;

  /// `q`, `k`, `v`: [N, H, D] for the N new tokens of the step (flattened over the batch, in the
  /// order the backend defined). Returns the attention output [N, H * D], contiguous.
  virtual at::Tensor attend(int layer, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v) = 0;
};

struct lora_batch;

/// Sets the intra-op thread count of ATen (and 1 inter-op thread); returns the count in effect.
int set_compute_threads(int n);

/// A loaded GPT-2 language model. Immutable after construction; `forward_hidden` may run from one
/// thread at a time per backend, and several threads may share one model.
class gpt2_model {
public:
  explicit gpt2_model(gpt2_weights weights);

  const gpt2_config& config() const noexcept { return w_.config; }
  const gpt2_weights& weights() const noexcept { return w_; }

  /// Runs every block over N new tokens. `ids` and `positions`: int64 [N]. Returns the
  /// final-layer-normed hidden states [N, C] in the compute dtype. With `lora`, the rows of each
  /// of its groups also get their adapter's low-rank delta on every module it adapts (the base
  /// projections still run once over all rows).
  at::Tensor forward_hidden(const at::Tensor& ids, const at::Tensor& positions,
                            attention_backend& attn, const lora_batch* lora = nullptr) const;

  /// float32 logits [M, V] for hidden rows [M, C].
  at::Tensor logits(const at::Tensor& hidden) const;

  /// The ATen scalar type activations use (kFloat or kBFloat16).
  at::ScalarType scalar_type() const noexcept { return w_.wte.scalar_type(); }

private:
  gpt2_weights w_;
  bool exact_gelu_ = false;
};

} // namespace lf::engine
