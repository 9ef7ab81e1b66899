// The serving loop's prefix-cache events: the block manager writes them into cache_events_ on
// the loop thread; once a loop turn they go to the listener (the worker actor's, which sends them
// to the router), the first one after watch_prefix_cache or resend_prefix_cache a snapshot.
#include "worker/serving_loop.hpp"

namespace lf::worker {

// The loop numbers and bounds the batches itself (cache_events_'s max_pending; past it, a
// snapshot); their rate is at most one a loop turn, i.e. one a step while it serves.

std::uint64_t serving_loop::watch_prefix_cache(std::function<void(cache::prefix_event_batch)> deliver) {
  std::lock_guard<std::mutex> g(mtx_);
  const auto id = next_listener_++;
  cache_listeners_.emplace(id, std::move(deliver));
  cache_snapshot_asked_ = true;
  cv_.notify_one();
  return id;
}

void serving_loop::unwatch_prefix_cache(std::uint64_t id) {
  std::lock_guard<std::mutex> g(mtx_);
  cache_listeners_.erase(id);
}

void serving_loop::resend_prefix_cache() {
  std::lock_guard<std::mutex> g(mtx_);
  cache_snapshot_asked_ = true;
  cv_.notify_one();
}

void serving_loop::publish_prefix_events() {
  std::vector<std::function<void(cache::prefix_event_batch)>> deliver;
  bool snapshot = false;
  {
    std::lock_guard<std::mutex> g(mtx_);
    if (cache_listeners_.empty() || !cfg_.prefix_cache) {
      cache_snapshot_asked_ = false;
      return;  // nobody listens: the log keeps counting copies, its pending events wait (bounded)
    }
    for (const auto& [id, d] : cache_listeners_)
      deliver.push_back(d);
    snapshot = cache_snapshot_asked_;
    cache_snapshot_asked_ = false;
  }
  if (snapshot)
    cache_events_.want_snapshot();
  auto b = cache_events_.take(std::chrono::steady_clock::now());
  if (b.seq == 0)
    return;
  for (std::size_t i = 0; i + 1 < deliver.size(); ++i)
    deliver[i](b);
  deliver.back()(std::move(b));
}

} // namespace lf::worker
