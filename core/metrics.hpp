#pragma once
/// What the router measures of the requests it serves, per worker: counters and latency
/// histograms in Prometheus's shape (fixed upper bounds, counts per bucket, sum, count). The
/// HTTP gateway renders them as /metrics and /api/stats. Standard library only.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lf {

/// Observations counted in fixed buckets: counts[i] holds values in (bounds[i-1], bounds[i]];
/// one more count at the end holds values above the last bound. Not cumulative (Prometheus's
/// cumulative `le` buckets are made when rendering).
struct histogram {
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;  ///< bounds.size() + 1
  double sum = 0;
  std::uint64_t count = 0;

  histogram() = default;
  /// `bounds` ascending.
  explicit histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}

  void observe(double v);
  /// Adds `o`'s observations (same bounds; otherwise throws std::invalid_argument).
  void merge(const histogram& o);
};

/// Buckets of vLLM's metrics of the same names, in seconds.
std::vector<double> ttft_buckets();
std::vector<double> tpot_buckets();
std::vector<double> latency_buckets();  ///< queue time and end-to-end latency

/// The router's counts of the requests one worker served (or that ended before reaching one).
struct serve_metrics {
  std::map<std::string, std::uint64_t> finished;  ///< finish reason ("eos", "stop", "length") -> requests
  std::map<std::string, std::uint64_t> errors;    ///< serve_errc name -> requests
  std::uint64_t prompt_tokens = 0, generation_tokens = 0, cached_tokens = 0;
  histogram queue_seconds{latency_buckets()};  ///< accepted -> first scheduled on a worker
  histogram ttft_seconds{ttft_buckets()};      ///< accepted -> first token at the router
  histogram tpot_seconds{tpot_buckets()};      ///< mean per output token after the first
  histogram e2e_seconds{latency_buckets()};    ///< accepted -> terminal reply

  void merge(const serve_metrics& o);
};

} // namespace lf
