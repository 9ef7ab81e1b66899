// The serving loop's LoRA side over its adapter gate (adapter_gate.hpp): this step's turn, and
// ending the requests whose adapter failed to load. Loop thread only.
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>

namespace lf::worker {

void serving_loop::take_adapter_turn() {
  if (!gate_.turns())
    return;
  std::vector<cache::adapter_id> running, waiting;
  for (auto id : sched_.running())
    running.push_back(sched_.adapter(id));
  const bool continuous = cfg_.mode == batching_mode::continuous;
  if (continuous)
    for (auto id : sched_.waiting())
      waiting.push_back(sched_.adapter(id));
  else
    for (auto id : static_queue_)
      waiting.push_back(live_.at(id)->adapter);
  gate_.take_turn(running, waiting, !continuous);
}

void serving_loop::fail_adapter_waiters() {
  if (!gate_.loads_settled())
    return;
  // Only requests that never started can be waiting for a load: a started one's adapter was
  // ready and stays resident while the request holds it.
  std::vector<std::pair<request_id, cache::adapter_info>> doomed;
  for (const auto& [id, lr] : live_)
    if (lr->holds_adapter && !lr->started)
      if (auto failed = gate_.failure(lr->adapter))
        doomed.emplace_back(id, std::move(*failed));
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
