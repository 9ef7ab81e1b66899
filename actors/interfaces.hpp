#pragma once
/// Typed actor interfaces of the cluster. A message outside an interface does not compile.
///
/// Who talks to whom:
///   gateway / client ──(generate_request | cancel_request)──> router_actor
///   router_actor ──(token_event* then done_event | error_event, a worker step's as one
///                   event_batch)──> event_sink (the sender)
///   worker_actor ──request(register_worker) -> worker_id──> router_actor, then worker_load
///   router_actor ──(worker_submit | worker_cancel)──> worker_actor
///   serving loop thread ──anon_send(worker_step: a step's tokens and terminals)──> router_actor

#include <cstdint>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/messages.hpp"

namespace lf::actors {

/// Whatever receives a request's events: a gateway actor, or a scoped_actor in tests (cast with
/// caf::actor_cast<event_sink>(self)). Exactly one done_event or error_event per request.
using event_sink = caf::typed_actor<caf::reacts_to<token_event>, caf::reacts_to<done_event>,
                                    caf::reacts_to<error_event>, caf::reacts_to<event_batch>>;

/// One worker: a shell around a serving loop.
using worker_actor = caf::typed_actor<
  caf::reacts_to<worker_submit>,                 // from the router
  caf::reacts_to<worker_cancel>,                 // from the router
  caf::reacts_to<worker_credit>,                 // from the router
  caf::reacts_to<worker_adapters>,               // from the router: registry events
  caf::reacts_to<worker_prefetch>,               // from the router
  caf::replies_to<adapter_check>::with<adapter_checked>,  // from the router: before an add
  caf::reacts_to<request_ended>,                 // from its own serving loop
  caf::reacts_to<resync_atom>,                   // from the router: prefix-cache snapshot, please
  caf::reacts_to<report_atom>,                   // its own report timer
  caf::replies_to<caf::get_atom>::with<worker_load>>;  // a load snapshot now

/// The router: admission, placement, streaming back, worker supervision.
using router_actor = caf::typed_actor<
  // Clients. The sender is the event sink; anonymous requests are dropped (nowhere to reply).
  caf::reacts_to<generate_request>,
  caf::reacts_to<cancel_request>,
  caf::reacts_to<credit_request>,
  // Workers. The sender of register_worker is the worker; it is monitored from then on.
  caf::replies_to<register_worker>::with<worker_id>,
  caf::reacts_to<worker_load>,
  caf::reacts_to<worker_step>,    // from a serving loop's thread, one per step
  caf::reacts_to<worker_failed>,  // a submit the worker could not take
  caf::reacts_to<prefix_events>,  // from a serving loop's thread: its prefix cache's changes
  // Its own deadline timers.
  caf::reacts_to<expire_atom, route_id>,
  caf::reacts_to<stranded_atom, route_id, std::uint32_t>,
  caf::reacts_to<outage_atom, std::uint64_t>,
  // Status: now, or once at least n workers are registered (readiness).
  caf::replies_to<caf::get_atom>::with<router_stats>,
  caf::replies_to<caf::wait_for_atom, std::uint32_t>::with<router_stats>,
  // Operators and leaving worker nodes: drain a node (its name, or the name of one worker).
  caf::replies_to<drain_atom, std::string>::with<std::uint32_t, std::uint32_t>,
  // Operators: undo a drain (same names as drain); replies with the workers put back.
  caf::replies_to<undrain_atom, std::string>::with<std::uint32_t>,
  // Operators: the adapter registry (list, add, update, remove).
  caf::replies_to<adapter_command>::with<adapter_reply>>;

} // namespace lf::actors
