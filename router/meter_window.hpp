#pragma once
/// A measuring window that counts only while a condition (the cluster saturated, a worker busy)
/// held all through it: rate_meter and worker_speed_meter divide what was served in such a window
/// by its length. Pure C++; time is passed in.

#include <chrono>
#include <optional>

namespace lf::router {

/// See the file comment. Not thread-safe.
class meter_window {
public:
  using clock = std::chrono::steady_clock;

  /// Whether the condition holds from `now` on. A change drops the open window (the caller drops
  /// its samples) and opens a fresh one; returns whether it changed.
  bool set(clock::time_point now, bool yes) {
    if (yes == on_)
      return false;
    on_ = yes;
    whole_ = yes;
    start_ = now;
    return true;
  }

  /// How long the open window has been open at `now`.
  clock::duration age(clock::time_point now) const { return now - start_; }

  /// Ends the open window at `now` and opens the next: its length in milliseconds when the
  /// condition held all through it, else nullopt.
  std::optional<double> roll(clock::time_point now) {
    const double ms = std::chrono::duration<double, std::milli>(now - start_).count();
    const bool counts = whole_ && ms > 0;
    whole_ = on_;
    start_ = now;
    return counts ? std::optional<double>(ms) : std::nullopt;
  }

private:
  bool on_ = false, whole_ = false;
  clock::time_point start_{};
};

} // namespace lf::router
