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
#include "cluster/launcher.hpp"
#include "cluster/router_node.hpp"
#include "cluster/worker_node.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"
#include "tools/log_flags.hpp"

namespace lf::tools {

namespace fs = std::filesystem;

namespace {

/// The node's own progress lines, through the structured logger (component "node").
void log_line(const std::string& line) { log::info("node", line); }

std::string config_arg(args& a, const char* usage) {
  if (a.positional().size() != 1)
    throw std::invalid_argument(std::string("usage: ") + usage);
  return a.positional()[0];
}

/// Blocks the stop signals in this thread (and every thread started later); sigwait takes them.
sigset_t block_stop_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);  // an ssh session that ends
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  return sigs;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"; }

} // namespace

int cmd_node(int argc, char** argv) {
  args a(argc, argv, 2);
  const auto path = config_arg(a, "lorafleet node CONFIG --name NODE [--drain-timeout S] [--ready-file PATH] [--log-level L] [--log-format text|json]");
  const auto name = a.required("name");
  const auto drain = std::chrono::seconds(a.integer_in("drain-timeout", 10, 0, 86400));
  const auto ready_file = a.str("ready-file");
  const auto logs = log_settings_from(a, "info", name);
  a.finish();
  log::configure(logs);
  const auto cfg = cluster::load_cluster_config(path);
  const auto* node = cfg.find(name);
  if (!node) {
    std::string names;
    for (const auto& n : cfg.nodes)
      names += (names.empty() ? "" : ", ") + n.name;
    throw std::invalid_argument("no node named \"" + name + "\" in " + path + " (nodes: " + names + ")");
  }
  auto sigs = block_stop_signals();
  int sig = 0;
  if (name == cfg.router_node) {
    log_line("router node \"" + name + "\" of cluster \"" + cfg.name + "\" starting");
    cluster::router_node rn(cfg, *node, log_line);
    // A wildcard bind ("tcp://0.0.0.0:5555") is reached at the router node's host.
    const auto ep = rn.endpoint().find("0.0.0.0") == std::string::npos ? rn.endpoint() : cluster::client_endpoint(cfg);
    log_line("ready: clients connect to " + ep + "; SIGINT/SIGTERM drains and stops");
    if (!ready_file.empty())
      std::ofstream(ready_file) << rn.endpoint() << "\n";
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
  cluster::worker_node wn(cfg, *node, log_line);
  std::promise<void> finished;
  auto done = finished.get_future();
  std::thread runner([&] {
    wn.run();
    finished.set_value();
  });
  sigwait(&sigs, &sig);
  log_line(std::string(signal_name(sig)) + ": stopping");
  wn.stop();
  // run() returns within a connect attempt's timeout; past that, something is stuck.
  const auto limit = std::max<std::chrono::milliseconds>(std::chrono::seconds(10), 2 * cfg.heartbeat_timeout);
  if (done.wait_for(limit) != std::future_status::ready) {
    log_line("still stopping after " + std::to_string(limit.count()) + " ms: exiting anyway");
    std::_Exit(1);
  }
  runner.join();
  log_line("stopped");
  return 0;
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
