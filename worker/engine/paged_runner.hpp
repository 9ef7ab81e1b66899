#pragma once
/// The real step_engine: GPT-2 over the paged kv_pool. Some sequences prefill a chunk of their
/// prompt, others decode one token; every chunk reads and writes K/V through its block table, and
/// the whole batch is one forward. ATen stays inside the .cpp.

#include <memory>

#include "worker/engine/step_engine.hpp"

namespace lf::cache {
class kv_pool;
}

namespace lf::engine {

class gpt2_model;

/// Runs steps of `model` over `pool`. Not thread-safe: one worker thread drives it.
class paged_runner final : public step_engine {
public:
  /// Throws std::invalid_argument when the pool's shape does not match the model.
  paged_runner(const gpt2_model& model, cache::kv_pool& pool);
  ~paged_runner() override;

  void step(const std::vector<engine_chunk>& chunks) override;
  float* logits(std::size_t i) override;
  std::size_t vocab_size() const override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::engine
