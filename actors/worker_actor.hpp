#pragma once
/// The worker actor: a thin shell around one serving loop. Serving runs on the loop's own thread;
/// the actor only submits and cancels (neither blocks), and the loop thread sends each step's
/// results to the router with anon_send, one worker_step a step (router_sink, a step_sink).
///
///   spawn ──request(register_worker)──> router ──worker_id──> [serving]
///   [serving]  worker_submit (validated) ──> loop.submit ──────────┐
///              worker_cancel ──> loop.cancel (frees KV blocks)    │
///              report_atom (timer) ──> worker_load to the router  │
///              get_atom ──> worker_load (reply)                   │
///   loop thread, once a step: worker_step (tokens; done | failed | moved) ┘──> router
///                             request_ended (the rids that ended) ──> self
///              worker_adapters ──> the registry copy (adapter files by NAME@V)
///              adapter_check ──> adapter_checked (before the router registers an adapter)
///              worker_prefetch ──> background load
///   router down ──> cancel everything in the loop, quit
///
/// When the actor ends (killed or otherwise), its state's destructor cancels every request it
/// submitted, so a dead worker leaves no sequence holding KV blocks.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace lf::worker {
class serving_loop;
class worker_runtime;
}

namespace lf::actors {

/// What a worker actor serves with. Torch-free, so tests can give it a loop over a fake engine.
struct worker_backend {
  std::shared_ptr<void> owner;           ///< keeps `loop` alive while the actor runs
  worker::serving_loop* loop = nullptr;
  std::uint32_t context_window = 0;      ///< prompt + max_tokens at most (registered limit)
  std::uint32_t vocab_size = 0;          ///< token ids below this (registered limit)
  std::uint32_t block_size = 0, max_seqs = 0;
  std::uint32_t max_adapters = 0;        ///< adapters resident + loading at most (load reports)
  /// Adapters held right now (load reports; adapter_affinity placement); not set => none.
  /// Requests name adapters as strings; the serving loop resolves them (without an adapter
  /// manager every named adapter ends with unknown_adapter).
  std::function<std::vector<std::string>()> loaded_adapters;
  /// Adapters it can load (load reports, /v1/models); not set => only those loaded.
  std::function<std::vector<std::string>()> servable_adapters;
  /// Every adapter it loaded and what the loads cost (load reports, `status`); not set => none.
  std::function<std::vector<adapter_load_cost>()> adapter_records;
  /// Applies the cluster registry's events (worker_runtime::apply_adapter_events); not set =>
  /// ignored (the worker serves only its adapter directory).
  std::function<void(const std::vector<cache::adapter_event>&, bool whole_log)> apply_adapter_events;
  /// Its copy of the registry's log (sent with each registration); not set => none.
  std::function<std::vector<cache::adapter_event>()> adapter_log;
  /// Adapter slots neither resident nor loading (load reports); not set => 0.
  std::function<std::uint32_t()> adapter_slots_free;
  /// Loads a registered version in the background; not set => ignored.
  std::function<bool(const std::string&)> prefetch_adapter;
  /// Checks an adapter directory before it is registered (worker_runtime::check_adapter: throws
  /// with the reason); not set => checks are refused.
  std::function<cache::adapter_source(const std::string&, std::uint32_t)> check_adapter;
};

/// A backend over a worker_runtime (shares its ownership).
worker_backend backend_of(std::shared_ptr<worker::worker_runtime> rt);

/// Settings of a worker actor.
struct worker_options {
  std::string name = "worker";                       ///< for logs and stats
  std::chrono::milliseconds report_interval{100};    ///< load reports to the router
  std::string join_token;                            ///< sent with the registration
  /// Counts registered worker actors: +1 when the router accepts this one, -1 when it ends
  /// after that (a node's /ready). Not set => not counted.
  std::shared_ptr<std::atomic<int>> registered;
};

/// Spawns a worker that registers itself with `router` (which may be remote: a handle from
/// middleman().remote_actor<router_actor>(host, port)). If registration fails, the worker quits.
worker_actor spawn_worker(caf::actor_system& sys, worker_backend backend, router_actor router,
                          worker_options opts = {});

} // namespace lf::actors
