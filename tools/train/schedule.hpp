#pragma once
/// The learning-rate schedule and the progress report of a training run. Pure C++17: the clock is
/// passed in, so both are tested without waiting.

#include <cstdint>
#include <string>

namespace lf::train {

/// Linear warmup to `peak` over `warmup` steps, then a cosine decay to `peak * min_ratio` at step
/// `total` (and flat after it).
struct lr_schedule {
  double peak = 3e-4;
  double min_ratio = 0.1;
  std::int64_t warmup = 100;
  std::int64_t total = 1000;

  /// Learning rate of 0-based step `step`: (step + 1) / warmup * peak during warmup, so the first
  /// step already moves.
  double at(std::int64_t step) const noexcept;
};

/// "45s", "3m05s", "1h02m": short durations for progress lines. Negative or non-finite: "?".
std::string format_duration(double seconds);

/// Tracks speed and the time left of a run that may have resumed at `first_step`.
class progress_meter {
public:
  /// `first_step`: step the run (re)started at; `total`: the step it ends at; `now`: seconds on
  /// any monotonic clock.
  progress_meter(std::int64_t first_step, std::int64_t total, double now);

  /// Records that step `step` (0-based, so `step + 1` steps are done) finished at `now` after
  /// processing `tokens` tokens since the previous record.
  void record(std::int64_t step, std::size_t tokens, double now);

  /// Tokens per second since the previous line() call (since the start for the first one).
  double recent_tokens_per_second() const noexcept;
  /// Tokens per second over the whole run so far.
  double tokens_per_second() const noexcept;
  /// Seconds since the run (re)started.
  double elapsed() const noexcept { return last_time_ - start_time_; }
  /// Estimated seconds to `total`, from the mean step time of this run (negative if unknown).
  double eta() const noexcept;

  /// "step 120/3000 | loss 5.1234 | lr 5.90e-04 | grad norm 0.812 | 1834 tok/s | 1m05s elapsed |
  /// ETA 25m10s", then
  /// restarts the recent-speed window.
  std::string line(double loss, double lr, double grad_norm);

private:
  std::int64_t first_step_, total_, last_step_;
  double start_time_, last_time_, window_time_;
  std::size_t tokens_ = 0, window_tokens_ = 0;
};

} // namespace lf::train
