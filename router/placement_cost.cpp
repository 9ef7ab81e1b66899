#include "router/placement_cost.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lf::router {

worker_speed_meter::worker_speed_meter(speed_meter_options o) : o_(o) {
  if (!(o.forget > 0 && o.forget < 1) || o.window.count() <= 0 || o.prior_weight < 0 || o.prior_tokens <= 0
      || !(o.prior.prefill_ms_per_token > 0) || !(o.prior.decode_ms_per_token > 0))
    throw std::invalid_argument("worker_speed_meter: forget must be in (0, 1), the window and the priors > 0");
}

void worker_speed_meter::busy(cost_clock::time_point now, bool yes) {
  // Idle time is not service time: leaving busy drops the open window, entering opens one.
  if (window_.set(now, yes))
    window_prompt_ = window_output_ = 0;
}

void worker_speed_meter::served(cost_clock::time_point now, std::uint64_t prompt_tokens,
                                std::uint64_t output_tokens) {
  window_prompt_ += static_cast<double>(prompt_tokens);
  window_output_ += static_cast<double>(output_tokens);
  if (window_.age(now) >= o_.window)
    close_window(now);
}

void worker_speed_meter::close_window(cost_clock::time_point now) {
  const double p = window_prompt_, d = window_output_;
  window_prompt_ = window_output_ = 0;
  const auto t = window_.roll(now);
  if (!t || p + d <= 0)
    return;
  pp_ = o_.forget * pp_ + p * p;
  pd_ = o_.forget * pd_ + p * d;
  dd_ = o_.forget * dd_ + d * d;
  pt_ = o_.forget * pt_ + p * *t;
  dt_ = o_.forget * dt_ + d * *t;
  ++windows_;
}

service_speed worker_speed_meter::speed() const {
  // Normal equations of the fit, the prior added as one pure-prefill and one pure-decode window of
  // prior_tokens each, weighted prior_weight.
  const double n2w = o_.prior_tokens * o_.prior_tokens * o_.prior_weight;
  const auto& q = o_.prior;
  const double app = pp_ + n2w, apd = pd_, add = dd_ + n2w;
  const double bp = pt_ + n2w * q.prefill_ms_per_token, bd = dt_ + n2w * q.decode_ms_per_token;
  const double det = app * add - apd * apd;
  const double r = q.prefill_ms_per_token / q.decode_ms_per_token;
  if (det > 1e-9 * app * add) {
    const service_speed s{(bp * add - bd * apd) / det, (app * bd - apd * bp) / det};
    if (s.prefill_ms_per_token > 0 && s.decode_ms_per_token > 0) {
      const double ratio = s.prefill_ms_per_token / s.decode_ms_per_token;
      if (ratio >= r / max_ratio_drift && ratio <= r * max_ratio_drift)
        return s;
    }
  }
  // Windows whose prompt and output counts move together cannot tell the two rates apart (the
  // fit swings, one rate to ~0): then only the worker's speed is fitted, with the prior's ratio,
  // T = (r * P + D) * decode over the same windows.
  const double num = r * bp + bd, den = r * r * app + 2 * r * apd + add;
  const double d = den > 0 ? num / den : q.decode_ms_per_token;
  return {r * d, d};
}

int load_price_book::size_class(std::uint64_t bytes) noexcept {
  int c = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++c;
  }
  return c;
}

void load_price_book::observe(actors::worker_id w, const std::vector<load_observation>& records) {
  for (const auto& r : records) {
    if (r.bytes > 0)
      bytes_[r.adapter] = r.bytes;
    auto& count = counts_[{w, r.adapter}];
    if (r.loads <= count)
      continue;  // no new load since the last report (or the counts went back: ignore)
    count = r.loads;
    if (!(r.last_load_ms >= 0) || r.bytes == 0)
      continue;
    const int c = size_class(r.bytes);
    auto it = class_ms_.find(c);
    if (it == class_ms_.end())
      class_ms_.emplace(c, r.last_load_ms);
    else
      it->second += o_.alpha * (r.last_load_ms - it->second);
    ++seen_;
  }
}

void load_price_book::forget(actors::worker_id w) {
  for (auto it = counts_.begin(); it != counts_.end();)
    it = it->first.first == w ? counts_.erase(it) : std::next(it);
}

double load_price_book::price_ms(const std::string& adapter) const {
  auto b = bytes_.find(adapter);
  if (b == bytes_.end()) {
    if (class_ms_.empty())
      return o_.prior_ms;
    double sum = 0;
    for (auto& [c, ms] : class_ms_)
      sum += ms;
    return sum / static_cast<double>(class_ms_.size());
  }
  const int c = size_class(b->second);
  if (auto it = class_ms_.find(c); it != class_ms_.end())
    return it->second;
  if (class_ms_.empty())
    return o_.prior_ms_per_mb * static_cast<double>(b->second) / (1024.0 * 1024.0);
  // The nearest measured class, scaled by the size ratio (a load is mostly reading and copying).
  auto nearest = class_ms_.begin();
  for (auto it = class_ms_.begin(); it != class_ms_.end(); ++it)
    if (std::abs(it->first - c) < std::abs(nearest->first - c))
      nearest = it;
  return nearest->second * std::ldexp(1.0, c - nearest->first);
}

double age_weight(double waited_ms, double aging_ms) noexcept {
  if (!(aging_ms > 0))
    return 1;
  return 1 / (1 + std::max(0.0, waited_ms) / aging_ms);
}

double predicted_delay_ms(const worker_cost_input& w, const placement_request& r, double aging_ms,
                          double decode_share) {
  const auto& s = w.speed;
  const double own = static_cast<double>(r.prompt_tokens - std::min<std::uint64_t>(r.prompt_tokens, w.cached_prefix_tokens));
  double ms = (static_cast<double>(w.prompt_ahead) + own) * s.prefill_ms_per_token
              + (static_cast<double>(w.rows) + std::max(0.0, decode_share) * static_cast<double>(w.output_ahead))
                  * s.decode_ms_per_token;
  if (r.needs_adapter && !w.has_adapter) {
    double price = std::max(0.0, r.load_ms);
    if (w.slots_full)
      price += static_cast<double>(w.output_ahead) * s.decode_ms_per_token;
    ms += price * age_weight(r.waited_ms, aging_ms);
  }
  return ms;
}

} // namespace lf::router
