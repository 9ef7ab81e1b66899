#pragma once
/// The router actor's state (internal to router_actor*.cpp). Bookkeeping only: the decisions
/// come from placer, admission_queue and check_request; the methods send the resulting messages.

#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/admission_queue.hpp"
#include "actors/router_actor.hpp"

namespace lf::actors {

using router_clock = std::chrono::steady_clock;

/// One accepted request.
struct route_entry {
  route_id rid;
  generate_request req;   ///< kept to place it again if its worker dies before streaming
  event_sink sink;
  caf::actor_addr sink_addr;
  route_state state = route_state::queued;
  worker_id worker;                      ///< valid unless queued
  std::uint32_t streamed = 0;            ///< tokens sent to the sink
  std::uint64_t cost = 0;                ///< estimated tokens (placement load)
  std::optional<router_clock::time_point> deadline;
};

/// One registered worker.
struct worker_entry {
  worker_id id;
  worker_actor handle;
  register_worker info;
  worker_load last;                      ///< last load report
  std::uint32_t inflight = 0;
  std::uint64_t load_tokens = 0;
  std::map<std::string, std::uint32_t> placed_adapters;  ///< adapter -> requests placed there
};

/// Everything the router knows: requests by route id and by (sink, client id), workers, the
/// queue, counters. Methods run inside the router actor's handlers only.
class router_state {
public:
  static inline const char* name = "lf.router";

  using self_ptr = router_actor::stateful_pointer<router_state>;

  router_state() : queue_(0) {}

  /// The router is stopping: every live request ends with shutting_down (its sink still gets its
  /// one terminal event) and is cancelled on its worker.
  ~router_state();

  /// Called once from the behavior factory (CAF constructs states before their actor runs).
  void init(self_ptr self, router_config cfg);

  // -- clients (router_requests.cpp) --
  void submit(generate_request& req);
  void cancel(const cancel_request& msg);
  void expire(route_id rid);

  // -- workers (router_actor.cpp) --
  worker_id add_worker(worker_actor handle, register_worker info);
  void on_load(worker_load& load);
  void on_token(worker_token& msg);
  void on_done(worker_done& msg);
  void on_failed(worker_failed& msg);
  void on_down(const caf::down_msg& dm);
  router_stats stats() const;
  void await_workers(std::uint32_t n, caf::typed_response_promise<router_stats> rp);

private:
  /// The entry `rid` if `wid` owns it (events of a stale owner are dropped).
  route_entry* owned(route_id rid, worker_id wid);
  void place(route_entry& e, worker_entry& w);
  void dispatch();
  std::vector<worker_view> views(const std::string& adapter) const;
  /// Sends the terminal event and forgets the request; cancels it on its worker if `cancel_worker`.
  void end(route_entry& e, error_event ev, bool cancel_worker);
  void end(route_entry& e, done_event ev);
  void forget(route_entry& e);
  void reject(const event_sink& sink, client_request_id id, serve_errc code, std::string message,
              std::uint32_t retry_after_ms = 0);
  void worker_lost(worker_entry& w);
  void sink_lost(const caf::actor_addr& addr);
  request_limits limits() const;

  self_ptr self_ = nullptr;
  router_config cfg_;
  placer placer_;
  admission_queue<route_id> queue_;
  std::uint64_t next_rid_ = 1;
  std::uint32_t next_wid_ = 1;
  std::unordered_map<route_id, route_entry> routes_;
  std::map<std::pair<caf::actor_addr, std::uint64_t>, route_id> by_client_;
  std::map<caf::actor_addr, std::uint32_t> sinks_;  ///< monitored sinks -> live requests
  std::map<worker_id, worker_entry> workers_;
  std::vector<std::pair<std::uint32_t, caf::typed_response_promise<router_stats>>> waiters_;
  router_stats counters_;
};

} // namespace lf::actors
