// `lorafleet node`, `lorafleet launch` and `lorafleet keygen`: multi-node clusters from a TOML
// config (docs/cluster.md) and CURVE key pairs for the client gateway.
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <pthread.h>
#include <sys/stat.h>
#include <zmq.h>

#include "cluster/child_process.hpp"
#include "cluster/endpoints.hpp"
#include "cluster/gateway_node.hpp"
#include "cluster/launcher.hpp"
#include "cluster/router_node.hpp"
#include "gateway/common/host_port.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/log_flags.hpp"
#include "tools/cli/node_run.hpp"

namespace lf::tools {

namespace fs = std::filesystem;


namespace {

/// A gateway node: serves until a stop signal, then drains its clients' requests.
int run_gateway_node(const cluster::cluster_config& cfg, const cluster::node_config& node,
                     std::chrono::seconds drain, const std::string& ready_file, sigset_t sigs) {
  log_line("gateway node \"" + node.name + "\" of cluster \"" + cfg.name + "\" starting");
  cluster::gateway_node gn(cfg, node, log_line);
  log_line("ready: clients connect to " + gn.endpoint() + (gn.http_url().empty() ? "" : " and " + gn.http_url())
           + "; SIGINT/SIGTERM drains and stops");
  if (!ready_file.empty())
    std::ofstream(ready_file) << gn.endpoint() << "\n";
  int sig = 0;
  sigwait(&sigs, &sig);
  log_line(std::string(signal_name(sig)) + ": not accepting new requests; draining for up to "
           + std::to_string(drain.count()) + " s");
  const auto cancelled = gn.stop(drain);
  log_line("stopped (" + std::to_string(cancelled) + " cancelled at shutdown)");
  return 0;
}

} // namespace

int cmd_node(int argc, char** argv) {
  // Blocked before any thread starts, so that sigwait (and nothing else) takes them.
  auto sigs = block_stop_signals();
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--join")
      return cmd_node_join(argc, argv, sigs);
  args a(argc, argv, 2);
  const auto path = config_arg(a, "lorafleet node CONFIG --name NODE [--drain-timeout S] [--ready-file PATH] "
                                  "[--probe-listen HOST:PORT] [--log-level L] [--log-format text|json]\n"
                                  "       lorafleet node --join HOST:PORT [--name NAME] [worker flags] (lorafleet node --help)");
  const auto name = a.required("name");
  const auto drain = std::chrono::seconds(a.integer_in("drain-timeout", 10, 0, 86400));
  const auto ready_file = a.str("ready-file");
  const auto probe_listen = a.str("probe-listen");
  const auto logs = log_settings_from(a, "info", name);
  a.defer_check();
  a.finish();
  cluster::load_options lo;
  lo.default_model_dir = default_model_dir();
  auto cfg = cluster::load_cluster_config(path, lo);
  if (!cfg.find(name)) {
    // A node the file does not name joins as a worker node with [workers]' settings (its
    // security, heartbeats and router address are the file's).
    if (!cluster::valid_node_name(name))
      throw std::invalid_argument("--name \"" + name + "\": use 1 to 64 letters, digits, '-', '_' and '.'");
    cluster::node_config joined;
    joined.name = name;
    joined.host = "localhost";  // connects out only
    joined.workers = cfg.worker_defaults;
    if (joined.workers.count == 0)
      joined.workers.count = 1;
    cfg.nodes.push_back(joined);
  }
  const auto* node = cfg.find(name);
  if (std::string why; !probe_listen.empty() && !gateway::parse_host_port(probe_listen, &why))
    throw std::invalid_argument("--probe-listen: " + why);
  if (auto why = cluster::check_router_exposure(cfg); !why.empty() && cfg.is_router(name))
    throw std::invalid_argument(path + ": " + why);
  args::checkpoint();
  log::configure(logs);
  int sig = 0;
  if (cfg.is_gateway(name))
    return run_gateway_node(cfg, *node, drain, ready_file, sigs);
  if (cfg.is_router(name)) {
    log_line("router node \"" + name + "\" of cluster \"" + cfg.name + "\" starting");
    cluster::router_node rn(cfg, *node, log_line);
    if (cfg.split_front()) {
      log_line("ready: a router replica on port " + std::to_string(rn.port())
               + " (the gateway nodes reach it); SIGINT/SIGTERM stops it");
    } else {
      // A wildcard bind ("tcp://0.0.0.0:5555") is reached at the router node's host.
      const auto ep = rn.endpoint().find("0.0.0.0") == std::string::npos ? rn.endpoint() : cluster::client_endpoint(cfg);
      log_line("ready: clients connect to " + ep + "; SIGINT/SIGTERM drains and stops");
    }
    if (!ready_file.empty())
      std::ofstream(ready_file) << (cfg.split_front() ? "router " + std::to_string(rn.port()) : rn.endpoint()) << "\n";
    sigwait(&sigs, &sig);
    log_line(std::string(signal_name(sig)) + ": not accepting new requests; draining for up to "
             + std::to_string(drain.count()) + " s");
    const auto st = rn.stats();
    const auto cancelled = rn.stop(drain);
    log_line("stopped (" + std::to_string(st.completed) + " completed, " + std::to_string(st.failed)
             + " failed, " + std::to_string(cancelled) + " cancelled at shutdown)");
    return 0;
  }
  log_line("worker node \"" + name + "\" of cluster \"" + cfg.name + "\" starting");
  return run_worker_node(cfg, *node, {probe_listen, drain, ready_file}, sigs);
}

int cmd_launch(int argc, char** argv) {
  args a(argc, argv, 2, {"dry-run"});
  const auto path = config_arg(a, "lorafleet launch CONFIG [--dry-run] [--ready-file PATH] [--log-level L] [--log-format text|json]");
  cluster::launch_options o;
  o.dry_run = a.has("dry-run");
  o.ready_file = a.str("ready-file");
  o.self_binary = a.str("binary", cluster::self_executable());
  const auto logs = log_settings_from(a);
  o.node_args = log_flags_of(logs);
  o.raw_node_output = logs.fmt == log::format::json;
  a.finish();
  log::configure(logs);
  cluster::load_options lo;
  lo.check_paths = !o.dry_run;  // a dry run may look at a config made for other machines
  const auto cfg = cluster::load_cluster_config(path, lo);
  return cluster::run_launch(cfg, o);
}

int cmd_keygen(int argc, char** argv) {
  args a(argc, argv, 2, {"force"});
  const auto out = a.required("out");
  const auto name = a.str("name", "server");
  const bool force = a.has("force");
  a.finish();
  if (name.empty() || name.find('/') != std::string::npos)
    throw std::invalid_argument("--name must be a plain file name");
  fs::create_directories(out);
  const auto pub = fs::path(out) / (name + ".public");
  const auto sec = fs::path(out) / (name + ".secret");
  if (!force && (fs::exists(pub) || fs::exists(sec)))
    throw std::invalid_argument(pub.string() + " or " + sec.string() + " exists (--force overwrites)");
  char p[41] = {}, s[41] = {};
  if (zmq_curve_keypair(p, s) != 0)
    throw std::runtime_error("this libzmq has no CURVE support");
  {
    // The secret file is created with mode 0600 before anything is written to it.
    const auto old = ::umask(077);
    std::ofstream(sec, std::ios::trunc) << s << "\n";
    ::umask(old);
    fs::permissions(sec, fs::perms::owner_read | fs::perms::owner_write);
  }
  std::ofstream(pub, std::ios::trunc) << p << "\n";
  std::cout << "public key " << p << "\n  " << pub.string() << "\n  " << sec.string() << " (keep it secret)\n";
  return 0;
}

} // namespace lf::tools
