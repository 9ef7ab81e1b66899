#pragma once
/// What every node process of a cluster shares: its actor-system config (message types,
/// middleman, heartbeats, TLS), the way it publishes or reaches the router (plain BASP or CAF's
/// OpenSSL module), and the worker / router / gateway settings derived from the cluster config.
///
///   node_system_config cfg(cluster, node);   // middleman + heartbeats (+ OpenSSL with TLS)
///   caf::actor_system sys{cfg};
///   auto router = connect_router(sys, *cluster.routers()[0], tls, timeout);  // worker, gateway nodes
///   publish_router(sys, router, cluster.router(), tls);                   // a router node

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>

#include "cluster/cluster_config.hpp"
#include "gateway/openai/http_gateway.hpp"
#include "gateway/zmq/gateway.hpp"
#include "router/router_actor.hpp"
#include "worker/worker_runtime.hpp"

namespace lf::cluster {

/// Writes one log line (the node prefixes nothing; `lorafleet launch` prefixes the node's name).
using log_fn = std::function<void(const std::string&)>;

/// The actor-system config of one node: lorafleet's message types, the middleman with
/// `middleman.heartbeat-interval` / `middleman.connection-timeout` from [heartbeat], and with
/// [security.nodes] the OpenSSL module with this node's certificate, key and the cluster CA
/// (mutual TLS: both sides must present a certificate signed by the CA).
class node_system_config : public caf::actor_system_config {
public:
  /// The config of `node` of `cfg`; throws std::runtime_error when TLS is on but cannot be made
  /// safe (cluster/openssl_guard.hpp).
  node_system_config(const cluster_config& cfg, const node_config& node);
  /// Is TLS on for this node?
  bool tls() const noexcept { return tls_; }

private:
  bool tls_ = false;
};

/// Publishes the router on router node `node`'s CAF port (its `bind` address), through TLS when on.
caf::expected<std::uint16_t> publish_router(caf::actor_system& sys, const actors::router_actor& router,
                                            const node_config& node, bool tls);

/// A handle on the router of router node `node`, through TLS when on; blocks up to `timeout`.
caf::expected<actors::router_actor> connect_router(caf::actor_system& sys, const node_config& node,
                                                   bool tls, std::chrono::milliseconds timeout);

/// The cluster's join token ([security.nodes] join_token_file), or "" without one; throws
/// std::runtime_error naming the file when it is refused.
std::string join_token_of(const cluster_config& cfg);

/// The settings of one worker of `group` (model, tokenizer and adapters from the cluster).
worker::worker_settings worker_settings_for(const cluster_config& cfg, const worker_group& group);

/// The router's settings from [router] and [limits].
router::router_config router_config_for(const cluster_config& cfg);

/// The gateway's settings from [gateway], [security.clients] and [auth] (the key file, loaded: throws
/// std::invalid_argument naming it when it is refused).
gateway::gateway_options gateway_options_for(const cluster_config& cfg);

/// The HTTP gateway's settings ([http], [auth]) for a node serving it on `listen`, with the
/// tokenizer and keys of `zmq` (gateway_options_for's) and the router's request `limits`
/// (router_config_for's: the model's window and vocabulary with the [router] limits).
gateway::http_options http_options_for(const cluster_config& cfg, const gateway::gateway_options& zmq,
                                       const std::string& listen, const request_limits& limits);

/// Loads `count` worker runtimes of `group` (the model, once per worker); throws like
/// worker_runtime does, naming the file.
std::vector<std::shared_ptr<worker::worker_runtime>> load_workers(const cluster_config& cfg,
                                                                  const worker_group& group,
                                                                  std::uint32_t count);

} // namespace lf::cluster
