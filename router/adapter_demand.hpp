#pragma once
/// When an adapter deserves one more resident copy: its share of recent requests against its share
/// of the workers. Pure C++ (no CAF, no clock: time is passed in).
///
/// The router notes each accepted request's adapter ("NAME@V" or a directory name; the base model
/// is noted too, as the empty key, so shares are of all requests). An adapter wants one more copy
/// when it has at least `min_requests` of the last `window` requests and
///
///     its share of them  >  holders / live workers
///
/// (held by 1 of 4 workers and asked for by over a quarter of the traffic), at most once per
/// `cooldown` per adapter, so a copy that is on its way is not asked for again before it shows
/// up in the load reports. The router then prefetches it on a worker with a free adapter slot
/// (a prefetch never evicts: a speculative load must not push out an adapter someone uses).

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace lf::router {

/// Settings of an adapter_demand.
struct adapter_demand_options {
  std::uint32_t window = 256;        ///< recent requests considered (> 0)
  std::uint32_t min_requests = 8;    ///< fewer: no extra copy, however large the share
  std::chrono::milliseconds cooldown{2000};
};

/// See the file comment. Not thread-safe.
class adapter_demand {
public:
  using clock = std::chrono::steady_clock;

  explicit adapter_demand(adapter_demand_options opts = {});

  /// A request for `key` ("" = the base model) was accepted.
  void note(const std::string& key);

  /// Whether `key` wants one more copy now: see the file comment. True marks the time (the
  /// cooldown starts).
  bool wants_copy(const std::string& key, std::uint32_t holders, std::uint32_t workers, clock::time_point now);

  /// Requests for `key` among the last `window`.
  std::uint32_t recent(const std::string& key) const;

  /// Requests in the window (at most `window`).
  std::uint32_t total() const noexcept { return static_cast<std::uint32_t>(order_.size()); }

private:
  adapter_demand_options opts_;
  std::deque<std::string> order_;  ///< the last `window` keys, oldest first
  std::unordered_map<std::string, std::uint32_t> counts_;
  std::unordered_map<std::string, clock::time_point> last_copy_;
};

} // namespace lf::router
