#include "gateway/openai/metrics_export.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "core/prometheus_text.hpp"
#include "core/worker_state.hpp"
#include "gateway/common/vllm_metrics.hpp"

#include <nlohmann/json.hpp>

namespace lf::gateway {

using json = nlohmann::json;

namespace {

/// Labels of a worker's series; `x` is a worker_metrics or a worker_load.
template <class T>
std::string worker_labels(const T& x) {
  return "worker=\"" + prom_label(x.name) + "\",worker_id=\"" + std::to_string(x.wid.value()) + "\"";
}

std::uint32_t blocks_used(const actors::worker_load& l) { return blocks_in_use(l); }

json hist_json(const histogram& h) {
  return {{"bounds", h.bounds}, {"counts", h.counts}, {"sum", h.sum}, {"count", h.count}};
}

serve_metrics merged(const actors::router_stats& rs) {
  serve_metrics all;
  for (const auto& m : rs.metrics)
    all.merge(m.m);
  return all;
}

} // namespace

std::string render_prometheus(const actors::router_stats& rs, const http_side& http) {
  prom_writer w;
  const std::string p = "lorafleet:";
  auto ends_total = [](std::string_view m) { return m.size() > 6 && m.substr(m.size() - 6) == "_total"; };
  for (const auto& f : actors::router_fields)
    if (f.metric != nullptr && ends_total(f.metric)) {
      w.head(p + f.metric, "counter", f.help);
      w.sample(p + f.metric, "", f.of(rs));
    }
  // Per rate-limited key of this gateway process (labelled by the key's name, bounded by the
  // key file).
  auto key_counter = [&](const char* name, const char* help, std::uint64_t key_rate_counts::*field) {
    if (http.keys.empty())
      return;
    w.head(p + name, "counter", help);
    for (const auto& [key, c] : http.keys)
      w.sample(p + name, "key=\"" + prom_label(key) + "\"", static_cast<double>(c.*field));
  };
  key_counter("key_requests_admitted_total", "Requests a rate-limited key was charged for.", &key_rate_counts::admitted);
  key_counter("key_requests_rate_limited_total", "Requests refused by their key's rate limits.",
              &key_rate_counts::rate_limited);
  key_counter("key_tokens_charged_total", "Tokens (prompt + max_tokens) charged to a rate-limited key.",
              &key_rate_counts::tokens);
  auto gauge = [&](const char* name, const char* help, double v) {
    w.head(p + name, "gauge", help);
    w.sample(p + name, "", v);
  };
  for (const auto& f : actors::router_fields)
    if (f.metric != nullptr && !ends_total(f.metric))
      gauge(f.metric, f.help, f.of(rs));
  gauge("http_requests_live", "HTTP requests in flight at this gateway.", static_cast<double>(http.live));

  // Per worker, from the router's view of the requests it served.
  w.head(p + "request_success_total", "counter", "Finished requests by finish reason.");
  for (const auto& m : rs.metrics)
    for (const auto& [reason, n] : m.m.finished)
      w.sample(p + "request_success_total", worker_labels(m) + ",finished_reason=\"" + prom_label(reason) + "\"",
               static_cast<double>(n));
  w.head(p + "request_errors_total", "counter", "Requests that ended with an error, by error code.");
  for (const auto& m : rs.metrics)
    for (const auto& [code, n] : m.m.errors)
      w.sample(p + "request_errors_total", worker_labels(m) + ",code=\"" + prom_label(code) + "\"", static_cast<double>(n));
  auto per_worker = [&](const char* name, const char* help, auto field) {
    w.head(p + name, "counter", help);
    for (const auto& m : rs.metrics)
      w.sample(p + name, worker_labels(m), static_cast<double>(field(m.m)));
  };
  per_worker("prompt_tokens_total", "Prompt tokens of finished requests.",
             [](const serve_metrics& m) { return m.prompt_tokens; });
  per_worker("generation_tokens_total", "Generated tokens of finished requests.",
             [](const serve_metrics& m) { return m.generation_tokens; });
  per_worker("prefix_cache_hit_tokens_total", "Prompt tokens served by the prefix cache.",
             [](const serve_metrics& m) { return m.cached_tokens; });
  auto hist = [&](const char* name, const char* help, auto field) {
    w.head(p + name, "histogram", help);
    for (const auto& m : rs.metrics)
      w.hist(p + name, worker_labels(m), field(m.m));
  };
  hist("request_queue_time_seconds", "Time from acceptance to first scheduling on a worker.",
       [](const serve_metrics& m) -> const histogram& { return m.queue_seconds; });
  hist("time_to_first_token_seconds", "Time from acceptance to the first token.",
       [](const serve_metrics& m) -> const histogram& { return m.ttft_seconds; });
  hist("time_per_output_token_seconds", "Mean time per generated token after the first.",
       [](const serve_metrics& m) -> const histogram& { return m.tpot_seconds; });
  hist("e2e_request_latency_seconds", "Time from acceptance to the terminal reply.",
       [](const serve_metrics& m) -> const histogram& { return m.e2e_seconds; });

  // Per worker ever registered: 1 on the series of its state, 0 on the others.
  w.head(p + "worker_state", "gauge", "1 for the worker's state (serving, draining, drained, lost), 0 for the others.");
  for (const auto& m : rs.metrics) {
    if (m.wid.value() == 0)
      continue;
    for (int s = 0; s <= static_cast<int>(last_worker_state); ++s) {
      const auto st = static_cast<worker_state>(s);
      w.sample(p + "worker_state", worker_labels(m) + ",state=\"" + std::string(to_string(st)) + "\"",
               m.state == st ? 1 : 0);
    }
  }

  // Per live worker, from its last load report.
  auto load_metric = [&](const char* name, const char* type, const char* help, auto field) {
    w.head(p + name, type, help);
    for (const auto& l : rs.loads)
      w.sample(p + name, worker_labels(l), static_cast<double>(field(l)));
  };
  using wl = actors::worker_load;
  load_metric("num_requests_running", "gauge", "Sequences in the worker's running batch.",
              [](const wl& l) { return l.running; });
  load_metric("num_requests_waiting", "gauge", "Requests waiting in the worker's scheduler.",
              [](const wl& l) { return l.waiting; });
  load_metric("kv_blocks_used", "gauge", "K/V cache blocks in use.", blocks_used);
  load_metric("kv_blocks_total", "gauge", "K/V cache blocks in the pool.", [](const wl& l) { return l.total_blocks; });
  load_metric("kv_cache_usage_perc", "gauge", "Fraction of K/V blocks in use (0-1).", [](const wl& l) {
    return l.total_blocks ? double(blocks_used(l)) / l.total_blocks : 0.0;
  });
  load_metric("num_preemptions_total", "counter", "Sequences preempted for lack of K/V blocks.",
              [](const wl& l) { return l.preemptions; });
  load_metric("spec_decode_num_draft_tokens_total", "counter", "Tokens proposed by speculative decoding and verified.",
              [](const wl& l) { return l.spec_proposed; });
  load_metric("spec_decode_num_accepted_tokens_total", "counter", "Proposed tokens that verification accepted.",
              [](const wl& l) { return l.spec_accepted; });
  load_metric("spec_decode_num_verifications_total", "counter", "Decode rows that carried proposed tokens.",
              [](const wl& l) { return l.spec_rows; });
  load_metric("spec_decode_num_emitted_tokens_total", "counter", "Tokens emitted by rows that carried proposals.",
              [](const wl& l) { return l.spec_emitted; });
  load_metric("spec_decode_num_draft_model_tokens_total", "counter",
              "Proposed tokens that came from the worker's draft model (the rest from n-gram lookup).",
              [](const wl& l) { return l.spec_draft_tokens; });
  load_metric("spec_decode_draft_model_seconds_total", "counter", "Time the worker's draft model spent proposing.",
              [](const wl& l) { return l.spec_draft_ms / 1000.0; });
  load_metric("spec_decode_draft_acceptance_rate", "gauge", "Accepted / proposed tokens so far (0-1).",
              [](const wl& l) { return l.spec_proposed ? double(l.spec_accepted) / double(l.spec_proposed) : 0.0; });
  load_metric("adapter_loads_total", "counter", "LoRA adapters loaded.", [](const wl& l) { return l.adapter_loads; });
  load_metric("adapters_resident", "gauge", "LoRA adapters resident now.", [](const wl& l) { return l.adapters.size(); });
  // Per (worker, adapter): where each adapter is resident and what loading it cost there.
  w.head(p + "adapter_resident", "gauge", "1 while the worker holds the adapter.");
  for (const auto& l : rs.loads)
    for (const auto& a : l.adapters)
      w.sample(p + "adapter_resident", worker_labels(l) + ",adapter=\"" + prom_label(a) + "\"", 1);
  w.head(p + "adapter_loads_by_name_total", "counter", "Loads of the adapter on the worker (reloads included).");
  for (const auto& l : rs.loads)
    for (const auto& r : l.loads_by_adapter)
      w.sample(p + "adapter_loads_by_name_total", worker_labels(l) + ",adapter=\"" + prom_label(r.name) + "\"",
               static_cast<double>(r.loads));
  w.head(p + "adapter_last_load_seconds", "gauge", "How long the adapter's last load on the worker took.");
  for (const auto& l : rs.loads)
    for (const auto& r : l.loads_by_adapter)
      if (r.loads > 0)
        w.sample(p + "adapter_last_load_seconds", worker_labels(l) + ",adapter=\"" + prom_label(r.name) + "\"",
                 r.last_load_ms / 1000.0);
  // vLLM's model-server gauges for the whole of what this gateway serves, so a `serve` pod can
  // stand behind an InferencePool (docs/deploy.md): the router's queue waits too.
  vllm_load load;
  load.waiting = static_cast<double>(rs.queued);
  for (const auto& l : rs.loads)
    load.add(l);
  write_vllm_gauges(w, http.model, load, static_cast<double>(http.time_ms) / 1000.0);
  return w.take();
}

std::string render_stats_json(const actors::router_stats& rs, const http_side& http) {
  const auto all = merged(rs);
  json router{{"prompt_tokens", all.prompt_tokens}, {"generation_tokens", all.generation_tokens},
              {"cached_tokens", all.cached_tokens}};
  for (const auto& f : actors::router_fields)
    if (f.u64 != nullptr)
      router[f.name] = rs.*f.u64;
    else
      router[f.name] = rs.*f.u32;
  std::map<std::uint64_t, worker_state> states;
  for (const auto& m : rs.metrics)
    states[m.wid.value()] = m.state;
  json workers = json::array();
  for (const auto& l : rs.loads) {
    const auto used = blocks_used(l);
    const auto slash = l.name.find('/');
    const char* state = l.running > 0 ? "serving" : "idle";
    if (l.waiting > 0 && l.total_blocks > 0 && used * 10 >= l.total_blocks * 9)
      state = "saturated";
    workers.push_back({{"id", l.wid.value()},
                       {"name", l.name},
                       {"node", slash == std::string::npos ? std::string("local") : l.name.substr(0, slash)},
                       {"state", state},
                       {"placement", std::string(to_string(states.count(l.wid.value()) ? states[l.wid.value()]
                                                                                        : worker_state::serving))},
                       {"running", l.running},
                       {"waiting", l.waiting},
                       {"kv_used", used},
                       {"kv_total", l.total_blocks},
                       {"preemptions", l.preemptions},
                       {"adapters_resident", l.adapters},
                       {"adapter_loads", l.adapter_loads},
                       {"finished", l.finished},
                       {"failed", l.failed},
                       {"cancelled", l.cancelled},
                       {"speculation",
                        {{"proposed", l.spec_proposed},
                         {"accepted", l.spec_accepted},
                         {"acceptance_rate", l.spec_proposed ? double(l.spec_accepted) / double(l.spec_proposed) : 0.0},
                         {"tokens_per_step", l.spec_rows ? double(l.spec_emitted) / double(l.spec_rows) : 0.0},
                         {"draft_model_tokens", l.spec_draft_tokens},
                         {"draft_model_ms", l.spec_draft_ms}}}});
  }
  // Workers gone: their last state only, so the page can show them as lost.
  for (const auto& m : rs.metrics)
    if (m.wid.value() != 0 && !m.live)
      workers.push_back({{"id", m.wid.value()},
                         {"name", m.name},
                         {"node", m.name.find('/') == std::string::npos ? std::string("local")
                                                                       : m.name.substr(0, m.name.find('/'))},
                         {"state", "lost"},
                         {"placement", "lost"}});
  json out{{"time_ms", http.time_ms},
           {"uptime_s", http.uptime_s},
           {"model", http.model},
           {"router", router},
           {"workers", workers},
           {"latency",
            {{"ttft_seconds", hist_json(all.ttft_seconds)},
             {"tpot_seconds", hist_json(all.tpot_seconds)},
             {"e2e_seconds", hist_json(all.e2e_seconds)},
             {"queue_seconds", hist_json(all.queue_seconds)}}},
           {"http", {{"live", http.live}, {"connections", http.connections}}}};
  // Per rate-limited key of this gateway process, as on /metrics (by name, never the secret).
  json keys = json::object();
  for (const auto& [name, c] : http.keys)
    keys[name] = {{"admitted", c.admitted}, {"rate_limited", c.rate_limited}, {"tokens", c.tokens}};
  out["keys"] = std::move(keys);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> servable_adapters(const actors::router_stats& rs) {
  std::set<std::string> names;
  for (const auto& l : rs.loads) {
    names.insert(l.servable.begin(), l.servable.end());
    names.insert(l.adapters.begin(), l.adapters.end());
  }
  return {names.begin(), names.end()};
}

} // namespace lf::gateway
