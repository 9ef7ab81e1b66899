#pragma once
/// The router actor's state (internal to router_actor*.cpp). Bookkeeping only: the decisions
/// come from placer, admission_queue and validate_request; the methods send the resulting messages.

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
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/result.hpp>
#include <caf/typed_response_promise.hpp>

#include "core/credit_window.hpp"
#include "router/adapter_demand.hpp"
#include "router/adapter_log.hpp"
#include "router/admission_queue.hpp"
#include "router/placement_cost.hpp"
#include "router/router_actor.hpp"

namespace lf::router {

using router_clock = std::chrono::steady_clock;

/// One accepted request.
struct route_entry {
  actors::route_id rid;
  actors::sink_request_id client_id;   ///< the sink's id, put on every event to the sink
  validated_request req;   ///< kept to place it again if its worker dies or is drained
  actors::event_sink sink;
  caf::actor_addr sink_addr;
  route_state state = route_state::queued;
  actors::worker_id worker;                      ///< valid unless queued
  std::vector<std::int32_t> sent;        ///< tokens sent to the sink: what a resumption continues after
  std::uint32_t resumed = 0;             ///< mid-stream moves so far
  std::uint32_t moves = 0;               ///< moves of any kind (resumed or placed again)
  bool moving = false;                   ///< drained: its worker was asked to ship its K/V (worker_moved)
  worker::kv_blob kv;                    ///< K/V shipped from its drained worker, for the next placement
  credit_window credits;                 ///< window + credits granted: how far it may stream
  std::uint64_t cost = 0;                ///< estimated tokens (placement load)
  /// priced placement: what this placement added to its worker's prompt_ahead (until its first
  /// token there) and output_ahead (less each token streamed).
  std::uint64_t prompt_ahead = 0, output_ahead = 0;
  double expect = 0;                     ///< expected tokens (prompt + expected output), admission
  bool started = false;                  ///< its first token has arrived
  bool prompt_charged = false;           ///< its tenant's counter has been charged its prompt
  std::optional<router_clock::time_point> deadline;
  router_clock::time_point accepted{};               ///< for the request's log line
  std::optional<router_clock::time_point> placed;   ///< first placement
  std::optional<router_clock::time_point> first_token;
};

/// One registered worker.
struct worker_entry {
  actors::worker_id id;
  actors::worker_actor handle;
  actors::register_worker info;
  actors::worker_load last;                      ///< last load report
  std::uint32_t inflight = 0;
  std::uint64_t load_tokens = 0;
  std::map<std::string, std::uint32_t> placed_adapters;  ///< adapter -> requests placed there
  /// Adapters placed or prefetched there since its last load report (which may not show them yet).
  std::set<std::string> unreported_adapters;
  /// priced placement: prompt tokens placed without a first token, output tokens still to come.
  std::uint64_t prompt_ahead = 0, output_ahead = 0;
  worker_speed_meter speed;  ///< its prefill/decode rates, from the tokens it streams
  std::uint32_t adapter_slots = 0;  ///< the most adapters its reports listed at once
  bool draining = false;  ///< drained: nothing is placed here any more

  /// `key` is resident here by its last load report.
  bool resident(const std::string& key) const {
    return std::find(last.adapters.begin(), last.adapters.end(), key) != last.adapters.end();
  }
  /// Requests for `key` are placed here, or it was placed or prefetched here since the last
  /// report: loaded or loading, whatever that report said.
  bool expects(const std::string& key) const {
    return placed_adapters.count(key) != 0 || unreported_adapters.count(key) != 0;
  }
  /// Holds `key`, or will soon.
  bool holds(const std::string& key) const { return expects(key) || resident(key); }
};

/// The adapter registry and its log file (nullptr: memory only), opened by spawn_router.
struct adapter_store {
  cache::adapter_registry registry;
  std::unique_ptr<adapter_log_file> file;
};

/// One tenant with live requests (forgotten when it has none).
struct tenant_book {
  std::uint32_t live = 0;      ///< accepted, not ended
  std::uint32_t inflight = 0;  ///< placed on workers
  double unstarted = 0;        ///< expected tokens of its live requests without a first token
};

/// Everything the router knows: requests by route id and by (sink, client id), workers, the
/// queue, counters. Methods run inside the router actor's handlers only.
class router_state {
public:
  static inline const char* name = "lf.router";

  using self_ptr = actors::router_actor::stateful_pointer<router_state>;

  router_state() : queue_(0) {}

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
  void on_token(actors::worker_token& msg);
  void on_done(actors::worker_done& msg);
  void on_failed(actors::worker_failed& msg);
  /// The drained worker let `rid` go (with its K/V): it moves on now.
  void on_moved(actors::worker_moved& msg);
  void on_down(const caf::down_msg& dm);
  actors::router_stats stats() const;
  /// Drains the workers of `node` (a node name: its workers are "node/N"; or one worker's name):
  /// nothing is placed there again and their requests move to other workers (resumed exactly).
  /// Returns (workers drained, requests moved).
  std::pair<std::uint32_t, std::uint32_t> drain(const std::string& node);
  void await_workers(std::uint32_t n, caf::typed_response_promise<actors::router_stats> rp);

  // -- the adapter registry (router_adapters.cpp) --
  /// list / add / update / remove; add and update first have a worker check the files.
  void adapter_command(actors::adapter_command cmd, caf::typed_response_promise<actors::adapter_reply> rp);

private:
  /// The entry `rid` if `wid` owns it (events of a stale owner are dropped).
  route_entry* owned(actors::route_id rid, actors::worker_id wid);
  void place(route_entry& e, worker_entry& w);
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
  std::vector<worker_view> views(const std::string& adapter) const;
  /// Asks the placer for a worker for `r`, accepted at `accepted` (its age lowers what it minds).
  std::optional<actors::worker_id> choose(const validated_request& r, std::size_t streamed,
                                          router_clock::time_point accepted);
  /// Adds (or with `add` false takes off) what `e` puts on its worker's prompt/output ahead.
  void charge(route_entry& e, worker_entry& w, bool add);
  /// A token of `e` arrived from its worker: the work ahead shrinks, the worker's meter counts it.
  void streamed(route_entry& e);
  /// The adapter loads a worker reports teach the load prices.
  void observe_loads(const actors::worker_load& load);
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
  // -- measurements (router_metrics.cpp) --
  /// The metrics of `wid` (worker 0: requests that never reached a worker).
  actors::worker_metrics& metrics_of(actors::worker_id wid);
  /// Counts a request that ends with an error (`e` null: refused before it was accepted).
  void count_error(const route_entry* e, serve_errc code);
  /// Counts a finished request: its tokens and its latencies.
  void count_done(const route_entry& e, const actors::done_event& ev);
  request_limits limits() const;
  // -- tenants and deadlines (router_tenants.cpp) --
  /// Whether `tenant` is below its in-flight limit.
  bool tenant_has_room(const std::string& tenant) const;
  /// The queue's eligibility rule: tenants below their in-flight limit.
  admission_queue<actors::route_id>::eligible_fn eligible() const;
  /// Why `r` cannot meet its deadline or ttft target (the message), or nullopt.
  std::optional<std::string> deadline_refusal(const validated_request& r) const;
  /// Why queued `e`, whose turn has come, can no longer finish within its deadline, or nullopt.
  std::optional<std::string> too_late(const route_entry& e) const;
  /// Every worker's batch is full, or requests wait in the queue.
  bool saturated() const;
  /// Tells the meter whether the cluster is saturated now.
  void note_load();
  void tenant_accepted(route_entry& e);
  void tenant_placed(route_entry& e);
  void tenant_unplaced(route_entry& e);
  /// A token of `e` reached the router: its tenant is charged; its first token starts it.
  void tenant_token(route_entry& e);
  void tenant_finished(const route_entry& e, const actors::done_event& ev);
  void tenant_forgotten(const route_entry& e);

  self_ptr self_ = nullptr;
  router_config cfg_;
  placer placer_;
  admission_queue<actors::route_id> queue_;
  std::uint64_t next_rid_ = 1;
  std::mt19937_64 seeds_;  ///< seeds for requests that bring none
  std::uint32_t next_wid_ = 1;
  std::unordered_map<actors::route_id, route_entry> routes_;
  std::map<std::pair<caf::actor_addr, std::uint64_t>, actors::route_id> by_client_;
  std::map<caf::actor_addr, std::uint32_t> sinks_;  ///< monitored sinks -> live requests
  std::map<actors::worker_id, worker_entry> workers_;
  std::vector<std::pair<std::uint32_t, caf::typed_response_promise<actors::router_stats>>> waiters_;
  actors::router_stats counters_;
  std::map<actors::worker_id, actors::worker_metrics> metrics_;
  std::unordered_map<std::string, tenant_book> tenants_;
  double unstarted_ = 0;  ///< expected tokens of live requests without a first token
  bool dispatching_ = false;  ///< dispatch() is running (ending a request must not re-enter it)
  rate_meter meter_;
  std::shared_ptr<adapter_store> adapters_;
  adapter_demand demand_;
  load_price_book prices_;  ///< adapter load times per size class, from the load reports
};

} // namespace lf::router
