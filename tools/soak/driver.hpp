#pragma once
/// The soak's clients: `clients` raw DEALER sockets, each with one request in flight at a time
/// (closed loop), spread over a few threads that poll their sockets. Every message is recorded
/// under its request id, in arrival order, including anything after a terminal reply; cancels
/// are sent as each request's plan says. Messages that belong to no request sent on that
/// socket are kept as strays.
///
///   idle ──submit──> live ──terminal──> idle (next request)
///                     │ before_accept: cancel right after the submit
///                     │ after_tokens / near_end: cancel when that token arrives
///                     │ after_delay: cancel when the delay passes (if still live)
///                     └ after_end: cancel right after `done` (the server must stay silent)

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/soak/check.hpp"
#include "tools/soak/plan.hpp"

namespace lf::soak {

/// How the clients run.
struct driver_options {
  std::string endpoint;
  std::uint32_t clients = 128;
  std::uint32_t threads = 2;
  /// After the last terminal reply, keep listening this long (late or extra messages).
  std::chrono::milliseconds settle{1000};
  /// Give up on requests still live after this (they stay without a terminal: violations).
  std::chrono::milliseconds limit{std::chrono::minutes(30)};
};

/// Counters the monitor reads while the driver runs.
struct driver_progress {
  std::atomic<std::uint64_t> sent{0}, ended{0}, done{0}, cancelled{0}, errors{0}, tokens{0};
};

/// See the file comment. run() once.
class driver {
public:
  /// `plans` must outlive the driver; their ids must be unique.
  driver(driver_options o, const std::vector<planned_request>& plans);

  /// Sends every request and waits for every terminal reply (or the limit), then settles.
  /// True when every request ended.
  bool run();

  /// Only the first `n` requests may be sent until release() (call before run()): the soak keeps
  /// the tail of its run for after the faults, so a fast machine cannot finish before them.
  void hold_back_after(std::size_t n) { gate_ = std::min(n, plans_.size()); }
  /// Every request may be sent.
  void release() { gate_ = plans_.size(); }
  /// Requests sent so far may not exceed the gate, and it has been reached: the clients wait.
  bool held() const { return next_.load() >= gate_.load() && gate_.load() < plans_.size(); }

  /// Live counters.
  const driver_progress& progress() const { return progress_; }
  /// What each request saw, in plan order (after run()).
  const std::vector<request_log>& logs() const { return logs_; }
  /// Messages that belong to no request of their socket, described.
  std::vector<std::string> strays() const;
  /// Seconds from the first submit to the last terminal reply.
  double duration_s() const { return duration_s_; }

private:
  void run_thread(std::uint32_t t, std::chrono::steady_clock::time_point start);
  void stray(std::string what);
  /// The next request index below the gate, if any.
  std::optional<std::size_t> claim();

  driver_options opts_;
  const std::vector<planned_request>& plans_;
  std::vector<request_log> logs_;
  std::unordered_map<std::uint64_t, std::size_t> index_of_;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::size_t> gate_;  ///< requests with an index below this may be sent
  driver_progress progress_;
  std::atomic<std::int64_t> last_end_us_{0};
  double duration_s_ = 0;
  mutable std::mutex stray_m_;
  std::vector<std::string> strays_;
};

} // namespace lf::soak
