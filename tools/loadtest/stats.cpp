#include "tools/loadtest/stats.hpp"

#include <algorithm>

#include "tools/common/bench_stats.hpp"

namespace lf::loadtest {

double request_sample::tpot_ms() const {
  return tokens_out < 2 ? 0.0 : (e2e_ms - ttft_ms) / static_cast<double>(tokens_out - 1);
}

latency_summary summarize_latency(std::vector<double> v) {
  latency_summary s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  s.count = v.size();
  s.mean = tools::mean(v);
  s.p50 = tools::percentile_sorted(v, 50);
  s.p90 = tools::percentile_sorted(v, 90);
  s.p99 = tools::percentile_sorted(v, 99);
  s.max = v.back();
  return s;
}

run_summary summarize(const std::vector<request_sample>& samples, double duration_s,
                      const goodput_limits& limits, std::size_t lost) {
  run_summary r;
  r.sent = samples.size() + lost;
  r.lost = lost;
  r.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  double in = 0, out = 0;
  for (const auto& s : samples) {
    out += s.tokens_out;
    if (!s.ok()) {
      ++r.failed;
      ++r.errors[s.status];
      continue;
    }
    ++r.completed;
    in += s.tokens_in;
    r.input_tokens += s.tokens_in;
    r.cached_tokens += s.tokens_cached;
    ttft.push_back(s.ttft_ms);
    e2e.push_back(s.e2e_ms);
    if (s.tokens_out >= 2)
      tpot.push_back(s.tpot_ms());
    itl.insert(itl.end(), s.itl_ms.begin(), s.itl_ms.end());
    const bool good = (!limits.ttft_ms || s.ttft_ms <= *limits.ttft_ms)
                      && (!limits.tpot_ms || s.tpot_ms() <= *limits.tpot_ms)
                      && (!limits.e2e_ms || s.e2e_ms <= *limits.e2e_ms);
    r.good += good ? 1 : 0;
  }
  r.ttft = summarize_latency(std::move(ttft));
  r.tpot = summarize_latency(std::move(tpot));
  r.itl = summarize_latency(std::move(itl));
  r.e2e = summarize_latency(std::move(e2e));
  if (duration_s > 0) {
    r.request_throughput = static_cast<double>(r.completed) / duration_s;
    r.input_tokens_per_s = in / duration_s;
    r.output_tokens_per_s = out / duration_s;
    r.goodput = static_cast<double>(r.good) / duration_s;
  }
  return r;
}

} // namespace lf::loadtest
