#pragma once
/// A worker node's own /metrics page (its probe port): the gauges an autoscaler and the Gateway
/// API Inference Extension read from a model server, named as vLLM names them, for the node as a
/// whole, beside lorafleet's per-worker series. Pure C++.
///
///   vllm:num_requests_waiting{model_name}   requests in the node's schedulers' waiting queues
///   vllm:num_requests_running{model_name}   sequences in its running batches
///   vllm:kv_cache_usage_perc{model_name}    K/V blocks in use over all its pools (0-1, as vLLM)
///   vllm:lora_requests_info{running_lora_adapters, waiting_lora_adapters, max_lora}
///                                           value: the time (Unix seconds) of the snapshot, as
///                                           vLLM's; GIE reads the labels of the newest
///   lorafleet:node_ready                    1 while /ready says 200
///   lorafleet:worker_* {worker}             the same per worker, and its totals

#include <cstdint>
#include <string>
#include <vector>

namespace lf::cluster {

/// What one worker's serving loop reports (from worker::load_report), for the page.
struct worker_gauges {
  std::string name;                   ///< "NODE/1"
  std::uint32_t waiting = 0, running = 0;
  std::uint32_t free_blocks = 0, total_blocks = 0;
  std::vector<std::string> running_adapters, waiting_adapters;  ///< sorted, each once
  std::uint32_t max_adapters = 0;     ///< resident + loading adapters at most
  std::uint64_t finished = 0, failed = 0, cancelled = 0, preemptions = 0;
};

/// The page. `model` labels the vllm:* series; `now_unix_s` is lora_requests_info's value.
std::string render_node_metrics(const std::string& model, const std::vector<worker_gauges>& workers, bool ready,
                                double now_unix_s);

} // namespace lf::cluster
