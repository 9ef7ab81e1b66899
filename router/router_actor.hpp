#pragma once
/// The router actor: validates requests, admits them through a bounded queue, places them on
/// workers, streams their tokens back to whoever sent them and supervises the workers.
///
/// A request's life (route_state):
///
///   generate_request ─check─> refused: error_event (invalid_request / prompt_too_long)
///        ├─ predicted to miss its deadline or ttft target: error_event{deadline_unmeetable}
///        │  (and a queued request whose time left falls below its predicted service is dropped
///        │  with it when its turn comes, before it uses any capacity)
///        │ accepted
///        ├─ a worker has room ─────────────────> placed ──token──> streaming ──done──> (ended)
///        ├─ queue has room ──> queued ─dispatch─>   │                  │
///        └─ queue (or the tenant's line) full: error_event{overloaded, retry_after_ms}
///
/// dispatch takes the next queued request by the scheduling policy (fcfs, or VTC across tenants:
/// router/admission_queue.hpp), skipping tenants at their in-flight limit.
///   placed, worker dies or is drained ──> queued again (front)       │
///   streaming, worker dies or is drained ──> queued again (front) with the tokens sent so far:
///       the next worker resumes exactly (worker_submit::resume); after max_resumptions moves
///       the request ends with error_event{worker_lost} instead
///   deadline (any state) ──> error_event{timeout};  cancel_request ──> error_event{cancelled}
///   sink (client) dies ──> cancelled silently
///   router stops ──> error_event{shutting_down} for everything still live
///   no worker takes requests (all drained or lost): new requests error_event{no_workers} at
///       once; queued ones error_event{no_workers} after max_queue_wait unless one comes back
///       (router/availability.hpp)
///
/// A request without a seed gets one at admission (reported in done_event::seed), so a resumed
/// request draws what the undisturbed one would have drawn.
///
/// Adapters: a request names "NAME" (the registry's newest version, or an adapter of the workers'
/// directories the registry does not know) or "NAME@V"; the router pins it to "NAME@V" before
/// placing it, so it keeps that version wherever it runs, and refuses names the registry removed
/// (unknown_adapter). adapter_command lists, adds (checked on a worker first), updates and removes
/// registry entries; each change goes to the log file, then to every worker (worker_adapters; a
/// worker that registers gets the whole log).
///
/// Every accepted request gets exactly one terminal event (done_event or error_event); events
/// from a worker that no longer owns a request (it died, or the request was re-placed or ended)
/// are dropped. Workers register with a register_worker message (works for remote workers too)
/// and are monitored from then on.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "router/completion_estimate.hpp"
#include "router/placement.hpp"
#include "router/tenancy.hpp"
#include "core/request.hpp"

namespace lf::router {

/// Settings of a router.
struct router_config {
  placement_options placement;
  std::size_t max_queue = 256;                   ///< admission queue bound
  std::uint32_t max_inflight_per_worker = 64;    ///< placed-not-ended requests per worker
  std::uint32_t retry_after_ms = 200;            ///< hint sent with `overloaded`
  /// Mid-stream moves (lost or drained workers) one request may take; the next loss ends it
  /// with worker_lost.
  std::uint32_t max_resumptions = 3;
  /// How long a request moved off a lost or drained worker waits for another one (its deadline
  /// may end it sooner); then it ends with worker_lost rather than wait for a worker that may
  /// never come.
  std::chrono::milliseconds move_wait{30000};
  /// While no worker takes requests (every one drained or lost), new requests are refused at
  /// once with no_workers and queued ones wait at most this long for one to come back (or be
  /// undrained), then end with no_workers: long enough for a worker to restart.
  std::chrono::milliseconds max_queue_wait{30000};
  /// Drains move a request with its computed K/V (the drained worker exports its whole blocks,
  /// the next one imports them) instead of recomputing them there: measured ~10x shorter pauses
  /// (docs/benchmarks.md, "Resumption"). A lost worker's requests are always recomputed.
  bool ship_kv = true;
  /// What requests are validated against (core/request.hpp). context_window and vocab_size 0 =>
  /// those of the registered workers (the smallest); set from the model, they also refuse the
  /// registration of a worker whose model is smaller, so a validated request fits every worker.
  request_limits limits;
  /// Tenants: scheduling policy across them, per-tenant limits and weights.
  tenancy_options tenants;
  /// Refuse at once (deadline_unmeetable) a request with deadline_ms or ttft_ms that the router
  /// predicts will miss it (router/completion_estimate.hpp); off: such requests queue and time
  /// out.
  bool deadline_admission = true;
  /// Admission refuses a request predicted to need more than (1 - margin) of its deadline (or
  /// ttft target): the prediction is an estimate, and one admitted at the edge that misses
  /// wastes the capacity it used. In [0, 1).
  double deadline_margin = 0.1;
  /// How the router measures its workers for those predictions.
  rate_meter_options meter;
  /// The adapter registry's log file (router/adapter_log.hpp), replayed at start; "" keeps the
  /// registry in memory only (lost when the router stops).
  std::string adapter_log;
  /// Directories `adapters add` / `update` may take adapters from (paths are resolved, symlinks
  /// included, and must lie inside one); empty: every add is refused.
  std::vector<std::string> adapter_roots;
  /// Largest LoRA rank an add accepts.
  std::uint32_t max_adapter_rank = 64;
  /// Workers an added or updated adapter is loaded on at once, in the background (0: none; the
  /// first request loads it).
  std::uint32_t prefetch_copies = 1;
  /// A worker's registration must carry this token ([security.nodes] join_token_file, compared
  /// in constant time); empty: no token is asked (the node's CAF port is then on loopback only,
  /// or behind mutual TLS: cluster/config_check.cpp refuses anything else).
  std::string join_token;
};

/// Where an accepted request is.
enum class route_state { queued, placed, streaming };

/// "queued", "placed", "streaming".
std::string_view to_string(route_state s) noexcept;

/// Spawns a router. It runs until it is sent an exit message. Throws std::runtime_error when the
/// adapter log cannot be read or replayed (naming the file and line).
actors::router_actor spawn_router(caf::actor_system& sys, router_config cfg = {});

} // namespace lf::router
