#pragma once
/// Actor-system setup shared by every process of the cluster (nodes, tools, tests).
///
///   caf::actor_system_config cfg;
///   lf::actors::add_lorafleet_types(cfg);
///   cfg.load<caf::io::middleman>();   // nodes that talk to other nodes
///   caf::actor_system sys{cfg};

#include <caf/fwd.hpp>

namespace lf::actors {

/// Registers every message type of actors/messages.hpp (so they can cross nodes), renders errors
/// of the "serve" category with serve_errc's names, and picks the sharing scheduler (see the
/// .cpp).
void add_lorafleet_types(caf::actor_system_config& cfg);

} // namespace lf::actors
