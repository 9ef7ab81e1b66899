#include "router/completion_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lf::router {

namespace {

double ewma(double old, double sample, double alpha, bool first) {
  return first ? sample : old + alpha * (sample - old);
}

} // namespace

rate_meter::rate_meter(rate_meter_options o) : o_(o) {
  if (!(o.alpha > 0 && o.alpha <= 1) || o.window.count() <= 0)
    throw std::invalid_argument("rate_meter: alpha must be in (0, 1] and the window > 0");
}

void rate_meter::saturated(meter_clock::time_point now, bool yes) {
  // A window counts only if saturated throughout: leaving saturation ends it unmeasured,
  // entering it opens a fresh one.
  if (window_.set(now, yes))
    window_tokens_ = 0;
}

void rate_meter::served(meter_clock::time_point now, std::uint64_t tokens) {
  window_tokens_ += tokens;
  if (window_.age(now) >= o_.window)
    close_window(now);
}

void rate_meter::close_window(meter_clock::time_point now) {
  const auto ms = window_.roll(now);
  if (ms && window_tokens_ > 0) {
    r_.tokens_per_s = ewma(r_.tokens_per_s, static_cast<double>(window_tokens_) / *ms * 1000.0, o_.alpha, windows_ == 0);
    ++windows_;
  }
  window_tokens_ = 0;
}

void rate_meter::finished(const finished_request& r) {
  if (r.max_tokens == 0 || r.completion_tokens == 0)
    return;
  const bool first = finished_ == 0;
  const double prefill_ms = std::max(0.0, r.ttft_ms - r.queue_ms);
  const auto computed = std::max<std::uint32_t>(1, r.prompt_tokens - std::min(r.prompt_tokens, r.cached_tokens));
  r_.prefill_ms_per_token = ewma(r_.prefill_ms_per_token, prefill_ms / computed, o_.alpha, first);
  const double ratio = std::min(1.0, static_cast<double>(r.completion_tokens) / r.max_tokens);
  r_.output_ratio = ewma(r_.output_ratio, ratio, o_.alpha, first);
  if (r.completion_tokens >= 2) {
    const double tpot = std::max(0.0, r.total_ms - r.ttft_ms) / (r.completion_tokens - 1);
    r_.tpot_ms = ewma(r_.tpot_ms, tpot, o_.alpha, decodes_ == 0);
    ++decodes_;
  }
  ++finished_;
}

std::optional<service_rates> rate_meter::rates() const {
  if (windows_ < o_.min_windows || finished_ < o_.min_finished || decodes_ == 0 || !(r_.tokens_per_s > 0))
    return std::nullopt;
  return r_;
}

completion_estimate estimate_completion(const service_rates& r, const estimate_input& in) {
  completion_estimate e;
  e.start_ms = r.tokens_per_s > 0 ? std::max(0.0, in.ahead_tokens) / r.tokens_per_s * 1000.0 : 0.0;
  const double prefill = std::max(r.tpot_ms, in.prompt_tokens * r.prefill_ms_per_token);
  e.first_token_ms = e.start_ms + prefill;
  const double expected = std::max(1.0, std::round(in.max_tokens * std::clamp(r.output_ratio, 0.0, 1.0)));
  e.finish_ms = e.first_token_ms + (expected - 1) * r.tpot_ms;
  return e;
}

double work_ahead(scheduling_policy p, double total, double own, double weight, double others_weight) {
  if (p == scheduling_policy::fcfs || !(weight > 0))
    return total;
  const double share = weight / (weight + std::max(0.0, others_weight));
  return std::min(total, own / share);
}

} // namespace lf::router
