#include "cluster/cluster_config.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cluster/config_detail.hpp"
#include "core/access.hpp"
#include "core/secret_file.hpp"

namespace lf::cluster {

namespace fs = std::filesystem;

std::string check_router_exposure(const cluster_config& cfg) {
  if (cfg.tls.enabled() || !cfg.tls.join_token_file.empty())
    return {};
  for (const auto* r : cfg.routers()) {
    const auto& b = r->bind.empty() ? r->host : r->bind;
    if (b == "localhost" || auth::loopback_host(b))
      continue;
    return "the router's CAF port (" + b + ":" + std::to_string(r->port)
         + ") would be reachable beyond this machine with neither mutual TLS nor a join token, so anyone "
           "who reaches it could join as a worker and be sent prompts: set [security.nodes] ca_file "
           "(docs/cluster.md) or join_token_file, or bind it to 127.0.0.1";
  }
  return {};
}

bool valid_node_name(const std::string& s) noexcept {
  return !s.empty() && s.size() <= 64
         && std::all_of(s.begin(), s.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
                     || c == '_' || c == '.';
            });
}

std::string read_join_token(const std::string& path, std::string& why) {
  why.clear();
  std::string text;
  try {
    text = secrets::read_secret_file(path, "the join token file");
  } catch (const std::invalid_argument& e) {
    why = e.what();
    return {};
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? std::string{} : text.substr(first, last - first + 1);
  if (text.size() < 16) {
    why = path + ": a join token needs at least 16 characters (openssl rand -hex 32 > " + path + ")";
    return {};
  }
  return text;
}

std::string to_string(const config_issue& issue) {
  std::string out = issue.file;
  if (issue.pos.line > 0) {
    out += ":" + std::to_string(issue.pos.line);
    if (issue.pos.column > 0)
      out += ":" + std::to_string(issue.pos.column);
  }
  out += ": ";
  if (!issue.key.empty())
    out += issue.key + ": ";
  return out + issue.reason;
}

namespace {

std::string join(const std::vector<config_issue>& issues) {
  std::string out;
  for (const auto& i : issues)
    out += (out.empty() ? "" : "\n") + to_string(i);
  return out;
}

} // namespace

config_error::config_error(std::vector<config_issue> issues)
    : std::invalid_argument(join(issues)), issues_(std::move(issues)) {}

const node_config* cluster_config::find(const std::string& name) const {
  for (const auto& n : nodes)
    if (n.name == name)
      return &n;
  return nullptr;
}

const node_config& cluster_config::router() const {
  if (const auto* n = find(router_node))
    return *n;
  throw std::logic_error("cluster config without its router node " + router_node);
}

std::vector<const node_config*> cluster_config::routers() const {
  std::vector<const node_config*> out;
  for (const auto& name : router_nodes.empty() ? std::vector<std::string>{router_node} : router_nodes)
    if (const auto* n = find(name))
      out.push_back(n);
  return out;
}

bool cluster_config::is_router(const std::string& name) const {
  return name == router_node || std::find(router_nodes.begin(), router_nodes.end(), name) != router_nodes.end();
}

bool cluster_config::is_gateway(const std::string& name) const {
  return std::find(gateway_nodes.begin(), gateway_nodes.end(), name) != gateway_nodes.end();
}

std::string cluster_config::gateway_listen_of(const node_config& n) const {
  return n.gateway_listen.empty() ? gateway_listen : n.gateway_listen;
}

std::string cluster_config::http_listen_of(const node_config& n) const {
  return n.http_listen.empty() ? http_listen : n.http_listen;
}

std::uint32_t cluster_config::total_workers() const {
  std::uint32_t n = 0;
  for (const auto& node : nodes)
    n += node.workers.count;
  return n;
}

bool valid_z85_key(const std::string& key) noexcept {
  static constexpr std::string_view alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  return key.size() == 40
         && std::all_of(key.begin(), key.end(),
                        [](char c) { return alphabet.find(c) != std::string_view::npos; });
}

namespace detail {

void parse_state::add(const std::string& key, std::string reason) {
  // The key's own position, else its nearest recorded parent's ("nodes[2].port" -> "nodes[2]").
  source_pos pos;
  for (std::string k = key; !k.empty();) {
    if (auto it = positions.find(k); it != positions.end() && it->second.line > 0) {
      pos = it->second;
      break;
    }
    const auto cut = k.find_last_of(".[");
    k = cut == std::string::npos ? std::string{} : k.substr(0, cut);
  }
  add_at(pos, key, std::move(reason));
}

bool parse_state::reported(const std::string& key) const {
  for (const auto& i : issues)
    if (i.key == key || (i.key.size() > key.size() && i.key.compare(0, key.size(), key) == 0
                         && (i.key[key.size()] == '.' || i.key[key.size()] == '[')))
      return true;
  return false;
}

void parse_state::add_at(source_pos pos, const std::string& key, std::string reason) {
  issues.push_back({file, pos, key, std::move(reason)});
}

std::string resolve_path(const fs::path& dir, const std::string& value) {
  fs::path p(value);
  return (p.is_absolute() ? p : dir / p).lexically_normal().string();
}

} // namespace detail

cluster_config parse_cluster_config(const std::string& text, const std::string& path,
                                    load_options opts) {
  detail::parse_state st;
  st.file = path;
  st.opts = opts;
  std::error_code ec;
  auto abs = fs::absolute(path, ec);
  st.dir = abs.parent_path();
  cluster_config cfg;
  cfg.file = abs.lexically_normal().string();
  if (detail::read_config(text, cfg, st))
    detail::check_config(cfg, st);
  if (!st.issues.empty()) {
    // File order; issues without a position (whole-file problems) last.
    std::stable_sort(st.issues.begin(), st.issues.end(), [](const config_issue& a, const config_issue& b) {
      auto key = [](const config_issue& i) {
        return std::make_pair(i.pos.line == 0 ? UINT32_MAX : i.pos.line, i.pos.column);
      };
      return key(a) < key(b);
    });
    throw config_error(std::move(st.issues));
  }
  return cfg;
}

cluster_config load_cluster_config(const std::string& path, load_options opts) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw config_error({{path, {}, "", "cannot read the config file"}});
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_cluster_config(ss.str(), path, opts);
}

} // namespace lf::cluster
