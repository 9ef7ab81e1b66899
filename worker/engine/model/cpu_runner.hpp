#pragma once
/// The serving loop's step_engine over the CPU engine: a step's chunks (prefill chunks and decode
/// tokens with their block tables and adapters) become one cpu_model forward over the paged K/V
/// store. Rows are ordered by adapter so each adapter's rows are one contiguous run.

#include <memory>
#include <string>
#include <vector>

#include "cache/adapter_manager.hpp"
#include "worker/engine/model/cpu_model.hpp"
#include "worker/engine/model/step_engine.hpp"

namespace lf::engine {

/// Runs steps of `model` over `kv`. Not thread-safe: the worker's loop thread drives it.
class cpu_runner final : public step_engine {
public:
  /// `adapters` finds a chunk's adapter weights (adapter_manager::lookup()); without it only
  /// base-model chunks run. Throws std::invalid_argument when the store does not fit the model.
  cpu_runner(cpu_model& model, kernels::kv_cache& kv, cache::adapter_lookup_fn adapters = {});

  /// Throws std::runtime_error, running nothing, if a chunk's adapter is not loaded, and
  /// std::invalid_argument for a chunk outside the context or its block table.
  void step(const std::vector<engine_chunk>& chunks) override;
  float* logits(std::size_t i) override;
  std::size_t vocab_size() const override { return model_.vocab_size(); }
  /// Every row's logits are computed from its own position alone (cpu_model), so the rows of a
  /// chunk's last positions are those a decode of each position would give.
  bool multi_logits() const override { return true; }
  /// On the model's thread pool.
  void for_rows(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override;
  /// "lf-kv1 <type> L.. H.. D.. B.. <compute dtype> wpe:<hash>": the store's layout and the
  /// model (its position embeddings' FNV-1a hash stands for its weights).
  std::string kv_format() const override { return format_; }
  std::size_t kv_block_bytes() const override;
  void read_kv(const std::vector<cache::block_id>& blocks, std::string& out) const override;
  void write_kv(const std::vector<cache::block_id>& blocks, std::string_view bytes) override;

private:
  cpu_model& model_;
  kernels::kv_cache& kv_;
  cache::adapter_lookup_fn adapters_;
  std::string format_;
  cpu_step step_;
  std::vector<std::int32_t> tables_;
  std::vector<std::size_t> logit_index_;  ///< chunk's logits row -> model output row
};

} // namespace lf::engine
