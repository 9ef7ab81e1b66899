#pragma once
/// What a worker's load report and the router's copy of it share: the serving loop counts these,
/// the worker actor sends them as they are (actors::worker_load is one of these and more), the
/// router and every report read them. A new number the router should see is a member here (and
/// in inspect below) and a line where the loop counts it. Pure C++.

#include <cstdint>
#include <string>
#include <vector>

namespace lf::worker {

/// The load numbers of one serving loop.
struct load_counts {
  std::uint32_t waiting = 0, running = 0;  ///< requests queued (static modes' queue included), running
  std::uint64_t waiting_tokens = 0, running_tokens = 0;  ///< the scheduler's (scheduler::load)
  std::uint32_t free_blocks = 0, total_blocks = 0;       ///< K/V blocks: free or evictable, in all
  std::uint64_t finished = 0, failed = 0, cancelled = 0; ///< requests ended so far, by outcome
  std::uint64_t preemptions = 0;                          ///< so far
  std::uint32_t paused = 0;                               ///< requests paused now for want of credits
  /// Adapters of the running and of the waiting requests, each name once, sorted (vLLM's
  /// lora_requests_info gauge).
  std::vector<std::string> running_adapters, waiting_adapters;
};

/// Every member, for the actors' wire format (CAF's inspect).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, load_counts& x) {
  return f(x.waiting, x.running, x.waiting_tokens, x.running_tokens, x.free_blocks, x.total_blocks, x.finished,
           x.failed, x.cancelled, x.preemptions, x.paused, x.running_adapters, x.waiting_adapters);
}

} // namespace lf::worker
