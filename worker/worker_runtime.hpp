#pragma once
/// Everything one worker serves with, built from a model directory and a few settings:
///
///   model_dir ──> gpt2_weights ──> gpt2_model ─┐
///   kv_budget_mb ──> kv_pool (blocks_for_budget)├─> paged_runner ──> serving_loop
///   model_dir/vocab.json ──> tokenizer ────────┤
///   adapter_dir ──> adapter_manager (LoRA) ────┘
///
/// The header is torch-free (pimpl), so actor code can hold a runtime without paying for the
/// torch headers; only worker_runtime.cpp includes ATen.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/serving_loop.hpp"

namespace lf::engine {
class tokenizer;
}

namespace lf::worker {

/// How to build a worker. Defaults suit a small CPU box.
struct worker_settings {
  std::string model_dir;        ///< config.json + model.safetensors (Hugging Face layout)
  std::string tokenizer_dir;    ///< vocab.json + merges.txt; empty => model_dir
  int threads = 0;              ///< ATen intra-op threads; 0 => leave as is. Process-wide!
  int blas_threads = 0;         ///< OpenBLAS threads (engine/blas_threads.hpp); 0 => leave as is. Process-wide!
  std::string dtype = "f32";    ///< compute dtype: "f32", "bf16" or "int8" (weights)
  std::size_t kv_budget_mb = 256;  ///< K/V pool size; turned into blocks by kv_pool
  std::uint32_t num_blocks = 0;    ///< > 0 overrides kv_budget_mb (tests)
  std::uint32_t block_size = 16;   ///< tokens per KV block
  std::uint32_t max_seqs = 64;     ///< running sequences per step at most
  std::uint32_t max_batched_tokens = 512;  ///< tokens per step at most (prefill chunking)
  std::uint32_t watermark_blocks = 0;      ///< see scheduler_config
  bool prefix_cache = true;
  batching_mode mode = batching_mode::continuous;
  std::uint32_t static_batch = 8;          ///< static modes: batch size
  std::uint64_t seed = 0;                  ///< fallback seed base for unseeded requests
  /// LoRA adapters: PEFT directories under this root, named by their path relative to it
  /// ("shakespeare", "styles/kjv"), loaded on first use. Empty => base model only (requests that
  /// name an adapter end with unknown_adapter).
  std::string adapter_dir;
  std::size_t adapter_budget_mb = 256;  ///< resident adapter weights at most
  std::uint32_t max_adapters = 64;      ///< resident + loading adapters at most
};

/// Checks settings that need no files: returns an error message or an empty string.
std::string check_settings(const worker_settings& s);

/// Owns the model, the K/V pool, the step engine, the tokenizer and the serving loop of one
/// worker. The loop thread starts in the constructor; the destructor cancels what is left and
/// joins it. Not copyable or movable (the loop points into the runtime).
class worker_runtime {
public:
  /// Loads everything. Throws std::invalid_argument for bad settings and std::runtime_error
  /// (naming the file) for a missing or broken model or tokenizer.
  explicit worker_runtime(const worker_settings& s);
  ~worker_runtime();

  worker_runtime(const worker_runtime&) = delete;
  worker_runtime& operator=(const worker_runtime&) = delete;

  /// The serving loop (thread-safe submit / cancel / load).
  serving_loop& loop();

  /// The tokenizer the loop streams text with (thread-safe).
  const engine::tokenizer& tokenizer() const;

  /// The model's context window in tokens (GPT-2: n_positions).
  std::uint32_t context_window() const;

  /// Vocabulary size of the model.
  std::size_t vocab_size() const;

  /// KV blocks in the pool and tokens per block.
  std::uint32_t num_blocks() const;
  std::uint32_t block_size() const;

  /// The settings it was built with (num_blocks filled in).
  const worker_settings& settings() const;

  /// Names of the LoRA adapters resident right now, most recently used first (empty without an
  /// adapter_dir). Thread-safe.
  std::vector<std::string> adapters() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::worker
