#pragma once
/// Attention over a ragged batch whose K/V live in the paged kv_pool: each sequence contributes its
/// new tokens (a prefill chunk or one decode token) and reads its context through its block table.

#include <ATen/ATen.h>

#include <vector>

#include "cache/ids.hpp"
#include "cache/kv_pool.hpp"
#include "worker/engine/gpt2_model.hpp"

namespace lf::engine {

/// One sequence's share of a step. Its `count` new tokens are contiguous in the flat batch, in the
/// order of the step's sequence list.
struct paged_seq {
  std::int64_t start = 0;  ///< positions already in the cache
  std::int64_t count = 0;  ///< new tokens this step (>= 1)
  const std::vector<cache::block_id>* table = nullptr;  ///< covers positions [0, start + count)
};

/// attention_backend over a kv_pool. Decode tokens go through a kernel that reads K/V in place;
/// prefill chunks gather their context once per layer and use matrix products.
class paged_attention final : public attention_backend {
public:
  explicit paged_attention(cache::kv_pool& pool);

  /// Prepares the slots, block tables and causal masks of a step (shared by every layer).
  void begin_step(const std::vector<paged_seq>& seqs);

  at::Tensor attend(int layer, const at::Tensor& q, const at::Tensor& k,
                    const at::Tensor& v) override;

private:
  struct seq_info {
    std::int64_t row;         ///< first flat row of the sequence's new tokens
    std::int64_t start, count;
    std::size_t table_offset; ///< into tables_
    at::Tensor context_slots; ///< prefill only: slots of positions [0, start + count)
    at::Tensor masked;        ///< prefill only: [count, start + count] true where j > start + i
  };

  cache::kv_pool& pool_;
  std::uint32_t block_size_;
  float scale_;
  std::int64_t n_tokens_ = 0;
  at::Tensor new_slots_;              ///< [N] slot of every new token
  std::vector<std::int32_t> tables_;  ///< block tables of all sequences, back to back
  std::vector<seq_info> decode_, prefill_;
};

} // namespace lf::engine
