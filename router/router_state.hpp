#pragma once
/// The router actor's state (internal to router_actor.cpp, router_requests.cpp,
/// router_adapters.cpp): requests by route id and by sink, workers' handles, the admission queue.
/// The decisions and the books behind them are pure classes (placement_book, tenant_ledger,
/// request_metrics, admission_queue, validate_request); the methods here feed them and send the
/// resulting messages.

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/result.hpp>
#include <caf/typed_response_promise.hpp>

#include "core/credit_window.hpp"
#include "router/adapter_demand.hpp"
#include "router/admission.hpp"
#include "router/adapter_log.hpp"
#include "router/admission_queue.hpp"
#include "router/availability.hpp"
#include "router/placement_book.hpp"
#include "router/prefix_index.hpp"
#include "router/request_metrics.hpp"
#include "router/route_table.hpp"
#include "router/router_config.hpp"
#include "router/sink_outbox.hpp"
#include "router/tenant_ledger.hpp"

namespace lf::router {

/// One registered worker: its handle and what it reported (its placement books are in
/// placement_book).
struct worker_entry {
  actors::worker_id id;
  actors::worker_actor handle;
  actors::register_worker info;
  actors::worker_load last;                      ///< last load report
  /// Its prefix cache, as its prefix_events say: tokens per block (0: no events yet, or no
  /// prefix cache) and whether named tenants salt their blocks.
  std::uint32_t cache_block_size = 0;
  bool tenant_isolation = true;
};

/// What the prefix index says of one request (router_cache.cpp), per worker: the leading prompt
/// tokens its prefix cache holds, the hash of the last of those blocks (cache_aware's guard counts
/// the requests in flight there sharing it), and the request's block hashes in that worker's chain.
struct cached_tokens {
  std::map<actors::worker_id, std::uint32_t> tokens;
  std::map<actors::worker_id, std::uint64_t> keys;
  std::map<actors::worker_id, std::vector<std::uint64_t>> blocks;
  /// tokens[w], 0 when absent.
  std::uint32_t on(actors::worker_id w) const {
    auto it = tokens.find(w);
    return it == tokens.end() ? 0 : it->second;
  }
  /// blocks[w], empty when absent.
  std::vector<std::uint64_t> blocks_on(actors::worker_id w) const {
    auto it = blocks.find(w);
    return it == blocks.end() ? std::vector<std::uint64_t>{} : it->second;
  }
};

/// The adapter registry and its log file (nullptr: memory only), opened by spawn_router.
struct adapter_store {
  cache::adapter_registry registry;
  std::unique_ptr<adapter_log_file> file;
};

/// Everything the router knows: requests by route id and by (sink, client id), workers, the
/// queue, counters. Methods run inside the router actor's handlers only.
class router_state {
public:
  static inline const char* name = "lf.router";

  using self_ptr = actors::router_actor::stateful_pointer<router_state>;

  router_state() : queue_(0), avail_(std::chrono::milliseconds(0), router_clock::now()) {}

  /// The router is stopping: every live request ends with shutting_down (its sink still gets its
  /// one terminal event) and is cancelled on its worker.
  ~router_state();

  /// Called once from the behavior factory (CAF constructs states before their actor runs).
  void init(self_ptr self, router_config cfg, std::shared_ptr<adapter_store> adapters);

  // -- clients (router_requests.cpp) --
  void submit(actors::generate_request& req);
  void cancel(const actors::cancel_request& msg);
  /// Raises the request's allowance and tells its worker (a paused request goes on).
  void credit(const actors::credit_request& msg);
  void expire(actors::route_id rid);
  /// A moved request still waiting for a worker `move_wait` after its move `moves` ends.
  void stranded(actors::route_id rid, std::uint32_t moves);

  // -- workers (router_actor.cpp) --
  /// Registers a worker (same id when it registers twice); an error when its model cannot serve
  /// what the router validates against (a smaller context window or vocabulary).
  caf::result<actors::worker_id> add_worker(actors::worker_actor handle, actors::register_worker info);
  void on_load(actors::worker_load& load);
  /// A worker's step: its tokens, then its terminals, each taken as alone; what they make for
  /// the sinks goes out as one event_batch per sink.
  void on_step(actors::worker_step& msg);
  void on_failed(actors::worker_failed& msg);
  /// A worker's prefix-cache events into the index; a gap asks it for a snapshot (router_cache.cpp).
  void on_prefix_events(actors::prefix_events& msg);
  void on_down(const caf::down_msg& dm);
  actors::router_stats stats() const;
  /// Drains the workers of `node` (a node name: its workers are "node/N"; or one worker's name):
  /// nothing is placed there again and their requests move to other workers (resumed exactly).
  /// Returns (workers drained, requests moved).
  std::pair<std::uint32_t, std::uint32_t> drain(const std::string& node);
  /// Undoes drain for the same names: the drained workers of `node` take placements again.
  /// Returns the workers put back (0: none of that name was drained).
  std::uint32_t undrain(const std::string& node);
  /// Outage `n` has lasted max_queue_wait: if it still goes on, every queued request ends
  /// with no_workers.
  void outage_over(std::uint64_t n);
  void await_workers(std::uint32_t n, caf::typed_response_promise<actors::router_stats> rp);

  // -- the adapter registry (router_adapters.cpp) --
  /// list / add / update / remove; add and update first have a worker check the files.
  void adapter_command(actors::adapter_command cmd, caf::typed_response_promise<actors::adapter_reply> rp);

private:
  void on_token(actors::worker_token& msg);
  void on_done(actors::worker_done& msg);
  /// The drained worker let `rid` go (with its K/V): it moves on now.
  void on_moved(actors::worker_moved& msg);
  /// Sends `e`'s sink an event: into its batch while a step is being taken, else alone.
  void to_sink(route_entry& e, actors::token_event ev);
  void to_sink(route_entry& e, actors::done_event ev);
  void to_sink(route_entry& e, actors::error_event ev);
  /// The entry `rid` if `wid` owns it (events of a stale owner are dropped).
  route_entry* owned(actors::route_id rid, actors::worker_id wid);
  /// `cached`: the prefix index on `e` (what `w`'s prefix cache holds counts as no work there;
  /// its block hashes there go on the books for cache_aware's guard).
  void place(route_entry& e, worker_entry& w, const cached_tokens& cached = {});
  /// Per worker, the leading prompt tokens (of `prompt` then `sent`) its prefix cache holds, by
  /// the prefix index, within the last-token rule; empty unless the policy credits them (the
  /// block hashes only for cache_aware).
  cached_tokens cached_of(const validated_request& req, const std::vector<std::int32_t>& sent) const;
  /// Takes `e` off its worker's books (counts, adapters); the entry keeps its worker id.
  void unplace(route_entry& e);
  /// `e`'s worker is lost or drained: `e` goes back to the front of the queue, to be resumed
  /// after the tokens it has sent; false (and nothing changed) when it has used its resumptions.
  bool move_again(route_entry& e);
  /// `e` has streamed and used its max_resumptions: moving it again would end it.
  bool out_of_moves(const route_entry& e) const;
  /// The requests placed on a worker for which `on` holds, newest first (the order to move them in).
  std::vector<actors::route_id> placed_on(const std::function<bool(actors::worker_id)>& on) const;
  void dispatch();
  /// Asks the placer for a worker for `e` (its age lowers what it minds).
  std::optional<actors::worker_id> choose(const route_entry& e, const cached_tokens& cached);
  /// Sends the terminal event and forgets the request; cancels it on its worker if `cancel_worker`.
  void end(route_entry& e, actors::error_event ev, bool cancel_worker);
  void end(route_entry& e, actors::done_event ev);
  void forget(route_entry& e);
  void reject(const actors::event_sink& sink, actors::sink_request_id id, serve_errc code, std::string message,
              std::uint32_t retry_after_ms = 0);
  void worker_lost(worker_entry& w, const caf::error& reason);
  /// The one info line of a request that ends (outcome: finish reason or error code).
  void log_end(const route_entry& e, std::string_view outcome, const std::string& message,
               const actors::done_event* done) const;
  void sink_lost(const caf::actor_addr& addr);
  /// Pins a request's adapter to the registry's "NAME@V" (unchanged for unregistered names);
  /// the refusal's message when the registry removed it or has no such version.
  std::optional<std::string> pin_adapter(request_draft& d) const;
  /// A registering worker's registry copy extends this router's log (this router was down during
  /// changes, or restarted without its log file): take the newer events, as if committed here.
  void catch_up_adapters(const std::vector<cache::adapter_event>& copy, const std::string& from);
  /// Sends `w` the whole registry log (a worker that registers or registers again).
  void replay_adapters(const worker_entry& w) const;
  /// Logs, applies and broadcasts a registry event; the reply for the operator.
  actors::adapter_reply commit_adapter_event(const cache::adapter_event& e);
  /// The registry's rows (`name` empty: all), with the workers holding each newest version.
  actors::adapter_reply adapter_rows(const std::string& name) const;
  /// Loads `key` on up to `copies` more workers that do not hold it and reported a free adapter
  /// slot, least loaded first; returns how many were asked.
  std::uint32_t prefetch(const std::string& key, std::uint32_t copies);
  /// An accepted request for `key`: counts its demand and prefetches one more copy when its share
  /// of requests outgrows its share of workers (router/adapter_demand.hpp).
  void note_adapter_demand(const std::string& key);
  /// Counts a request that ends with an error (`e` null: refused before it was accepted).
  void count_error(const route_entry* e, serve_errc code);
  request_limits limits() const;
  /// The queue's eligibility rule: tenants below their in-flight limit.
  admission_queue<actors::route_id>::eligible_fn eligible() const;
  /// A request as the router takes it: seeded, weighted, its adapter pinned to "NAME@V", then
  /// validated once (validate_request) against the router's limits; or the refusal.
  /// A continuation (`continued` not empty) must also fit (bad_continuation), and bring its
  /// seed when it samples.
  std::variant<validated_request, admit_refuse> checked_here(request_draft draft,
                                                             const std::vector<std::int32_t>& continued);
  /// What admit() reads of the books for a request of `tenant`, now.
  admission_view admission_view_of(const std::string& tenant) const;
  /// Why `continued` (a generate_request's) cannot continue `r`, or nothing (also when empty).
  std::optional<std::string> bad_continuation(const validated_request& r,
                                              const std::vector<std::int32_t>& continued) const;
  /// Refuses a request before it is accepted (counted as overloaded or rejected by its code).
  void refuse(const actors::event_sink& sink, actors::sink_request_id id, admit_refuse why);
  /// Books an admitted request (`req`'s id, window and continued tokens): its route, deadline
  /// timer, sink monitor and tenant; not yet placed or queued.
  route_entry& accept(validated_request valid, actors::generate_request& req,
                      const actors::event_sink& sink, const caf::strong_actor_ptr& sender,
                      router_clock::time_point now);
  /// Puts an accepted request at the back of the queue (admit said enqueue).
  void enqueue(route_entry& e);
  /// Every worker's batch is full, or requests wait in the queue.
  bool saturated() const;
  /// Tells the meter whether the cluster is saturated now.
  void note_load();
  /// The workers that take placements changed (register, loss, drain, undrain): starts an
  /// outage's clock when none is left, ends it when one is back.
  void note_availability();
  /// The Retry-After hint of a no_workers refusal: a drained or restarting worker takes a
  /// while, so at least a second.
  std::uint32_t no_workers_retry_ms() const { return std::max<std::uint32_t>(cfg_.retry_after_ms, 1000); }
  /// The live workers named `node` or "node/N".
  std::vector<actors::worker_id> named(const std::string& node) const;

  self_ptr self_ = nullptr;
  router_config cfg_;
  admission_queue<actors::route_id> queue_;
  std::uint64_t next_rid_ = 1;
  std::mt19937_64 seeds_;  ///< seeds for requests that bring none
  std::uint32_t next_wid_ = 1;
  route_table routes_;  ///< accepted requests, by route id and by client; sinks watched
  std::map<actors::worker_id, worker_entry> workers_;
  std::vector<std::pair<std::uint32_t, caf::typed_response_promise<actors::router_stats>>> waiters_;
  actors::router_stats counters_;
  bool dispatching_ = false;  ///< dispatch() is running (ending a request must not re-enter it)
  sink_outbox outbox_;        ///< open while on_step runs: events to sinks are batched
  placement_book placement_;  ///< workers' books, the placer, adapter load prices
  prefix_index prefix_;       ///< which worker's prefix cache holds which blocks
  tenant_ledger tenancy_;     ///< tenants' books, the rate meter, deadline admission
  request_metrics metrics_;   ///< what clients saw, per worker
  std::shared_ptr<adapter_store> adapters_;
  adapter_demand demand_;
  availability avail_;        ///< whether any worker takes requests, since when none does
};

} // namespace lf::router
