#pragma once
/// A worker node that joins a running cluster with nothing but the router's address
/// (`lorafleet node --join HOST:PORT`): its settings, made into the same cluster_config a node
/// named in a TOML file runs with, so worker_node serves both the same way. Pure C++.
///
///   join_settings j;
///   j.router = "lorafleet-router-cluster:7070";   // a DNS name may resolve only later
///   j.name = "lorafleet-worker-5d8c-x2x9q";        // default: the host name (the pod's name)
///   j.workers.count = 1; j.workers.settings = ...; // serve's worker flags
///   auto cfg = join_cluster_config(j);             // throws std::invalid_argument naming the flag
///   worker_node n(cfg, *cfg.find(j.name), log);

#include <chrono>
#include <string>

#include "cluster/cluster_config.hpp"

namespace lf::cluster {

/// What `node --join` is given.
struct join_settings {
  std::string router;           ///< "HOST:PORT" of the router node's CAF port
  std::string name;             ///< this node's name (valid_node_name)
  std::string model_dir, tokenizer_dir, adapter_dir;
  worker_group workers;         ///< count and every worker key
  node_security tls;            ///< ca_file + certificate + key (all or none), join_token_file
  std::chrono::milliseconds heartbeat_interval{1000}, heartbeat_timeout{5000};
  std::chrono::milliseconds reconnect_initial{200}, reconnect_max{5000};
};

/// A cluster_config with two nodes: "router" at the given address (its workers unknown here) and
/// this node with its workers. Throws std::invalid_argument naming the flag (--join, --name,
/// --tls-*, --heartbeat-*) when a value is refused.
cluster_config join_cluster_config(const join_settings& j);

} // namespace lf::cluster
