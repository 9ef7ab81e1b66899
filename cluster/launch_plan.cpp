#include "cluster/launch_plan.hpp"

#include <algorithm>

#include "cluster/endpoints.hpp"

namespace lf::cluster {

std::string_view to_string(start_mode m) noexcept {
  switch (m) {
    case start_mode::local: return "local";
    case start_mode::ssh: return "ssh";
    case start_mode::manual: return "manual";
  }
  return "?";
}

std::vector<node_start> plan_launch(const cluster_config& cfg, const std::string& self_binary,
                                    const std::vector<std::string>& local_names,
                                    const std::vector<std::string>& node_args) {
  std::vector<node_start> out;
  const auto& l = cfg.launch;
  const auto remote_bin = l.remote_binary.empty() ? self_binary : l.remote_binary;
  const auto remote_cfg = l.remote_config.empty() ? cfg.file : l.remote_config;
  for (const auto& n : cfg.nodes) {
    node_start s;
    s.node = n.name;
    s.host = n.host;
    if (is_local_host(n.host, local_names)) {
      s.mode = start_mode::local;
      s.argv = {self_binary, "node", cfg.file, "--name", n.name};
      s.argv.insert(s.argv.end(), node_args.begin(), node_args.end());
    } else {
      s.mode = n.ssh.empty() ? start_mode::manual : start_mode::ssh;
      std::vector<std::string> remote{remote_bin, "node", remote_cfg, "--name", n.name};
      remote.insert(remote.end(), node_args.begin(), node_args.end());
      if (s.mode == start_mode::manual) {
        s.argv = remote;
      } else {
        // ssh joins its arguments into one remote shell command: quote them once, here.
        // -tt gives the remote command a terminal, so closing ssh (SIGTERM) ends it too.
        s.argv = {"ssh", "-tt", "-o", "BatchMode=yes"};
        s.argv.insert(s.argv.end(), l.ssh_options.begin(), l.ssh_options.end());
        s.argv.push_back(n.ssh);
        s.argv.push_back("--");
        s.argv.push_back(command_line(remote));
      }
    }
    out.push_back(std::move(s));
  }
  // Routers first (the others connect to them), then gateway nodes, then workers.
  auto rank = [&](const node_start& s) { return cfg.is_router(s.node) ? 0 : cfg.is_gateway(s.node) ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(), [&](const node_start& a, const node_start& b) { return rank(a) < rank(b); });
  return out;
}

std::string shell_quote(std::string_view s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
           || std::string_view("-_./:=@,+%").find(c) != std::string_view::npos;
  });
  if (plain)
    return std::string(s);
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv)
    out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

std::chrono::milliseconds backoff::next() {
  const auto d = next_;
  next_ = std::min(max_, next_ * 2);
  return d;
}

std::vector<std::string> line_splitter::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  for (char c : bytes) {
    if (c == '\n') {
      if (!partial_.empty() && partial_.back() == '\r')
        partial_.pop_back();
      lines.push_back(std::move(partial_));
      partial_.clear();
    } else {
      partial_ += c;
      if (partial_.size() >= max_line_) {
        lines.push_back(std::move(partial_));
        partial_.clear();
      }
    }
  }
  return lines;
}

std::string line_splitter::flush() {
  std::string rest = std::move(partial_);
  partial_.clear();
  return rest;
}

} // namespace lf::cluster
