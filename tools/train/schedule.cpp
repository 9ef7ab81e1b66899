#include "tools/train/schedule.hpp"

#include <cmath>
#include <cstdio>

namespace lf::train {

double lr_schedule::at(std::int64_t step) const noexcept {
  if (step < warmup)
    return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double floor = peak * min_ratio;
  if (step >= total)
    return floor;
  const double span = static_cast<double>(total - warmup);
  const double progress = span > 0 ? static_cast<double>(step - warmup) / span : 1.0;
  return floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * progress));
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

progress_meter::progress_meter(std::int64_t first_step, std::int64_t total, double now)
  : first_step_(first_step), total_(total), last_step_(first_step - 1), start_time_(now),
    last_time_(now), window_time_(now) {}

void progress_meter::record(std::int64_t step, std::size_t tokens, double now) {
  last_step_ = step;
  last_time_ = now;
  tokens_ += tokens;
  window_tokens_ += tokens;
}

double progress_meter::recent_tokens_per_second() const noexcept {
  const double dt = last_time_ - window_time_;
  return dt > 0 ? static_cast<double>(window_tokens_) / dt : 0.0;
}

double progress_meter::tokens_per_second() const noexcept {
  const double dt = elapsed();
  return dt > 0 ? static_cast<double>(tokens_) / dt : 0.0;
}

double progress_meter::eta() const noexcept {
  const auto done = last_step_ + 1 - first_step_;
  if (done <= 0)
    return -1.0;
  return elapsed() / static_cast<double>(done) * static_cast<double>(total_ - last_step_ - 1);
}

std::string progress_meter::line(double loss, double lr, double grad_norm) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "step %lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %.0f tok/s | %s elapsed | "
                "ETA %s",
                static_cast<long long>(last_step_ + 1), static_cast<long long>(total_), loss, lr,
                grad_norm, recent_tokens_per_second(), format_duration(elapsed()).c_str(),
                format_duration(eta()).c_str());
  window_time_ = last_time_;
  window_tokens_ = 0;
  return buf;
}

} // namespace lf::train
