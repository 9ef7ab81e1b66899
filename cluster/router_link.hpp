#pragma once
/// The router link: what the gateways of a gateway node talk to instead of one router. To them it
/// is a router (actors::router_actor); to the router replicas it is one client (their event
/// sink). It keeps each live stream (gateway/common/router_link_book.hpp) and, when the replica carrying
/// it is lost (kill -9, a frozen node past the heartbeat timeout, or a replica stopping), sends
/// it to another replica as a continuation: the client sees a pause, then the same text an
/// undisturbed run gives.
///
///   per replica:  [down] ──connect (middleman, backoff)──> [up]: monitored, stats every interval
///                   ^                                          │ down_msg (connection lost)
///                   └──────────── its streams wait ────────────┘
///   generate_request (gateway) ──> seeded, booked, sent to pick()'s replica with the link's id
///   event_batch (replica) ──> tokens recorded and forwarded by the client's id; one terminal
///   a waiting stream ──> continued on the next replica up, or after wait_limit: worker_lost
///   get_atom, wait_for_atom ──> the best replica's; drain, undrain, adapter_command ──> every
///   live replica (the first answer is the reply)
///
/// A new request while no replica is up gets no_workers with a retry time. A stream's deadline
/// counts from its first submit, across replicas.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace lf::cluster {

/// One router replica: a node to connect to, or (in-process tests) a handle that is never
/// reconnected.
struct router_target {
  std::string name;                 ///< for logs
  std::string host;
  std::uint16_t port = 0;
  actors::router_actor handle;      ///< set: use this one; unset: connect to host:port
};

/// Settings of a router link.
struct router_link_options {
  std::vector<router_target> routers;
  bool tls = false;                                   ///< connect through CAF's OpenSSL module
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds reconnect_initial{200}, reconnect_max{5000};
  /// How long a stream whose replica was lost waits for another before it ends (worker_lost).
  std::chrono::milliseconds wait_limit{30000};
  /// How often each replica's stats are read (its accepting workers steer pick()).
  std::chrono::milliseconds stats_interval{500};
  /// Progress lines (replica up / lost, streams moved); not set => none.
  std::function<void(const std::string&)> log;
};

/// Spawns a link over `opts.routers` (it connects by itself). Send it what you would send a
/// router; its events come back to the sender as from a router.
actors::router_actor spawn_router_link(caf::actor_system& sys, router_link_options opts);

} // namespace lf::cluster
