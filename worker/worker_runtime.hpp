#pragma once
/// Everything one worker serves with, built from its settings:
///
///   model_dir ──> cpu_weights (packed, dtype) ──> cpu_model (threads) ─┐
///   kv_cache_mb, kv_dtype ──> kernels::kv_cache (paged blocks) ────────┼─> cpu_runner ──> serving_loop
///   model_dir/vocab.json ──> tokenizer ────────────────────────────────┤
///   adapter_dir, registry copy ──> adapter_manager (cpu_lora payloads) ┘
///
/// On a GPU (settings.device) the CUDA engine takes the CPU engine's place. Every batching mode
/// runs on the same engine (the static ones are the serving loop's policies); nothing here
/// includes or links torch.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/adapter_registry.hpp"
#include "worker/serving_loop.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::worker {

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
  const text::tokenizer& tokenizer() const;

  /// The model's context window in tokens (GPT-2: n_positions).
  std::uint32_t context_window() const;

  /// What requests to this worker are validated against (validate_request): its context window
  /// and vocabulary, default policy limits.
  request_limits limits() const;

  /// Vocabulary size of the model.
  std::size_t vocab_size() const;

  /// KV blocks in the pool and tokens per block.
  std::uint32_t num_blocks() const;
  std::uint32_t block_size() const;

  /// The settings it was built with (num_blocks filled in).
  const worker_settings& settings() const;

  /// One line about the engine: mode, dtypes, K/V blocks, threads, kernel family and CPU features.
  std::string describe() const;

  /// Names of the LoRA adapters resident right now (from the adapter directory or the cluster's
  /// registry), most recently used first. Thread-safe.
  std::vector<std::string> adapters() const;

  /// Names of the adapters it can serve: the registry's live names, then those in its adapter_dir
  /// (engine::list_adapter_ids, listed again at most every 5 seconds). Thread-safe.
  std::vector<std::string> servable_adapters() const;

  /// Applies events of the cluster's adapter registry in order (a replay skips those it has; an
  /// event that does not follow is logged and skipped) and retires the versions they withdraw:
  /// each is evicted once no request holds it. `whole_log` (the router's entire log, sent when
  /// this worker registers): if the copy held here is not a prefix of it (the router started over
  /// without its log file), the copy is replaced and every version it knew is retired. Thread-safe.
  void apply_adapter_events(const std::vector<cache::adapter_event>& events, bool whole_log = false);
  /// Its copy of the cluster registry's log (what the routers sent it). Thread-safe.
  std::vector<cache::adapter_event> adapter_log() const;

  /// Starts loading `key` in the background if an adapter slot is free (never evicts); false if
  /// declined.
  bool prefetch_adapter(const std::string& key);

  /// Adapter slots neither resident nor loading.
  std::uint32_t adapter_slots_free() const;

  /// engine::check_peft_adapter against this worker's model and adapter cache budget: the source
  /// of `dir`, or std::runtime_error saying what is wrong with it.
  cache::adapter_source check_adapter(const std::string& dir, std::uint32_t max_rank) const;

  /// What each adapter's loads have cost here (adapter_manager::load_records).
  std::vector<cache::adapter_load_record> adapter_records() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::worker
