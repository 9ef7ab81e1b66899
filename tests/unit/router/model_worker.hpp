#pragma once
/// Workers over the tiny GPT-2 for the router tests that need a real model (LoRA adapters).

#include <memory>

#include "tests/unit/router/cluster_fixture.hpp"
#include "worker/worker_runtime.hpp"

namespace lf::test {

/// Settings of a small worker over the tiny model (context 256).
inline worker::worker_settings tiny_worker(std::uint32_t max_seqs = 8) {
  worker::worker_settings s;
  s.model_dir = tiny_model_dir();
  s.threads = 1;
  s.num_blocks = 256;
  s.block_size = 8;
  s.max_seqs = max_seqs;
  s.max_batched_tokens = 64;
  return s;
}

/// A worker over a worker_runtime built from `s`.
inline backend_factory model_worker(worker::worker_settings s) {
  return [s] { return actors::backend_of(std::make_shared<worker::worker_runtime>(s)); };
}

} // namespace lf::test
