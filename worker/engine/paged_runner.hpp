#pragma once
/// The real step_engine: GPT-2 over the paged kv_pool. Some sequences prefill a chunk of their
/// prompt, others decode one token; every chunk reads and writes K/V through its block table, and
/// the whole batch is one forward. Chunks may name different LoRA adapters (or none): the runner
/// orders the rows by adapter so each adapter's rows are one contiguous run, and the model adds
/// each adapter's delta to its rows only. ATen stays inside the .cpp.

#include <memory>

#include "cache/adapter_manager.hpp"
#include "worker/engine/step_engine.hpp"

namespace lf::cache {
class kv_pool;
}

namespace lf::engine {

class gpt2_model;

/// Runs steps of `model` over `pool`. Not thread-safe: one worker thread drives it.
class paged_runner final : public step_engine {
public:
  /// Throws std::invalid_argument when the pool's shape does not match the model. `adapters`
  /// finds the weights of a chunk's adapter (e.g. cache::adapter_manager::lookup()); without it
  /// only base-model chunks run.
  paged_runner(const gpt2_model& model, cache::kv_pool& pool,
               cache::adapter_lookup_fn adapters = {});
  ~paged_runner() override;

  /// Throws std::runtime_error, running nothing, if a chunk's adapter is not loaded.
  void step(const std::vector<engine_chunk>& chunks) override;
  float* logits(std::size_t i) override;
  std::size_t vocab_size() const override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::engine
