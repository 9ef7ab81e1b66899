#pragma once
/// A multi-node cluster described by one TOML file (docs/cluster.md, key by key): the nodes, which
/// of them runs the router and the client gateway, the workers on each node, model and adapter
/// directories, placement, limits, heartbeats, reconnection, security and launch settings.
///
///   auto cfg = lf::cluster::load_cluster_config("cluster-configs/three-nodes.toml");
///   const auto& head = cfg.router();          // the node that runs router + gateway
///   for (const auto& n : cfg.nodes) ...       // n.workers.count workers each
///
/// Loading validates everything at once and throws config_error listing every problem as
/// "FILE:LINE:COL: KEY: reason" (unknown key, wrong type, value out of range, missing model
/// directory, duplicate node name, port clash, bad CURVE key, ...). Relative paths in the file
/// are resolved against the file's own directory. Pure C++ (no CAF, torch or zmq).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "router/router_config.hpp"
#include "core/request.hpp"
#include "worker/worker_settings.hpp"

namespace lf::cluster {

/// Where a value came from in the file (1-based; 0 = unknown).
struct source_pos {
  std::uint32_t line = 0, column = 0;
};

/// One problem found in a config file.
struct config_issue {
  std::string file;    ///< the config file as given
  source_pos pos;
  std::string key;     ///< dotted key path, "nodes[2].port"; empty for file-level problems
  std::string reason;
};

/// "FILE:LINE:COL: KEY: reason" (parts that are unknown left out).
std::string to_string(const config_issue& issue);

/// Thrown by load_cluster_config: every problem of the file, in file order (an invalid_argument:
/// `lorafleet` exits with status 2 for it, as for a bad flag).
class config_error : public std::invalid_argument {
public:
  /// what() lists the issues, one per line.
  explicit config_error(std::vector<config_issue> issues);
  /// The issues, in file order.
  const std::vector<config_issue>& issues() const noexcept { return issues_; }

private:
  std::vector<config_issue> issues_;
};

/// The workers of one node: `count` identical workers sharing the node's process. `settings`
/// holds every worker key ([workers] and [nodes.workers] use worker::worker_settings' names and
/// defaults); its directories come from [cluster] and are filled in at load.
struct worker_group {
  std::uint32_t count = 1;
  std::chrono::milliseconds report_interval{100};  ///< load reports to the router
  worker::worker_settings settings;
};

/// One node: an operating-system process on some host.
struct node_config {
  std::string name;
  std::string host;            ///< where it runs, and where other nodes reach it
  std::uint16_t port = 0;      ///< CAF port; 0 = none (worker nodes only)
  std::string bind;            ///< address the CAF port binds to; empty = host
  worker_group workers;
  /// `lorafleet launch` starts this node over ssh with this target ("user@host"); empty: it
  /// starts it only when the host is local, and otherwise prints the command to run there.
  std::string ssh;
  std::string tls_certificate, tls_key;  ///< this node's own certificate (overrides [security.nodes])
  /// A gateway node's own client endpoints ([[nodes]] gateway_listen, http_listen): empty =>
  /// [gateway] listen and [http] listen.
  std::string gateway_listen, http_listen;
};

/// CURVE on the client gateway ([security.clients]); keys are Z85 (40 characters).
struct client_security {
  std::string public_key, secret_key;         ///< the gateway's key pair; empty: plaintext
  std::vector<std::string> allowed_keys;      ///< client public keys; empty: any CURVE client
  /// Names of allowed keys (key -> name): a key from `allowed_key_files` is named by its file
  /// name without the extension (keygen's NAME.public -> NAME). A named key's requests are that
  /// name's tenant.
  std::map<std::string, std::string> key_names;
  /// CURVE is on.
  bool enabled() const noexcept { return !secret_key.empty(); }
};

/// Mutual TLS between nodes ([security.nodes]): CAF's OpenSSL module.
struct node_security {
  std::string certificate, key, ca_file;  ///< PEM files (absolute after loading)
  std::string passphrase;                 ///< of the key, if it is encrypted
  /// A file holding the cluster's join token (absolute): the router refuses a worker's
  /// registration without it, and worker nodes send it. Empty: no token.
  std::string join_token_file;
  /// TLS is on.
  bool enabled() const noexcept { return !ca_file.empty(); }
};

/// How `lorafleet launch` runs the cluster ([launch]).
struct launch_settings {
  std::chrono::seconds ready_timeout{120};  ///< all workers registered within this
  std::chrono::seconds stop_timeout{30};    ///< SIGTERM, then SIGKILL after this
  bool restart = true;                      ///< restart a local node process that dies
  std::string remote_binary;                ///< lorafleet on other hosts; empty: this binary's path
  std::string remote_config;                ///< the config's path on other hosts; empty: same path
  std::vector<std::string> ssh_options;     ///< extra ssh arguments ("-p", "2222")
  /// CURVE key pair launch polls the gateway with (needed with an allow-list; Z85).
  std::string client_public_key, client_secret_key;
};

/// A whole validated cluster config.
struct cluster_config {
  std::string file;            ///< absolute path of the config file
  std::string name;
  std::string model_dir;       ///< absolute
  std::string tokenizer_dir;   ///< absolute; empty => model_dir
  std::string adapter_dir;     ///< absolute; empty => base model only
  std::string router_node;     ///< name of the (first) router node: router + gateway unless gateway_nodes
  /// [cluster] router_nodes: every router replica (router_node alone when the file names one).
  /// With more than one, the gateways run on gateway_nodes and workers register with each.
  std::vector<std::string> router_nodes;
  /// [cluster] gateway_nodes: nodes that run only the client gateways (ZeroMQ, HTTP) and reach
  /// every router; empty => the gateways run on the router node (one router).
  std::vector<std::string> gateway_nodes;
  std::string gateway_listen = "tcp://127.0.0.1:5555";
  std::size_t max_per_connection = 1024;
  std::string http_listen;      ///< [http] listen: host:port of the HTTP gateway; empty => none
  std::string http_model_name;  ///< [http] model_name: the base model's name in the API
  /// [auth] key_file: API keys and roles (core/api_keys.hpp), absolute; empty => none.
  std::string api_key_file;
  bool metrics_need_key = false;  ///< [auth] metrics_need_key: /metrics and the dashboard need a key
  std::string http_tls_cert;    ///< [http] tls_cert: PEM certificate chain; with tls_key => HTTPS
  std::string http_tls_key;     ///< [http] tls_key: its PEM private key
  /// [router] and [limits] (router/router_config.hpp): placement `cache_aware` unless the file
  /// says otherwise; adapter_roots empty => [cluster] adapter_dir, filled in at start.
  router::router_config router_cfg;
  std::size_t max_prompt_bytes = std::size_t{1} << 20;  ///< [limits]: the gateway's bound on a rendered prompt
  std::chrono::milliseconds heartbeat_interval{1000};  ///< 0: no heartbeats
  std::chrono::milliseconds heartbeat_timeout{5000};   ///< a silent peer is dropped after this
  std::chrono::milliseconds reconnect_initial{200};    ///< worker nodes: first retry delay
  std::chrono::milliseconds reconnect_max{5000};       ///< worker nodes: largest retry delay
  client_security clients;
  node_security tls;
  launch_settings launch;
  std::vector<node_config> nodes;  ///< in file order
  /// [workers]: the workers of a node the file does not name (`node CONFIG --name NEW` joins).
  worker_group worker_defaults;

  /// The node named `name`, or nullptr.
  const node_config* find(const std::string& name) const;
  /// The router node (exists in a validated config); the first of router_nodes.
  const node_config& router() const;
  /// Every router node, in router_nodes order.
  std::vector<const node_config*> routers() const;
  /// Does node `name` run a router? A gateway of its own (split front)?
  bool is_router(const std::string& name) const;
  bool is_gateway(const std::string& name) const;
  /// The gateways run on nodes of their own (gateway_nodes), apart from the routers.
  bool split_front() const noexcept { return !gateway_nodes.empty(); }
  /// The ZeroMQ / HTTP endpoint node `n` serves clients on (its own, else the cluster's).
  std::string gateway_listen_of(const node_config& n) const;
  std::string http_listen_of(const node_config& n) const;
  /// Workers over all nodes.
  std::uint32_t total_workers() const;
};

/// Loading options.
struct load_options {
  /// Check that directories and files named by the config exist (model, adapters, keys, TLS).
  /// Off: only the syntax and the values are checked (a config meant for other hosts).
  bool check_paths = true;
  /// The model directory when [cluster] model_dir is left out (the program's embedded default
  /// model); empty: model_dir is required.
  std::string default_model_dir;
};

/// Reads and validates a config file; throws config_error with every problem found.
cluster_config load_cluster_config(const std::string& path, load_options opts = {});

/// Same from text; `path` names the file in messages and anchors relative paths.
cluster_config parse_cluster_config(const std::string& text, const std::string& path,
                                    load_options opts = {});

/// "" when the router node's CAF port is safe to open: bound to loopback, or held to mutual TLS
/// ([security.nodes] ca_file) or a join token (join_token_file). Otherwise why not: anyone who
/// reaches the port could register a worker and be sent prompts. The router node refuses to
/// start then (the config itself loads, for `launch --dry-run` and other hosts' plans).
std::string check_router_exposure(const cluster_config& cfg);

/// A node name: 1 to 64 letters, digits, '-', '_' or '.' (a host name or a pod name fits).
bool valid_node_name(const std::string& name) noexcept;

/// The cluster's join token from `path` (a secret file: core/secret_file.hpp's mode rule), without
/// surrounding white space; "" with `why` set when the file is refused, empty, or the token is
/// shorter than 16 characters.
std::string read_join_token(const std::string& path, std::string& why);

/// Is `key` a Z85-encoded 32-byte CURVE key (40 characters of the Z85 alphabet)?
bool valid_z85_key(const std::string& key) noexcept;

} // namespace lf::cluster
