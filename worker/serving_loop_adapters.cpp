// The serving loop's LoRA side: which waiting requests may start, and ending those whose adapter
// failed to load. Loop thread only.
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>

namespace lf::worker {

bool serving_loop::adapter_usable(cache::adapter_id a) const {
  if (turn_ && a != *turn_)
    return false;
  return a == cache::base_model || (adapters_ != nullptr && adapters_->ready(a));
}

std::optional<cache::adapter_id> serving_loop::adapter_turn() const {
  if (!cfg_.single_adapter_batches)
    return std::nullopt;
  // Keep the turn while sequences of the current adapter run (continuous) ...
  for (auto id : sched_.running())
    if (auto a = sched_.adapter(id); a != cache::base_model)
      return a;
  // ... else it goes to the oldest waiting request whose adapter can run. base_model: nobody's
  // turn yet (no adapter may start in this step).
  auto ready = [&](cache::adapter_id a) {
    return a == cache::base_model || (adapters_ != nullptr && adapters_->ready(a));
  };
  if (cfg_.mode == batching_mode::continuous) {
    for (auto id : sched_.waiting())
      if (auto a = sched_.adapter(id); a != cache::base_model && ready(a))
        return a;
    return cache::base_model;
  }
  for (auto id : static_queue_)  // static: the oldest runnable request decides, base included
    if (auto a = live_.at(id)->adapter; ready(a))
      return a;
  return cache::base_model;
}

void serving_loop::fail_adapter_waiters() {
  if (adapters_ == nullptr)
    return;
  const auto settled = adapters_->settled_count();
  if (settled == settled_seen_)
    return;
  settled_seen_ = settled;
  // Only requests that never started can be waiting for a load: a started one's adapter was
  // ready and stays resident while the request holds it.
  std::vector<std::pair<request_id, cache::adapter_info>> doomed;
  for (const auto& [id, lr] : live_)
    if (lr->holds_adapter && !lr->started
        && adapters_->state(lr->adapter) == cache::adapter_state::failed)
      doomed.emplace_back(id, adapters_->info(lr->adapter));
  for (auto& [id, info] : doomed) {
    sched_.finish(cache::seq_id{id.value()});
    static_queue_.erase(std::remove(static_queue_.begin(), static_queue_.end(), id),
                        static_queue_.end());
    request_result r;
    r.outcome = request_outcome::failed;
    r.error = info.error;
    r.message = std::move(info.message);
    end(id, std::move(r));
  }
}

void serving_loop::wait_for_news() {
  flush();  // what this turn produced (expiries, failed loads) goes out before the wait
  std::unique_lock<std::mutex> lk(mtx_);
  cv_.wait_for(lk, std::chrono::milliseconds(5), [&] {
    return stopping_ || !inbox_.empty() || !cancels_.empty() || !credits_.empty() || adapter_news_;
  });
  adapter_news_ = false;
}

} // namespace lf::worker
