#include "core/metrics.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf {

void histogram::observe(double v) {
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
  ++counts[static_cast<std::size_t>(at)];
  sum += v;
  ++count;
}

void histogram::merge(const histogram& o) {
  if (o.bounds != bounds)
    throw std::invalid_argument("histogram::merge: different bucket bounds");
  for (std::size_t i = 0; i < counts.size(); ++i)
    counts[i] += o.counts[i];
  sum += o.sum;
  count += o.count;
}

std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
          0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}

std::vector<double> tpot_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0};
}

std::vector<double> latency_buckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0,
          10.0, 15.0,  20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0};
}

void serve_metrics::merge(const serve_metrics& o) {
  for (const auto& [k, v] : o.finished)
    finished[k] += v;
  for (const auto& [k, v] : o.errors)
    errors[k] += v;
  prompt_tokens += o.prompt_tokens;
  generation_tokens += o.generation_tokens;
  cached_tokens += o.cached_tokens;
  queue_seconds.merge(o.queue_seconds);
  ttft_seconds.merge(o.ttft_seconds);
  tpot_seconds.merge(o.tpot_seconds);
  e2e_seconds.merge(o.e2e_seconds);
}

} // namespace lf
