#include "core/rate_limit.hpp"

#include <algorithm>
#include <cmath>

namespace lf {

namespace {

using ms = std::chrono::milliseconds;
constexpr double per_ms(double capacity) { return capacity / 60000.0; }

} // namespace

double token_bucket::level(clock::time_point now) {
  if (now > at_) {
    const auto dt = std::chrono::duration<double, std::milli>(now - at_).count();
    level_ = std::min(capacity_, level_ + dt * per_ms(capacity_));
    at_ = now;
  }
  return level_;
}

bool token_bucket::take(double n, clock::time_point now) {
  if (level(now) + 1e-9 < n)
    return false;
  level_ -= n;
  return true;
}

ms token_bucket::wait_for(double n, clock::time_point now) {
  const auto missing = n - level(now);
  if (missing <= 0 || capacity_ <= 0)
    return ms(0);
  return ms(static_cast<std::int64_t>(std::ceil(missing / per_ms(capacity_))));
}

ms token_bucket::until_full(clock::time_point now) { return wait_for(capacity_, now); }

std::string reset_text(std::uint64_t total_ms) {
  if (total_ms < 1000)
    return std::to_string(total_ms) + "ms";
  const auto s = (total_ms + 999) / 1000;  // whole seconds, rounded up
  if (s < 60)
    return std::to_string(s) + "s";
  return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
}

rate_verdict rate_limiter::admit(const std::string& key, const rate_limits& limits, std::uint64_t tokens,
                                 clock::time_point now) {
  rate_verdict v;
  if (!limits.any())
    return v;
  auto it = by_key_.find(key);
  if (it == by_key_.end() || it->second.limits.requests_per_minute != limits.requests_per_minute
      || it->second.limits.tokens_per_minute != limits.tokens_per_minute)
    it = by_key_.insert_or_assign(key, buckets{limits, token_bucket(limits.requests_per_minute, now),
                                               token_bucket(static_cast<double>(limits.tokens_per_minute), now)})
           .first;
  auto& b = it->second;
  v.limited_requests = limits.requests_per_minute != 0;
  v.limited_tokens = limits.tokens_per_minute != 0;
  const double want = static_cast<double>(tokens);
  v.never = v.limited_tokens && want > b.tokens.capacity();
  const bool req_ok = !v.limited_requests || b.requests.level(now) + 1e-9 >= 1.0;
  const bool tok_ok = !v.limited_tokens || (!v.never && b.tokens.level(now) + 1e-9 >= want);
  v.allowed = req_ok && tok_ok;
  if (v.allowed) {
    if (v.limited_requests)
      b.requests.take(1, now);
    if (v.limited_tokens)
      b.tokens.take(want, now);
  } else if (!v.never) {
    ms wait{0};
    if (!req_ok)
      wait = std::max(wait, b.requests.wait_for(1, now));
    if (!tok_ok)
      wait = std::max(wait, b.tokens.wait_for(want, now));
    v.retry_after_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(1, wait.count()));
  }
  if (v.limited_requests) {
    v.limit_requests = limits.requests_per_minute;
    v.remaining_requests = static_cast<std::uint64_t>(std::floor(b.requests.level(now) + 1e-9));
    v.reset_requests_ms = static_cast<std::uint64_t>(b.requests.until_full(now).count());
  }
  if (v.limited_tokens) {
    v.limit_tokens = limits.tokens_per_minute;
    v.remaining_tokens = static_cast<std::uint64_t>(std::floor(b.tokens.level(now) + 1e-9));
    v.reset_tokens_ms = static_cast<std::uint64_t>(b.tokens.until_full(now).count());
  }
  return v;
}

rate_limits shared_rate_limiter::share_of(const rate_limits& limits) const noexcept {
  rate_limits out = limits;
  if (out.requests_per_minute > 0)
    out.requests_per_minute = std::max<std::uint32_t>(1, out.requests_per_minute / share_);
  if (out.tokens_per_minute > 0)
    out.tokens_per_minute = std::max<std::uint64_t>(1, out.tokens_per_minute / share_);
  return out;
}

rate_verdict shared_rate_limiter::admit(const std::string& key, const rate_limits& limits, std::uint64_t tokens,
                                        clock::time_point now) {
  std::lock_guard<std::mutex> g(m_);
  auto v = limiter_.admit(key, share_of(limits), tokens, now);
  if (limits.any()) {
    auto& c = counts_[key];
    if (v.allowed) {
      ++c.admitted;
      c.tokens += tokens;
    } else {
      ++c.rate_limited;
    }
  }
  return v;
}

std::map<std::string, key_rate_counts> shared_rate_limiter::counts() const {
  std::lock_guard<std::mutex> g(m_);
  return counts_;
}

} // namespace lf
