#include "cluster/join_config.hpp"

#include <stdexcept>

#include "gateway/common/host_port.hpp"

namespace lf::cluster {

cluster_config join_cluster_config(const join_settings& j) {
  // HOST:PORT, or several separated by commas: router replicas of a split front, each registered with.
  std::vector<node_config> routers;
  std::string rest = j.router;
  while (true) {
    const auto comma = rest.find(',');
    const auto one = rest.substr(0, comma);
    std::string why;
    const auto at = gateway::parse_host_port(one, &why);
    if (!at)
      throw std::invalid_argument("--join: " + why);
    if (at->port == 0)
      throw std::invalid_argument("--join " + one + ": the router's CAF port is needed (HOST:PORT)");
    node_config r;
    r.name = "router-" + std::to_string(routers.size() + 1);  // one replica: "router" (below)
    r.host = at->host;
    r.port = static_cast<std::uint16_t>(at->port);
    r.bind = at->host;
    r.workers.count = 0;
    routers.push_back(std::move(r));
    if (comma == std::string::npos)
      break;
    rest = rest.substr(comma + 1);
  }
  if (routers.size() > 16)
    throw std::invalid_argument("--join: at most 16 router replicas");
  if (routers.size() == 1)
    routers[0].name = "router";
  if (!valid_node_name(j.name))
    throw std::invalid_argument("--name \"" + j.name
                                + "\": use 1 to 64 letters, digits, '-', '_' and '.' (the host name is the default)");
  for (const auto& r : routers)
    if (j.name == r.name)
      throw std::invalid_argument("--name " + j.name + ": that name is a router node's");
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
  c.router_node = routers.front().name;
  for (const auto& r : routers)
    c.router_nodes.push_back(r.name);
  c.tls = j.tls;
  c.heartbeat_interval = j.heartbeat_interval;
  c.heartbeat_timeout = j.heartbeat_timeout;
  c.reconnect_initial = j.reconnect_initial;
  c.reconnect_max = j.reconnect_max;
  node_config self;
  self.name = j.name;
  self.host = "localhost";  // connects out only; its host is never dialled
  self.workers = j.workers;
  c.nodes = routers;
  c.nodes.push_back(self);
  return c;
}

} // namespace lf::cluster
