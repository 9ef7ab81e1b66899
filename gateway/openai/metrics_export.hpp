#pragma once
/// The router's statistics for HTTP: Prometheus's text exposition format (GET /metrics) and the
/// dashboard's JSON (GET /api/stats). Both are made from one router_stats snapshot, so their
/// numbers agree. Metric names follow vLLM's, with a `lorafleet:` prefix (docs/http.md lists
/// them). Pure C++.

#include <cstdint>
#include <map>
#include <string>

#include "actors/messages.hpp"
#include "core/rate_limit.hpp"

namespace lf::gateway {

/// What the HTTP gateway adds to the router's numbers.
struct http_side {
  std::string model;            ///< the base model's name
  double uptime_s = 0;
  std::int64_t time_ms = 0;     ///< wall clock, Unix milliseconds
  std::uint64_t live = 0;       ///< HTTP requests in flight
  std::uint64_t connections = 0;
  /// Per rate-limited key (by name, never the secret): admitted, refused, tokens charged.
  std::map<std::string, key_rate_counts> keys;
};

/// Prometheus text format 0.0.4: counters, gauges and histograms, per-worker labels
/// (worker="name", worker_id="N"; worker_id="0" for requests that never reached a worker).
std::string render_prometheus(const actors::router_stats& rs, const http_side& http);

/// The dashboard's JSON (gateway/openai/dashboard.html reads it): router totals, workers, merged latency
/// histograms, and `keys`: per rate-limited key, {admitted, rate_limited, tokens}.
std::string render_stats_json(const actors::router_stats& rs, const http_side& http);

/// Every adapter any live worker can serve, sorted, without duplicates.
std::vector<std::string> servable_adapters(const actors::router_stats& rs);

} // namespace lf::gateway
