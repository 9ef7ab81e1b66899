#pragma once
/// The router's measurements of the requests it serves, per worker: what the clients saw
/// (finish reasons, errors, tokens, queue / first-token / per-token / end-to-end latencies).
/// Pure C++ (no CAF); the times are passed in. Worker 0 (an invalid id) holds the requests that
/// ended before reaching a worker; a worker's entry stays after the worker is gone, for the last
/// `keep` departed workers (an elastic cluster whose pods come and go must not grow without end).

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "actors/ids.hpp"
#include "core/metrics.hpp"
#include "core/serve_errc.hpp"
#include "router/completion_estimate.hpp"

namespace lf::router {

/// When a request passed its milestones at the router.
struct request_milestones {
  std::chrono::steady_clock::time_point accepted{};
  std::optional<std::chrono::steady_clock::time_point> placed;       ///< first placement
  std::optional<std::chrono::steady_clock::time_point> first_token;  ///< first token at the router
};

/// One worker's measurements and its name ("-" for worker 0).
struct worker_measures {
  std::string name;
  serve_metrics m;
};

/// The measurements of every worker ever registered, and of worker 0. Not thread-safe.
class request_metrics {
public:
  using clock = std::chrono::steady_clock;

  /// Names worker `w` (its entry is made if new).
  void name(actors::worker_id w, std::string name);
  /// A request that ends with `code` on worker `w` (0: refused, or never placed).
  void count_error(actors::worker_id w, serve_errc code);
  /// A request finished on worker `w` at `now` with `finish_reason`: its tokens, its latencies
  /// (its queue time is the router's and then the worker's, `f.queue_ms`).
  void count_done(actors::worker_id w, std::string_view finish_reason, const finished_request& f,
                  const request_milestones& t, clock::time_point now);

  /// Worker `w` is gone (lost, stopped, replaced): its entry stays while it is one of the last
  /// `keep` departed workers, then it is forgotten (its series leave /metrics; the router's
  /// totals keep counting).
  void departed(actors::worker_id w, std::size_t keep = 64);

  /// Every entry, by worker id (worker 0 first, when it exists).
  const std::map<actors::worker_id, worker_measures>& all() const noexcept { return by_worker_; }

private:
  worker_measures& of(actors::worker_id w);

  std::map<actors::worker_id, worker_measures> by_worker_;
  std::deque<actors::worker_id> departed_;  ///< oldest first
};

} // namespace lf::router
