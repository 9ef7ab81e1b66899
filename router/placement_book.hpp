#pragma once
/// The router's placement bookkeeping, apart from the actor: one book per registered worker
/// (requests and tokens placed there, adapters placed or prefetched there, work ahead, measured
/// speed, draining), the placer that chooses among them and the adapter load prices learned from
/// load reports. Pure C++ (no CAF); time is passed in.
///
///   register ──add──> book ──place / unplace / streamed (per request, with its placement_ticket)
///   load report ──report──> resident adapters, free adapter slots, load prices
///   choose(adapter, prompt, waited) ──> views of the books that take requests ──> placer

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/ids.hpp"
#include "core/worker_state.hpp"
#include "router/placement.hpp"
#include "router/placement_cost.hpp"

namespace lf::router {

/// What one placed request adds to its worker's books (kept with the request, so it can be
/// taken off again exactly).
struct placement_ticket {
  std::string adapter;     ///< the adapter it is pinned to; empty: the base model
  std::uint64_t cost = 0;  ///< estimated tokens (prompt + max_tokens): the worker's load_tokens
  /// priced placement: what this placement added to its worker's prompt_ahead (until its first
  /// token there) and output_ahead (less each token streamed).
  std::uint64_t prompt_ahead = 0, output_ahead = 0;
  /// cache_aware: its prompt's block hashes in its worker's chain (prefix_index's), counted in
  /// that worker's inflight_blocks while it is placed there.
  std::vector<std::uint64_t> blocks;
};

/// One registered worker as placement sees it.
struct worker_book {
  std::uint32_t max_seqs = 0;  ///< its batch limit (0: unknown)
  std::uint32_t inflight = 0;
  std::uint64_t load_tokens = 0;
  std::map<std::string, std::uint32_t> placed_adapters;  ///< adapter -> requests placed there
  /// Adapters placed or prefetched there since its last load report (which may not show them yet).
  std::set<std::string> unreported_adapters;
  std::vector<std::string> resident_adapters;  ///< adapters its last report (or registration) listed
  std::uint32_t adapter_slots_free = 0;        ///< by its last report
  /// priced placement: prompt tokens placed without a first token, output tokens still to come.
  std::uint64_t prompt_ahead = 0, output_ahead = 0;
  worker_speed_meter speed;  ///< its prefill/decode rates, from the tokens it streams
  std::uint32_t adapter_slots = 0;  ///< the most adapters its reports listed at once
  bool draining = false;  ///< drained: nothing is placed here any more
  /// cache_aware's guard: block hash -> requests placed here whose prompts contain it. Bounded by
  /// the requests placed here (at most the router's capacity) x the blocks of a prompt.
  std::map<std::uint64_t, std::uint32_t> inflight_blocks;

  /// `key` is resident here by its last load report.
  bool resident(const std::string& key) const;
  /// Requests for `key` are placed here, or it was placed or prefetched here since the last
  /// report: loaded or loading, whatever that report said.
  bool expects(const std::string& key) const;
  /// Holds `key`, or will soon.
  bool holds(const std::string& key) const { return expects(key) || resident(key); }
};

/// How one adapter is spread over the workers that take requests (for adapter demand).
struct adapter_spread {
  std::uint32_t holders = 0;  ///< hold it or will soon
  std::uint32_t live = 0;     ///< workers not draining
  std::uint32_t room = 0;     ///< do not hold it and reported a free adapter slot
  std::uint32_t loading = 0;  ///< hold it, not yet reported resident
};

/// The books of every registered worker, the placer and the load prices. Not thread-safe.
class placement_book {
public:
  /// `capacity`: requests placed on one worker at most (router_config::max_inflight_per_worker).
  explicit placement_book(placement_options opts = {}, std::uint32_t capacity = 64);

  /// A worker registered with batch limit `max_seqs`, holding `adapters`.
  void add(actors::worker_id w, std::uint32_t max_seqs, std::vector<std::string> adapters);
  /// The worker is gone: its book and its load counts are forgotten.
  void remove(actors::worker_id w);
  /// Its book, or null.
  const worker_book* find(actors::worker_id w) const;
  /// The books by worker id.
  const std::map<actors::worker_id, worker_book>& books() const noexcept { return books_; }

  /// A load report of `w`: resident adapters, free adapter slots and the loads it measured.
  void report(actors::worker_id w, std::vector<std::string> adapters, std::uint32_t slots_free,
              const std::vector<load_observation>& loads);
  /// Nothing is placed on `w` again; false if it was draining already or is unknown.
  bool drain(actors::worker_id w);
  /// `w` takes placements again (a drain undone); false if it was not drained or is unknown.
  bool undrain(actors::worker_id w);
  /// `w` was drained (and not undrained since): it takes no placements.
  bool draining(actors::worker_id w) const;
  /// serving; draining while requests are still placed on a drained worker, then drained;
  /// lost for a worker this book does not know (removed, or never added).
  worker_state state(actors::worker_id w) const;
  /// Workers that take placements (registered, not drained).
  std::uint32_t accepting() const;

  /// A worker for a request for `adapter` that prefills `prompt_tokens` (its prompt and the
  /// tokens it streamed before a move), after waiting `waited_ms` since its admission. `cached`:
  /// the request's prompt tokens each worker's prefix cache holds (the router's prefix index;
  /// the priced and cache_aware policies credit them). `keys`: per worker, the hash of the last
  /// block of that cached prefix; cache_aware's guard counts the requests placed there whose
  /// prompts contain it (worker_view::sharing).
  std::optional<actors::worker_id> choose(const std::string& adapter, std::uint32_t prompt_tokens,
                                          double waited_ms,
                                          const std::map<actors::worker_id, std::uint32_t>& cached = {},
                                          const std::map<actors::worker_id, std::uint64_t>& keys = {});
  /// What the placer sees: one view per worker that takes requests.
  std::vector<worker_view> views(const std::string& adapter) const;

  /// Puts `t` on `w` at `now`: a request of `prompt_tokens` with at most `max_tokens` of output,
  /// `streamed` of them sent already (a resumed request prefills those too), `cached` of whose
  /// leading tokens `w`'s prefix cache holds (only the rest counts as prefill work ahead there),
  /// `blocks`: its block hashes in `w`'s chain (kept in the ticket, counted for the guard).
  void place(actors::worker_id w, placement_ticket& t, std::uint64_t prompt_tokens, std::uint64_t max_tokens,
             std::uint64_t streamed, cost_clock::time_point now, std::uint64_t cached = 0,
             std::vector<std::uint64_t> blocks = {});
  /// Takes `t` off `w`'s books (nothing when `w` is gone).
  void unplace(actors::worker_id w, placement_ticket& t, cost_clock::time_point now);
  /// A token of `t` arrived from `w` at `now`: its work ahead shrinks, `w`'s meter counts it.
  void streamed(actors::worker_id w, placement_ticket& t, cost_clock::time_point now);

  /// Every worker that takes requests has a full batch (and there is at least one).
  bool saturated() const;
  /// The least loaded worker that takes requests (the one to check an adapter's files).
  std::optional<actors::worker_id> least_loaded() const;
  /// Workers whose last report lists `key` as resident.
  std::uint32_t resident_count(const std::string& key) const;
  /// How `key` is spread over the workers that take requests.
  adapter_spread spread(const std::string& key) const;
  /// Picks up to `copies` workers to load `key` in the background: taking requests, not holding
  /// it, with a free adapter slot by their last report (a prefetch never evicts), least loaded
  /// first; marks it expected there and returns them.
  std::vector<actors::worker_id> prefetch(const std::string& key, std::uint32_t copies);

  const placement_options& options() const noexcept { return placer_.options(); }

private:
  std::uint32_t capacity_;
  placer placer_;
  load_price_book prices_;
  std::map<actors::worker_id, worker_book> books_;
};

} // namespace lf::router
