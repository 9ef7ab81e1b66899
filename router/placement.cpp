#include "router/placement.hpp"

#include <limits>
#include <tuple>

namespace lf::router {

std::string_view to_string(placement_policy p) noexcept {
  switch (p) {
    case placement_policy::round_robin: return "round_robin";
    case placement_policy::least_loaded: return "least_loaded";
    case placement_policy::adapter_affinity: return "adapter_affinity";
    case placement_policy::priced: return "priced";
    case placement_policy::cache_aware: return "cache_aware";
  }
  return "least_loaded";
}

std::optional<placement_policy> parse_placement_policy(std::string_view s) noexcept {
  for (auto p : {placement_policy::round_robin, placement_policy::least_loaded,
                 placement_policy::adapter_affinity, placement_policy::priced, placement_policy::cache_aware})
    if (to_string(p) == s)
      return p;
  return std::nullopt;
}

namespace {

bool has_room(const worker_view& w) { return w.inflight < w.capacity; }

} // namespace

std::optional<actors::worker_id> placer::choose(const std::vector<worker_view>& workers, bool needs_adapter) {
  placement_request r;
  r.needs_adapter = needs_adapter;
  return choose(workers, r);
}

std::optional<actors::worker_id> placer::choose(const std::vector<worker_view>& workers,
                                                const placement_request& r) {
  const bool needs_adapter = r.needs_adapter;
  std::optional<actors::worker_id> pick;
  switch (opts_.policy) {
    case placement_policy::round_robin:
      pick = round_robin(workers);
      break;
    case placement_policy::least_loaded:
      pick = cheapest(workers, false);
      break;
    case placement_policy::adapter_affinity:
      pick = cheapest(workers, needs_adapter);
      break;
    case placement_policy::priced:
      pick = priced(workers, r);
      break;
    case placement_policy::cache_aware:
      pick = cache_aware(workers, r);
      break;
  }
  if (pick)
    last_ = pick;
  return pick;
}

std::optional<actors::worker_id> placer::round_robin(const std::vector<worker_view>& workers) {
  // The eligible worker with the smallest id above the last choice; else the smallest id overall.
  // Going by id (not by position) keeps the rotation fair while workers join and leave.
  const worker_view* after = nullptr;
  const worker_view* first = nullptr;
  for (auto& w : workers) {
    if (!has_room(w))
      continue;
    if (!first || w.id < first->id)
      first = &w;
    if (last_ && w.id > *last_ && (!after || w.id < after->id))
      after = &w;
  }
  if (after)
    return after->id;
  if (first)
    return first->id;
  return std::nullopt;
}

std::optional<actors::worker_id> placer::cheapest(const std::vector<worker_view>& workers, bool charge_cold) {
  // Cost = estimated work + (cold adapter ? its load price : 0); ties go to the worker with fewer
  // requests, then to the smaller id, so the choice is deterministic.
  const worker_view* best = nullptr;
  auto key = [&](const worker_view& w) {
    std::uint64_t cost = w.load_tokens;
    if (charge_cold && !w.has_adapter)
      cost += opts_.adapter_load_cost_tokens;
    return std::make_tuple(cost, w.inflight, w.id);
  };
  for (auto& w : workers)
    if (has_room(w) && (!best || key(w) < key(*best)))
      best = &w;
  if (!best)
    return std::nullopt;
  return best->id;
}

std::optional<actors::worker_id> placer::priced(const std::vector<worker_view>& workers,
                                                const placement_request& r) const {
  // The load bound: while max_concurrent_loads workers are loading this adapter, only its
  // holders may take it, until the request has waited aging_ms.
  std::uint32_t loading = 0;
  for (auto& w : workers)
    loading += w.loading ? 1 : 0;
  const bool bounded = r.needs_adapter && opts_.max_concurrent_loads > 0 && loading >= opts_.max_concurrent_loads
                       && !(opts_.aging_ms > 0 && r.waited_ms >= opts_.aging_ms);
  // Ties (e.g. idle workers with the same rates) go to fewer requests, then the smaller id.
  const worker_view* best = nullptr;
  double best_ms = 0;
  for (auto& w : workers) {
    if (!has_room(w) || (bounded && !w.has_adapter))
      continue;
    const bool full = w.adapter_slots > 0 && w.adapters_in_use >= w.adapter_slots;
    const double ms = predicted_delay_ms(
      {w.prompt_ahead, w.output_ahead, w.inflight, w.cached_prefix_tokens, w.has_adapter, full, w.speed}, r,
      opts_.aging_ms, opts_.decode_share);
    if (!best || std::make_tuple(ms, w.inflight, w.id) < std::make_tuple(best_ms, best->inflight, best->id)) {
      best = &w;
      best_ms = ms;
    }
  }
  if (!best)
    return std::nullopt;
  return best->id;
}

std::optional<actors::worker_id> placer::cache_aware(const std::vector<worker_view>& workers,
                                                     const placement_request& r) const {
  // The load guard first: the least busy worker with room sets the bar.
  std::optional<std::uint32_t> least;
  for (auto& w : workers)
    if (has_room(w) && (!least || w.inflight < *least))
      least = w.inflight;
  if (!least)
    return std::nullopt;
  // Only the requests that share this one's cached prefix there count: the guard spreads a hot
  // prefix, not a conversation's history (a worker holding nothing of it is never passed over;
  // the estimate weighs its load).
  // (balance_on_prefix false: all of a worker's requests count, cached prefix or not.)
  const auto too_busy = [&](const worker_view& w) {
    if (opts_.balance_on_prefix && w.cached_prefix_tokens == 0)
      return false;
    const auto n = opts_.balance_on_prefix ? w.sharing : w.inflight;
    return n > *least + opts_.balance_abs && static_cast<double>(n) > opts_.balance_rel * static_cast<double>(*least);
  };
  std::vector<worker_view> eligible;
  eligible.reserve(workers.size());
  for (auto& w : workers)
    if (has_room(w) && !too_busy(w))
      eligible.push_back(w);
  // Then priced's estimate, the prefix credit included (views carry cached_prefix_tokens).
  return priced(eligible, r);
}

} // namespace lf::router
