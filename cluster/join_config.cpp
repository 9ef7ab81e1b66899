#include "cluster/join_config.hpp"

#include <stdexcept>

#include "gateway/host_port.hpp"

namespace lf::cluster {

cluster_config join_cluster_config(const join_settings& j) {
  std::string why;
  const auto at = gateway::parse_host_port(j.router, &why);
  if (!at)
    throw std::invalid_argument("--join: " + why);
  if (at->port == 0)
    throw std::invalid_argument("--join " + j.router + ": the router's CAF port is needed (HOST:PORT)");
  if (!valid_node_name(j.name))
    throw std::invalid_argument("--name \"" + j.name
                                + "\": use 1 to 64 letters, digits, '-', '_' and '.' (the host name is the default)");
  if (j.name == "router")
    throw std::invalid_argument("--name router: that name is the router node's");
  const auto& t = j.tls;
  const int tls_parts = !t.ca_file.empty() + !t.certificate.empty() + !t.key.empty();
  if (tls_parts != 0 && tls_parts != 3)
    throw std::invalid_argument("--tls-ca, --tls-cert and --tls-key go together (mutual TLS with the cluster CA)");
  if (j.heartbeat_interval.count() > 0 && j.heartbeat_timeout.count() > 0
      && j.heartbeat_timeout < 2 * j.heartbeat_interval)
    throw std::invalid_argument("--heartbeat-timeout-ms must be at least twice --heartbeat-interval-ms");
  if (j.reconnect_max < j.reconnect_initial)
    throw std::invalid_argument("the reconnect backoff's largest wait is below its first");
  if (j.model_dir.empty())
    throw std::invalid_argument("--model DIR is needed (this build has no default model)");
  if (j.workers.count == 0)
    throw std::invalid_argument("--workers must be at least 1");

  cluster_config c;
  c.name = "joined";
  c.model_dir = j.model_dir;
  c.tokenizer_dir = j.tokenizer_dir;
  c.adapter_dir = j.adapter_dir;
  c.router_node = "router";
  c.tls = j.tls;
  c.heartbeat_interval = j.heartbeat_interval;
  c.heartbeat_timeout = j.heartbeat_timeout;
  c.reconnect_initial = j.reconnect_initial;
  c.reconnect_max = j.reconnect_max;
  node_config router;
  router.name = "router";
  router.host = at->host;
  router.port = static_cast<std::uint16_t>(at->port);
  router.bind = at->host;
  router.workers.count = 0;
  node_config self;
  self.name = j.name;
  self.host = "localhost";  // connects out only; its host is never dialled
  self.workers = j.workers;
  c.nodes = {router, self};
  return c;
}

} // namespace lf::cluster
