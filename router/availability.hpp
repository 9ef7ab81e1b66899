#pragma once
/// Whether any worker takes requests, and since when none does: the router's answer to "no
/// worker can serve" as a state rather than a queue that waits forever. Pure C++; time is passed in.
///
///   workers take requests ──the last one is drained or lost──> out (outage n+1 begins at t)
///        ^                                                        │ new requests: no_workers at once
///        └───────────────a worker is undrained or registers───────┤ queued ones: no_workers at
///                                                                 │ t + max_wait (expired)
///
/// Before the first worker registers the router is out too (outage 1 from its start), but new
/// requests still queue: a cluster that is starting is not refusing work, and the wait bound
/// still ends what it queued if no worker comes (after which the router refuses too: `expired`).
/// While an outage lasts the router checks every max_wait, so a request that joins the queue
/// late (a drained worker's move arriving after the check) waits at most twice that.

#include <chrono>
#include <cstdint>
#include <optional>

namespace lf::router {

/// See the file comment. Not thread-safe.
class availability {
public:
  using clock = std::chrono::steady_clock;

  /// A router started at `start` with no workers: outage 1 begins then.
  availability(std::chrono::milliseconds max_wait, clock::time_point start);

  /// `accepting` workers take placements at `now`. True when an outage begins with this call:
  /// the caller checks `expired` at now + max_wait (with `outage()` to tell outages apart).
  bool update(std::uint32_t accepting, clock::time_point now);

  /// No worker takes requests.
  bool out() const noexcept { return since_.has_value(); }
  /// A new request is refused at once: no worker takes requests and one did before.
  bool refuses() const noexcept { return out() && seen_workers_; }
  /// The outage began at least max_wait before `now`: what waits in the queue ends.
  bool expired(clock::time_point now) const noexcept { return out() && now - *since_ >= max_wait_; }
  /// Outages so far (1 from the start); a check scheduled for one outage ignores a later one.
  std::uint64_t outage() const noexcept { return outages_; }
  /// When the current outage began (none while workers take requests).
  std::optional<clock::time_point> since() const noexcept { return since_; }
  /// How long queued requests wait for a worker to come back.
  std::chrono::milliseconds max_wait() const noexcept { return max_wait_; }

private:
  std::chrono::milliseconds max_wait_;
  std::optional<clock::time_point> since_;
  std::uint64_t outages_ = 1;
  bool seen_workers_ = false;
};

} // namespace lf::router
