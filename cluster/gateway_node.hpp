#pragma once
/// A gateway node of a split front ([cluster] gateway_nodes): the client gateways (ZeroMQ and,
/// with [http] listen, HTTP) in front of a router link (cluster/router_link.hpp) that reaches
/// every router replica. It runs no router and no worker: a router replica lost under load costs
/// its clients a pause, not their streams.
///
///   gateway_node g(cfg, *cfg.find("gateway-a"), log);   // bind, connect to the replicas
///   g.ready();                                          // a replica with workers is up
///   g.stop(std::chrono::seconds(10));                   // refuse new work, drain, cancel the rest

#include <chrono>
#include <memory>
#include <string>

#include "cluster/node_system.hpp"

namespace lf::cluster {

/// See the file comment.
class gateway_node {
public:
  /// Binds the gateways and starts connecting; throws std::runtime_error (bind, keys) with the
  /// reason.
  gateway_node(const cluster_config& cfg, const node_config& self, log_fn log);
  /// stop(0) if not done yet.
  ~gateway_node();
  gateway_node(const gateway_node&) = delete;
  gateway_node& operator=(const gateway_node&) = delete;

  /// The ZeroMQ endpoint bound; the HTTP gateway's URL ("" without one).
  std::string endpoint() const;
  std::string http_url() const;
  /// Takes work: some router replica answers with workers that accept requests (a node's /ready).
  bool ready();
  /// Refuses new requests, waits up to `drain` for those in flight, cancels the rest (each gets
  /// its terminal reply), then stops. Returns how many were cancelled. Idempotent.
  std::size_t stop(std::chrono::milliseconds drain);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::cluster
