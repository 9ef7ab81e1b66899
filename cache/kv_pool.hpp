#pragma once
/// The K/V tensors of every layer in one pool indexed by slot (slot = block * block_size + offset),
/// sized from a memory budget. The block_manager decides which slots a sequence owns; this class
/// only holds the numbers. One of the two places outside worker/engine/ that include ATen.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace lf::cache {

/// Shape of the pool.
struct kv_pool_config {
  int n_layer = 0;
  int n_head = 0;
  int head_dim = 0;
  std::uint32_t num_blocks = 0;
  std::uint32_t block_size = 16;
};

/// Per layer, K and V as float32 [num_blocks * block_size, n_head, head_dim].
class kv_pool {
public:
  /// Allocates (uninitialised) storage for every block.
  explicit kv_pool(const kv_pool_config& cfg);

  /// Bytes one block takes across all layers, K and V.
  static std::size_t bytes_per_block(int n_layer, int n_head, int head_dim, std::uint32_t block_size);

  /// How many blocks fit into `budget_bytes` (at least 1 unless the budget is below one block).
  static std::uint32_t blocks_for_budget(std::size_t budget_bytes, int n_layer, int n_head,
                                         int head_dim, std::uint32_t block_size);

  at::Tensor& k(int layer) { return k_[static_cast<std::size_t>(layer)]; }
  at::Tensor& v(int layer) { return v_[static_cast<std::size_t>(layer)]; }

  const kv_pool_config& config() const noexcept { return cfg_; }

  /// Total bytes held.
  std::size_t bytes() const noexcept;

private:
  kv_pool_config cfg_;
  std::vector<at::Tensor> k_, v_;
};

} // namespace lf::cache
