#pragma once
/// The router node of a cluster: the router actor published on the node's CAF port, the client
/// gateway, and the node's own workers (if any). Worker nodes register their workers with the
/// published router; the router monitors each, so a lost node's requests are placed again or end
/// with worker_lost.
///
///   router_node n(cfg, cfg.router(), log);   // publish, load local workers, bind the gateway
///   n.endpoint();                            // "tcp://127.0.0.1:5555"
///   n.stop(std::chrono::seconds(10));        // refuse new work, drain, cancel the rest

#include <chrono>
#include <memory>
#include <string>

#include "actors/messages.hpp"
#include "cluster/node_system.hpp"

namespace lf::cluster {

/// See the file comment.
class router_node {
public:
  /// Starts everything; throws std::runtime_error (port taken, model, gateway bind) with the
  /// reason. Logs worker registrations as the worker count changes.
  router_node(const cluster_config& cfg, const node_config& self, log_fn log);
  /// stop(0) if not done yet.
  ~router_node();
  router_node(const router_node&) = delete;
  router_node& operator=(const router_node&) = delete;

  /// The client endpoint bound.
  std::string endpoint() const;
  /// The CAF port the router is published on.
  std::uint16_t port() const;
  /// The router's statistics now (zeroes if it does not answer within a second).
  actors::router_stats stats();
  /// Refuses new requests, waits up to `drain` for those in flight, cancels the rest (each gets
  /// its terminal reply), then stops the actors. Returns how many were cancelled. Idempotent.
  std::size_t stop(std::chrono::milliseconds drain);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::cluster
