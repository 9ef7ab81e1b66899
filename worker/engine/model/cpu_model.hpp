#pragma once
/// GPT-2 on the CPU kernels: one forward over a ragged batch of new tokens (prefill chunks and
/// decode tokens of many sequences, several LoRA adapters) through the paged K/V store, on the
/// worker's one thread pool. No ATen.
///
///   embed (token column of the packed head or wte, + wpe)
///   per block: ln_1 -> c_attn (+ LoRA) -> paged attention -> c_proj (+ LoRA) added to x
///              ln_2 -> c_fc (+ LoRA) -> gelu -> mlp.c_proj (+ LoRA) added to x
///   ln_f and the LM head on the rows that want logits only
///
/// Every row is computed from its own token, its sequence's cached K/V and its adapter alone, in a
/// fixed order (see the kernels): its logits do not depend on the rest of the batch, on how its
/// prompt was chunked, or on the thread count.

#include <cstdint>
#include <memory>
#include <vector>

#include "worker/engine/kernels/attention.hpp"
#include "worker/engine/kernels/gemm.hpp"
#include "worker/engine/kernels/kv_cache.hpp"
#include "worker/engine/kernels/thread_pool.hpp"
#include "worker/engine/model/cpu_lora.hpp"
#include "worker/engine/model/cpu_weights.hpp"

namespace lf::engine {

/// The K/V store's shape for model `c`: `num_blocks` blocks of `block_size` tokens of type `t`.
kernels::kv_shape kv_shape_of(const gpt2_config& c, int block_size, std::uint32_t num_blocks, kernels::kv_type t);

/// Rows [begin, begin + count) of a step that use one adapter.
struct cpu_lora_run {
  const cpu_lora* adapter = nullptr;
  int begin = 0, count = 0;
};

/// What one forward computes.
struct cpu_step {
  std::vector<std::int32_t> tokens;     ///< N new tokens
  std::vector<std::int32_t> positions;  ///< their positions
  std::vector<kernels::attn_seq> seqs;  ///< each sequence's rows (contiguous) and block table
  std::vector<int> logit_rows;          ///< rows whose next-token logits are wanted, in output order
  std::vector<cpu_lora_run> lora;       ///< adapters of row runs; rows in none use the base model
};

/// See the file comment. One thread drives it (the worker's loop); not copyable.
class cpu_model {
public:
  /// Owns the weights and a pool of `threads` compute threads.
  cpu_model(cpu_weights w, int threads);

  const gpt2_config& config() const noexcept { return w_.config; }
  const cpu_weights& weights() const noexcept { return w_; }
  int threads() const noexcept { return pool_.size(); }
  kernels::thread_pool& pool() noexcept { return pool_; }

  /// Throws std::invalid_argument unless `kv` has the model's layers, heads and head size.
  void check_kv(const kernels::kv_cache& kv) const;

  /// Runs `s` over `kv` (its layers and heads must match the model). Throws std::invalid_argument
  /// for a token outside the vocabulary or a position outside the context.
  void forward(const cpu_step& s, kernels::kv_cache& kv);

  /// After forward(): logits of logit_rows[i] (vocab_size() floats; the caller may modify them).
  float* logits(std::size_t i) noexcept { return logits_.data() + i * vocab_padded(); }
  std::size_t vocab_size() const noexcept { return static_cast<std::size_t>(w_.config.vocab_size); }

private:
  std::size_t vocab_padded() const noexcept { return static_cast<std::size_t>(w_.lm_head.n_padded()); }
  /// y[rows] (+)= x[rows] W + b over the step's rows, plus each run's LoRA delta for (layer, m).
  void linear(const kernels::packed_matrix& w, const std::vector<float>& bias, const float* x,
              std::size_t ldx, float* y, std::size_t ldy, int rows, bool accumulate, int layer,
              lora_module m, const std::vector<cpu_lora_run>& lora);
  /// fn(begin, end) over [0, rows), on the pool when there are enough rows to pay for it.
  template <class F>
  void rows_parallel(int rows, F&& fn) {
    if (rows >= 4)
      pool_.parallel_for(static_cast<std::size_t>(rows), fn);
    else
      fn(std::size_t{0}, static_cast<std::size_t>(rows));
  }

  cpu_weights w_;
  kernels::thread_pool pool_;
  kernels::gemm_workspace ws_;
  std::vector<float> x_, h_, qkv_, att_, f_, last_, logits_;
};

} // namespace lf::engine
