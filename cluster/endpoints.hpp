#pragma once
/// Hosts and endpoints of a cluster config, as plain string logic: which hosts are this machine,
/// which two host names are the same machine (port clashes), what a client connects to.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lf::cluster {

struct cluster_config;

/// A ZeroMQ endpoint, split: "tcp://HOST:PORT" or "ipc://PATH".
struct zmq_endpoint {
  std::string transport;  ///< "tcp" or "ipc"
  std::string host;       ///< tcp: host or "*"; ipc: the path
  std::uint16_t port = 0; ///< tcp only
};

/// Parses a gateway endpoint; std::nullopt (and `why`) when it is not one of the two forms.
std::optional<zmq_endpoint> parse_endpoint(std::string_view ep, std::string* why = nullptr);

/// Loopback names collapse to one key ("localhost", "127.0.0.1", "::1", "127.x.y.z" =>
/// "loopback"), everything else is lower-cased: equal keys mean the same machine.
std::string host_key(std::string_view host);

/// Is `host` this machine? Loopback names, or one of `local_names` (this host's names and
/// interface addresses, compared case-insensitively).
bool is_local_host(std::string_view host, const std::vector<std::string>& local_names);

/// Where clients connect: the gateway's listen endpoint with a wildcard host ("*", "0.0.0.0")
/// replaced by the router node's host.
std::string client_endpoint(const cluster_config& cfg);

} // namespace lf::cluster
