#pragma once
/// The router actor: validates requests, admits them through a bounded queue, places them on
/// workers, streams their tokens back to whoever sent them and supervises the workers.
///
/// A request's life (route_state, router/route_table.hpp):
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
#include "router/router_config.hpp"
#include "core/request.hpp"

namespace lf::router {

/// Spawns a router. It runs until it is sent an exit message. Throws std::runtime_error when the
/// adapter log cannot be read or replayed (naming the file and line).
actors::router_actor spawn_router(caf::actor_system& sys, router_config cfg = {});

} // namespace lf::router
