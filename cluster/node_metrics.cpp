#include "cluster/node_metrics.hpp"

#include "core/prometheus_text.hpp"
#include "gateway/common/vllm_metrics.hpp"

namespace lf::cluster {

std::string render_node_metrics(const std::string& model, const std::vector<worker_gauges>& workers, bool ready,
                                double now_unix_s) {
  prom_writer w;
  gateway::vllm_load load;
  for (const auto& g : workers)
    load.add(g);
  gateway::write_vllm_gauges(w, model, load, now_unix_s);
  w.head("lorafleet:node_ready", "gauge", "1 while the node takes work (every worker registered, not draining).");
  w.sample("lorafleet:node_ready", "", ready ? 1 : 0);

  const auto per_worker = [&](const char* name, const char* type, const char* help, auto field) {
    const std::string full = std::string("lorafleet:worker_") + name;
    w.head(full, type, help);
    for (const auto& g : workers)
      w.sample(full, "worker=\"" + prom_label(g.name) + "\"", static_cast<double>(field(g)));
  };
  using wg = worker_gauges;
  per_worker("num_requests_waiting", "gauge", "Requests waiting in the worker's scheduler.",
             [](const wg& g) { return g.waiting; });
  per_worker("num_requests_running", "gauge", "Sequences in the worker's running batch.",
             [](const wg& g) { return g.running; });
  per_worker("kv_blocks_used", "gauge", "K/V cache blocks in use.", [](const wg& g) { return gateway::blocks_in_use(g); });
  per_worker("kv_blocks_total", "gauge", "K/V cache blocks in the pool.", [](const wg& g) { return g.total_blocks; });
  per_worker("requests_finished_total", "counter", "Requests the worker finished.", [](const wg& g) { return g.finished; });
  per_worker("requests_failed_total", "counter", "Requests that failed on the worker.", [](const wg& g) { return g.failed; });
  per_worker("requests_cancelled_total", "counter", "Requests cancelled on the worker (moves included).",
             [](const wg& g) { return g.cancelled; });
  per_worker("num_preemptions_total", "counter", "Sequences preempted for lack of K/V blocks.",
             [](const wg& g) { return g.preemptions; });
  return w.take();
}

} // namespace lf::cluster
