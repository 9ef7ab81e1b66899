#include "cluster/endpoints.hpp"

#include <algorithm>
#include <cctype>

#include "cluster/cluster_config.hpp"

namespace lf::cluster {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_loopback(std::string_view h) {
  const auto l = lower(h);
  return l == "localhost" || l == "::1" || l == "[::1]" || l.rfind("127.", 0) == 0;
}

} // namespace

std::optional<zmq_endpoint> parse_endpoint(std::string_view ep, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<zmq_endpoint> {
    if (why)
      *why = std::move(reason);
    return std::nullopt;
  };
  zmq_endpoint out;
  if (ep.rfind("ipc://", 0) == 0) {
    out.transport = "ipc";
    out.host = std::string(ep.substr(6));
    if (out.host.empty())
      return fail("ipc:// needs a path");
    return out;
  }
  if (ep.rfind("tcp://", 0) != 0)
    return fail("expected tcp://HOST:PORT or ipc://PATH");
  auto rest = ep.substr(6);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return fail("expected tcp://HOST:PORT");
  out.transport = "tcp";
  out.host = std::string(rest.substr(0, colon));
  const auto port = rest.substr(colon + 1);
  if (port.empty() || port.size() > 5
      || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return fail("the port must be a number in [1, 65535]");
  const auto p = std::stoul(std::string(port));
  if (p < 1 || p > 65535)
    return fail("the port must be a number in [1, 65535]");
  out.port = static_cast<std::uint16_t>(p);
  return out;
}

std::string host_key(std::string_view host) {
  return is_loopback(host) ? std::string("loopback") : lower(host);
}

bool is_local_host(std::string_view host, const std::vector<std::string>& local_names) {
  if (is_loopback(host))
    return true;
  const auto h = lower(host);
  return std::any_of(local_names.begin(), local_names.end(),
                     [&](const std::string& n) { return !n.empty() && lower(n) == h; });
}

std::string client_endpoint(const cluster_config& cfg) {
  // The gateways' node: the first gateway node of a split front, else the router node.
  const auto* r = cfg.find(cfg.split_front() ? cfg.gateway_nodes.front() : cfg.router_node);
  const auto listen = r ? cfg.gateway_listen_of(*r) : cfg.gateway_listen;
  auto ep = parse_endpoint(listen);
  if (!ep || ep->transport != "tcp" || (ep->host != "*" && ep->host != "0.0.0.0"))
    return listen;
  return "tcp://" + (r ? r->host : std::string("127.0.0.1")) + ":" + std::to_string(ep->port);
}

} // namespace lf::cluster
