#include "gateway/common/vllm_metrics.hpp"

namespace lf::gateway {

namespace {

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

} // namespace

void write_vllm_gauges(prom_writer& w, const std::string& model, const vllm_load& load, double now_unix_s) {
  const auto labels = "model_name=\"" + prom_label(model) + "\"";
  w.head("vllm:num_requests_waiting", "gauge", "Requests waiting for a batch slot.");
  w.sample("vllm:num_requests_waiting", labels, load.waiting);
  w.head("vllm:num_requests_running", "gauge", "Sequences in the running batches.");
  w.sample("vllm:num_requests_running", labels, load.running);
  w.head("vllm:kv_cache_usage_perc", "gauge", "Fraction of K/V cache blocks in use (0-1).");
  w.sample("vllm:kv_cache_usage_perc", labels, load.total_blocks > 0 ? load.used_blocks / load.total_blocks : 0.0);
  w.head("vllm:lora_requests_info", "gauge", "Adapters of running and waiting requests; the value is the snapshot's time.");
  w.sample("vllm:lora_requests_info",
           "running_lora_adapters=\"" + prom_label(joined(load.running_adapters)) + "\",waiting_lora_adapters=\""
             + prom_label(joined(load.waiting_adapters)) + "\",max_lora=\"" + prom_number(load.max_lora) + "\"",
           now_unix_s);
}

} // namespace lf::gateway
