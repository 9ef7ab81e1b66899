// Pass 2 of the config loader: relations between values, and the file system when asked.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "cluster/config_detail.hpp"
#include "cluster/endpoints.hpp"
#include "cluster/front_keys.hpp"
#include "core/api_keys.hpp"
#include "gateway/common/host_port.hpp"
#include "gateway/common/tls_files.hpp"
#include "worker/worker_settings.hpp"

namespace lf::cluster::detail {

namespace {

namespace fs = std::filesystem;

bool has_space(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

void check_workers(const worker_group& w, const std::string& path, parse_state& st) {
  for (const auto& i : worker::check_settings(w.settings, settings::file_key))
    st.add(path + "." + i.key, i.message);
}

/// router_node / router_nodes / gateway_nodes: who runs what. router_node becomes the first
/// router replica, so code that knows one router keeps working.
void check_roles(cluster_config& c, parse_state& st) {
  std::set<std::string> seen;
  for (const auto& r : c.router_nodes)
    if (!seen.insert(r).second)
      st.add("cluster.router_nodes", "\"" + r + "\" is listed twice");
  if (!c.router_nodes.empty()) {
    if (!c.router_node.empty() && c.router_node != c.router_nodes.front())
      st.add("cluster.router_node", "give router_node or router_nodes, not both");
    c.router_node = c.router_nodes.front();
  }
  for (const auto& g : c.gateway_nodes) {
    if (c.is_router(g))
      st.add("cluster.gateway_nodes", "\"" + g + "\" is a router node: a split front keeps gateways and routers apart");
    if (!seen.insert(g).second && !c.is_router(g))
      st.add("cluster.gateway_nodes", "\"" + g + "\" is listed twice");
  }
  if (c.router_nodes.size() > 1 && c.gateway_nodes.empty())
    st.add("cluster.gateway_nodes", "several router nodes need gateway nodes (the gateways reach every router)");
  if (c.router_nodes.empty() && !c.router_node.empty())
    c.router_nodes = {c.router_node};
}

void check_nodes(cluster_config& c, parse_state& st) {
  check_roles(c, st);
  if (c.nodes.empty()) {
    if (!st.reported("nodes"))
      st.add("nodes", "no [[nodes]]: a cluster needs at least the router node");
    return;
  }
  std::map<std::string, std::size_t> by_name;
  std::map<std::pair<std::string, std::uint16_t>, std::size_t> by_port;  // (host key, port)
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    auto& n = c.nodes[i];
    const auto p = "nodes[" + std::to_string(i + 1) + "]";
    if (!valid_node_name(n.name)) {
      by_name.emplace(n.name, i);  // still a node: no "router_node names no node" on top
      st.add(n.name.empty() ? p : p + ".name",
             n.name.empty() ? "missing name" : "\"" + n.name + "\": use letters, digits, '-', '_' and '.' (at most 64)");
    } else if (auto [it, fresh] = by_name.emplace(n.name, i); !fresh) {
      const auto first = "nodes[" + std::to_string(it->second + 1) + "]";
      st.add(p + ".name", "duplicate node name \"" + n.name + "\" (also " + first + " at line "
                            + std::to_string(st.positions[first].line) + ")");
    }
    if (n.host.empty() || has_space(n.host))
      st.add(n.host.empty() ? p : p + ".host", n.host.empty() ? "missing host" : "host has spaces");
    if (n.bind.empty())
      n.bind = n.host;
    const bool is_router = c.is_router(n.name);
    const bool is_gateway = c.is_gateway(n.name);
    if (is_router && n.port == 0 && !st.reported(p + ".port"))
      st.add(p, "the router node needs a port (worker nodes connect to it there)");
    if ((is_gateway || (is_router && c.split_front())) && n.workers.count > 0 && !st.reported(p + ".workers.count"))
      st.add(p + ".workers.count", std::string("a ") + (is_gateway ? "gateway" : "router")
                                     + " node of a split front runs no workers (give them nodes of their own)");
    if ((!n.gateway_listen.empty() || !n.http_listen.empty()) && !is_gateway && !(is_router && !c.split_front()))
      st.add(p + (n.gateway_listen.empty() ? ".http_listen" : ".gateway_listen"),
             "only a node that runs the gateways listens for clients");
    if (n.port != 0 && !n.host.empty()) {
      auto [it, fresh] = by_port.emplace(std::make_pair(host_key(n.host), n.port), i);
      if (!fresh)
        st.add(p + ".port", "port " + std::to_string(n.port) + " on " + n.host + " is already used by node \""
                              + c.nodes[it->second].name + "\"");
    }
    if (!is_router && !is_gateway && n.workers.count == 0)
      st.add(p + ".workers.count", "a worker node needs at least one worker");
    if (has_space(n.ssh))
      st.add(p + ".ssh", "expected an ssh target like user@host");
    check_workers(n.workers, p + ".workers", st);
  }
  auto named = [&](const std::string& key, const std::string& name) {
    if (by_name.count(name))
      return;
    std::string names;
    for (const auto& [n, i] : by_name)
      names += (names.empty() ? "" : ", ") + n;
    st.add(key, "no node named \"" + name + "\" (nodes: " + names + ")");
  };
  if (c.router_node.empty()) {
    st.add("cluster.router_node", "missing: name the node that runs the router and the gateway");
  } else {
    for (const auto& r : c.router_nodes.empty() ? std::vector<std::string>{c.router_node} : c.router_nodes)
      named(c.router_nodes.size() <= 1 ? "cluster.router_node" : "cluster.router_nodes", r);
  }
  for (const auto& g : c.gateway_nodes)
    named("cluster.gateway_nodes", g);
  // A file with no worker at all is an elastic cluster: worker nodes join it (node --join).
  // Nodes on other machines reach the router node at its host: it cannot be a loopback name.
  if (const auto* r = c.find(c.router_node); r && host_key(r->host) == "loopback") {
    for (std::size_t i = 0; i < c.nodes.size(); ++i)
      if (!c.nodes[i].host.empty() && host_key(c.nodes[i].host) != "loopback") {
        st.add("nodes[" + std::to_string(i + 1) + "].host",
               "node \"" + c.nodes[i].name + "\" is on " + c.nodes[i].host + " but the router node's host is "
                 + r->host + ", which only reaches this machine (give the router node a real address)");
        break;
      }
  }
  // The gateway's port must not be a CAF port of the router's machine.
  if (auto ep = parse_endpoint(c.gateway_listen); ep && ep->transport == "tcp") {
    if (const auto* r = c.find(c.router_node)) {
      const auto h = host_key(ep->host == "*" || ep->host == "0.0.0.0" ? r->host : ep->host);
      if (auto it = by_port.find({h, ep->port}); it != by_port.end())
        st.add("gateway.listen", "port " + std::to_string(ep->port) + " is node \""
                                   + c.nodes[it->second].name + "\"'s CAF port");
    }
  }
}

void check_security(cluster_config& c, parse_state& st) {
  auto& k = c.clients;
  if (k.public_key.empty() != k.secret_key.empty() && !st.reported("security.clients"))
    st.add("security.clients", "give both public_key and secret_key (lorafleet keygen writes a pair)");
  for (std::size_t i = 0; i < k.allowed_keys.size(); ++i)
    if (!valid_z85_key(k.allowed_keys[i]))
      st.add("security.clients.allowed_keys", "[" + std::to_string(i) + "] is not a CURVE key (40 Z85 characters)");
  if (!k.allowed_keys.empty() && !k.enabled())
    st.add("security.clients.allowed_keys", "an allow-list needs CURVE: set public_key and secret_key");
  auto& l = c.launch;
  if (l.client_public_key.empty() != l.client_secret_key.empty())
    st.add("launch", "give both client_public_key and client_secret_key");
  if (!l.client_public_key.empty() && !k.allowed_keys.empty()
      && std::find(k.allowed_keys.begin(), k.allowed_keys.end(), l.client_public_key) == k.allowed_keys.end())
    st.add("launch.client_public_key", "not in security.clients.allowed_keys: the gateway would refuse launch");

  auto& t = c.tls;
  const bool any_cert = !t.certificate.empty() || !t.key.empty()
                        || std::any_of(c.nodes.begin(), c.nodes.end(), [](const node_config& n) {
                             return !n.tls_certificate.empty() || !n.tls_key.empty();
                           });
  if (any_cert && t.ca_file.empty())
    st.add("security.nodes", "TLS needs ca_file (the cluster CA that signs every node's certificate)");
  if (t.enabled()) {
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      const auto& n = c.nodes[i];
      if ((n.tls_certificate.empty() ? t.certificate : n.tls_certificate).empty()
          || (n.tls_key.empty() ? t.key : n.tls_key).empty())
        st.add("nodes[" + std::to_string(i + 1) + "]",
               "TLS is on (security.nodes.ca_file) but node \"" + n.name
                 + "\" has no certificate and key (security.nodes or tls_certificate/tls_key)");
    }
  }
}

void check_tenants(const cluster_config& c, parse_state& st) {
  for (const auto& [name, limits] : c.router_cfg.tenants.tenants)
    if (!valid_tenant_name(name))
      st.add("tenants." + name, "not a tenant name: at most " + std::to_string(max_tenant_name_length)
                                  + " bytes without control characters");
  for (const auto& [key, name] : c.clients.key_names)
    if (!valid_tenant_name(name))
      st.add("security.clients.allowed_key_files", "the key file name \"" + name
                                                     + "\" cannot name a tenant (at most "
                                                     + std::to_string(max_tenant_name_length) + " bytes)");
}

void need_file(parse_state& st, const std::string& key, const std::string& path, const char* what) {
  std::error_code ec;
  if (!path.empty() && !fs::is_regular_file(path, ec))
    st.add(key, std::string(what) + " " + path + " does not exist");
}

void check_paths(const cluster_config& c, parse_state& st) {
  std::error_code ec;
  bool model_ok = false;
  if (!c.model_dir.empty()) {
    if (!fs::is_directory(c.model_dir, ec))
      st.add("cluster.model_dir", "model directory " + c.model_dir + " does not exist");
    else if (!fs::is_regular_file(fs::path(c.model_dir) / "config.json", ec))
      st.add("cluster.model_dir", c.model_dir + " has no config.json (not a model directory)");
    else
      model_ok = true;
  }
  const auto tok = c.tokenizer_dir.empty() ? c.model_dir : c.tokenizer_dir;
  if (!tok.empty() && (model_ok || !c.tokenizer_dir.empty()) && fs::is_directory(tok, ec)
      && (!fs::is_regular_file(fs::path(tok) / "vocab.json", ec)
          || !fs::is_regular_file(fs::path(tok) / "merges.txt", ec)))
    st.add(c.tokenizer_dir.empty() ? "cluster.model_dir" : "cluster.tokenizer_dir",
           tok + " has no vocab.json and merges.txt (set tokenizer_dir)");
  if (!c.tokenizer_dir.empty() && !fs::is_directory(c.tokenizer_dir, ec))
    st.add("cluster.tokenizer_dir", "tokenizer directory " + c.tokenizer_dir + " does not exist");
  if (!c.adapter_dir.empty() && !fs::is_directory(c.adapter_dir, ec))
    st.add("cluster.adapter_dir", "adapter directory " + c.adapter_dir + " does not exist");
  need_file(st, "security.nodes.certificate", c.tls.certificate, "certificate");
  need_file(st, "security.nodes.key", c.tls.key, "key file");
  need_file(st, "security.nodes.ca_file", c.tls.ca_file, "CA file");
  if (!c.tls.join_token_file.empty()) {
    std::string why;
    read_join_token(c.tls.join_token_file, why);
    if (!why.empty())
      st.add("security.nodes.join_token_file", why);
  }
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    const auto p = "nodes[" + std::to_string(i + 1) + "]";
    need_file(st, p + ".tls_certificate", c.nodes[i].tls_certificate, "certificate");
    need_file(st, p + ".tls_key", c.nodes[i].tls_key, "key file");
  }
  if (!c.api_key_file.empty()) {
    try {  // its mode, every line, duplicates: the same checks as at start
      const auto keys = auth::load_key_file(c.api_key_file);
      if (auto why = check_metrics_key(c, &keys, front_file_namer()); !why.empty())
        st.add("auth.metrics_need_key", why);
    } catch (const std::invalid_argument& e) {
      st.add("auth.key_file", e.what());
    }
  }
  // The HTTP gateway's: readable files (their PEM and the key's match are checked when the
  // router node starts it, naming the file).
  if (!c.http_tls_cert.empty() && !c.http_tls_key.empty()) {
    const gateway::tls_files tls{c.http_tls_cert, c.http_tls_key};
    if (auto err = gateway::check_tls_paths(tls, "certificate", "key file"); !err.empty())
      st.add(err.rfind("key file", 0) == 0 ? "http.tls_key" : "http.tls_cert", err);
  }
}

} // namespace

void check_config(cluster_config& c, parse_state& st) {
  if (c.model_dir.empty() && !st.reported("cluster.model_dir") && !st.opts.default_model_dir.empty())
    c.model_dir = st.opts.default_model_dir;
  if (c.model_dir.empty() && !st.reported("cluster.model_dir"))
    st.add("cluster.model_dir", "missing: the model directory every worker loads");
  if (c.name.empty())
    c.name = fs::path(st.file).stem().string();
  for (const auto& i : check_front(c, front_file_namer()))  // [gateway], [http], [auth]
    st.add(i.key, i.message);
  std::string why;
  if (!parse_endpoint(c.gateway_listen, &why))
    st.add("gateway.listen", "\"" + c.gateway_listen + "\": " + why);
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    const auto& n = c.nodes[i];
    const auto p = "nodes[" + std::to_string(i + 1) + "]";
    if (!n.gateway_listen.empty() && !parse_endpoint(n.gateway_listen, &why))
      st.add(p + ".gateway_listen", "\"" + n.gateway_listen + "\": " + why);
    if (!n.http_listen.empty() && !gateway::parse_host_port(n.http_listen, &why))
      st.add(p + ".http_listen", why);
  }
  if (c.heartbeat_interval.count() > 0 && c.heartbeat_timeout.count() > 0
      && c.heartbeat_timeout < 2 * c.heartbeat_interval)
    st.add("heartbeat.timeout_ms", "must be at least twice interval_ms ("
                                     + std::to_string(2 * c.heartbeat_interval.count())
                                     + "), or a live peer is dropped between two heartbeats");
  if (c.reconnect_max < c.reconnect_initial)
    st.add("reconnect.max_ms", "must be at least initial_ms");
  check_nodes(c, st);
  check_security(c, st);
  check_tenants(c, st);
  if (st.opts.check_paths)
    check_paths(c, st);
}

} // namespace lf::cluster::detail
