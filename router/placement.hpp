#pragma once
/// Which worker gets a request. Pure C++ (no CAF, no clock): the router actor builds one
/// worker_view per live worker from its own bookkeeping and the workers' load reports, and asks.
///
///   round_robin       the next worker (by id) after the last one chosen that has room
///   least_loaded      the worker with the least estimated work (tokens placed, not yet ended)
///   adapter_affinity  least_loaded, but a worker that does not hold the request's adapter is
///                     charged `adapter_load_cost_tokens` extra: the holder wins unless it is
///                     busier than that by more than the price of a cold load
///   priced            the lowest predicted delay to a first token (router/placement_cost.hpp):
///                     prompts ahead and one step of the rows placed there, at that worker's
///                     measured prefill/decode rates, plus the adapter's learned load time where
///                     it is neither resident nor loading. At most
///                     `max_concurrent_loads` workers load the same adapter at once: while that
///                     many are loading it, a worker without it is not chosen (the request waits
///                     for a holder with room) until the request has waited `aging_ms`; waiting
///                     also discounts the load price (age_weight), so rare adapters are not starved
///   cache_aware       priced's estimate with the prefix-cache credit from the router's index
///                     (router/prefix_index.hpp): the prompt tokens still to compute on a worker
///                     after the longest prefix it holds, at its measured prefill rate, + the
///                     prefills and decode steps ahead there + the adapter's load price where it is
///                     not resident. Load guard, on the prefix: a worker whose requests in flight
///                     *that share the prefix this request would reuse there* (`sharing`) exceed
///                     both the least busy worker's in-flight count + `balance_abs` and
///                     `balance_rel` times it is not chosen, so one hot prefix cannot pile every
///                     request onto the worker holding it (the next ones go elsewhere and warm a
///                     second copy), while a conversation's follow-up, whose history no other
///                     request in flight shares, stays with its history however busy that worker
///                     is with other prompts (the estimate still weighs that work). (A first
///                     guard counted all of a worker's requests, as SGLang's cache-aware router
///                     does: it sent follow-ups away from their history at every small burst;
///                     docs/benchmarks.md, "Cache-aware routing".)
///
/// A worker whose inflight count reached its capacity is never chosen; when every worker is full
/// (or there is none) the answer is "none" and the request waits in the admission queue.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "actors/ids.hpp"
#include "router/placement_cost.hpp"

namespace lf::router {

/// How the router spreads requests.
enum class placement_policy { round_robin, least_loaded, adapter_affinity, priced, cache_aware };

/// "round_robin", "least_loaded", "adapter_affinity", "priced", "cache_aware".
std::string_view to_string(placement_policy p) noexcept;

/// Inverse of to_string.
std::optional<placement_policy> parse_placement_policy(std::string_view s) noexcept;

/// The router's view of one worker at placement time.
struct worker_view {
  actors::worker_id id;
  std::uint32_t inflight = 0;     ///< requests placed there that have not ended
  std::uint32_t capacity = 0;     ///< inflight limit; inflight >= capacity => skipped
  std::uint64_t load_tokens = 0;  ///< estimated work placed there (prompt + max_tokens each)
  bool has_adapter = false;       ///< holds (or is loading) the request's adapter
  /// priced: has_adapter, but not yet reported resident (a load is under way or about to start).
  bool loading = false;
  /// priced, cache_aware: prompt tokens placed there without a first token, output tokens still
  /// to come, the request's prompt tokens cached there (the router's prefix index; 0: none or
  /// unknown), and the worker's measured rates.
  std::uint64_t prompt_ahead = 0, output_ahead = 0, cached_prefix_tokens = 0;
  /// priced: adapters with requests placed there, and the most it has been seen to hold at once
  /// (its adapter slots as far as the router knows; 0: none seen yet).
  std::uint32_t adapters_in_use = 0, adapter_slots = 0;
  /// cache_aware's guard: requests in flight there whose prompts share the prefix this request
  /// would reuse there (its cached_prefix_tokens; 0 where nothing of it is cached there).
  std::uint32_t sharing = 0;
  service_speed speed;
};

/// Settings of a placer.
struct placement_options {
  placement_policy policy = placement_policy::least_loaded;
  /// adapter_affinity: what a cold adapter load is worth, in tokens of queued work.
  std::uint64_t adapter_load_cost_tokens = 1024;
  /// priced: what the learned load time is multiplied by in the estimate (1: the time a load takes;
  /// more to count what a load costs besides its own wait: an eviction that may bring another load,
  /// the loader's CPU on a shared machine).
  double load_price_weight = 1;
  /// priced: the share of the decoding still to come on a worker that counts as delay
  /// (predicted_delay_ms's decode_share; 0: one step of it).
  double decode_share = 0;
  /// priced: workers that may load one adapter at once (0: no bound).
  std::uint32_t max_concurrent_loads = 2;
  /// priced: a request that has waited this long may start one more load, and its load price
  /// has halved (age_weight); 0: no aging.
  double aging_ms = 1000;
  /// cache_aware's load guard: a worker is passed over when its requests in flight that share
  /// the request's cached prefix there (worker_view::sharing) exceed the least busy eligible
  /// worker's in-flight count by more than balance_abs AND are more than balance_rel times it.
  std::uint32_t balance_abs = 2;
  double balance_rel = 1.5;
  /// cache_aware's load guard counts, on each worker, only the requests sharing the request's
  /// cached prefix there (true: worker_view::sharing), or all its requests in flight (false: the
  /// first guard, as SGLang's; kept to measure against).
  bool balance_on_prefix = true;
};

/// Chooses workers; keeps the round-robin cursor. Not thread-safe (one router owns it).
class placer {
public:
  explicit placer(placement_options opts = {}) : opts_(opts) {}

  /// Picks a worker for a request. `needs_adapter`: the request names an adapter (only
  /// adapter_affinity looks at it). std::nullopt when no worker has room.
  std::optional<actors::worker_id> choose(const std::vector<worker_view>& workers, bool needs_adapter);

  /// Picks a worker for `r` (priced reads all of it; the others only r.needs_adapter).
  std::optional<actors::worker_id> choose(const std::vector<worker_view>& workers, const placement_request& r);

  const placement_options& options() const noexcept { return opts_; }

private:
  std::optional<actors::worker_id> round_robin(const std::vector<worker_view>& workers);
  std::optional<actors::worker_id> cheapest(const std::vector<worker_view>& workers, bool charge_cold);
  std::optional<actors::worker_id> priced(const std::vector<worker_view>& workers, const placement_request& r) const;
  std::optional<actors::worker_id> cache_aware(const std::vector<worker_view>& workers, const placement_request& r) const;

  placement_options opts_;
  std::optional<actors::worker_id> last_;  ///< round_robin: the last worker chosen
};

} // namespace lf::router
