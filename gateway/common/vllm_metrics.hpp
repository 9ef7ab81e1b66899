#pragma once
/// vLLM's model-server gauges, the names the Gateway API Inference Extension's endpoint picker and
/// vLLM's autoscaling examples read from a model server's /metrics, written for whatever serves
/// as one: a worker node's probe port (its workers) or `serve`'s HTTP gateway (its router queue and
/// workers). Pure C++.
///
///   vllm:num_requests_waiting{model_name}   requests waiting for a batch slot
///   vllm:num_requests_running{model_name}   sequences in the running batches
///   vllm:kv_cache_usage_perc{model_name}    K/V blocks in use over all pools (0-1, as vLLM)
///   vllm:lora_requests_info{running_lora_adapters, waiting_lora_adapters, max_lora}
///                                           value: the snapshot's time (Unix seconds), as vLLM's;
///                                           GIE reads the labels of the newest

#include <cstdint>
#include <set>
#include <string>

#include "core/prometheus_text.hpp"

namespace lf::gateway {

/// K/V blocks in use of a worker's figures (any struct with free_blocks and total_blocks; a
/// report that says more free than total counts as none in use).
template <class Worker>
std::uint32_t blocks_in_use(const Worker& w) {
  return w.total_blocks - (w.free_blocks < w.total_blocks ? w.free_blocks : w.total_blocks);
}

/// What the gauges say, summed over the workers behind one endpoint.
struct vllm_load {
  double waiting = 0, running = 0;
  double used_blocks = 0, total_blocks = 0;
  double max_lora = 0;  ///< adapters the workers may hold at once, summed
  std::set<std::string> running_adapters, waiting_adapters;

  /// Adds one worker's figures (any struct with waiting, running, free_blocks, total_blocks,
  /// max_adapters, running_adapters, waiting_adapters: a load report or a node's gauges).
  template <class Worker>
  void add(const Worker& w) {
    waiting += w.waiting;
    running += w.running;
    used_blocks += blocks_in_use(w);
    total_blocks += w.total_blocks;
    max_lora += w.max_adapters;
    running_adapters.insert(w.running_adapters.begin(), w.running_adapters.end());
    waiting_adapters.insert(w.waiting_adapters.begin(), w.waiting_adapters.end());
  }
};

/// Writes the four families above to `w`, labelled with `model`.
void write_vllm_gauges(prom_writer& w, const std::string& model, const vllm_load& load, double now_unix_s);

} // namespace lf::gateway
