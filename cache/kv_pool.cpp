#include "cache/kv_pool.hpp"

#include <stdexcept>

namespace lf::cache {

kv_pool::kv_pool(const kv_pool_config& cfg) : cfg_(cfg) {
  if (cfg.n_layer <= 0 || cfg.n_head <= 0 || cfg.head_dim <= 0 || cfg.num_blocks == 0
      || cfg.block_size == 0)
    throw std::invalid_argument("kv_pool: every dimension must be positive");
  const auto slots = static_cast<std::int64_t>(cfg.num_blocks) * cfg.block_size;
  for (int l = 0; l < cfg.n_layer; ++l) {
    k_.push_back(at::empty({slots, cfg.n_head, cfg.head_dim}, at::kFloat));
    v_.push_back(at::empty({slots, cfg.n_head, cfg.head_dim}, at::kFloat));
  }
}

std::size_t kv_pool::bytes_per_block(int n_layer, int n_head, int head_dim, std::uint32_t block_size) {
  return std::size_t{2} * static_cast<std::size_t>(n_layer) * static_cast<std::size_t>(n_head)
         * static_cast<std::size_t>(head_dim) * block_size * sizeof(float);
}

std::uint32_t kv_pool::blocks_for_budget(std::size_t budget_bytes, int n_layer, int n_head,
                                         int head_dim, std::uint32_t block_size) {
  auto per = bytes_per_block(n_layer, n_head, head_dim, block_size);
  return per == 0 ? 0 : static_cast<std::uint32_t>(budget_bytes / per);
}

std::size_t kv_pool::bytes() const noexcept {
  return bytes_per_block(cfg_.n_layer, cfg_.n_head, cfg_.head_dim, cfg_.block_size) * cfg_.num_blocks;
}

} // namespace lf::cache
