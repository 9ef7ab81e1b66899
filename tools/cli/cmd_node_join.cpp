// `lorafleet node --join HOST:PORT`: a worker node that joins a running cluster with nothing but
// the router's address (docs/cluster.md, "Joining a running cluster"; docs/deploy.md).
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "cluster/join_config.hpp"
#include "core/log.hpp"
#include "gateway/common/host_port.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/log_flags.hpp"
#include "tools/cli/node_run.hpp"
#include "tools/cli/serve_options.hpp"

namespace lf::tools {

namespace {

namespace fs = std::filesystem;

/// $HOSTNAME (on Kubernetes: the pod's name), else the host name.
std::string default_node_name() {
  if (const char* h = std::getenv("HOSTNAME"); h != nullptr && *h != '\0')
    return h;
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0 && buf[0] != '\0')
    return buf;
  return "worker";
}

void need_file(const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (!path.empty() && !fs::is_regular_file(path, ec))
    throw std::invalid_argument(flag + " " + path + ": no such file");
}

} // namespace

int cmd_node_join(int argc, char** argv, sigset_t sigs) {
  args a(argc, argv, 2, setting_switches());
  if (!a.positional().empty())
    throw std::invalid_argument("--join takes no config file (a node named in one runs as lorafleet node CONFIG --name NODE)");
  cluster::join_settings j;
  j.router = a.required("join");
  j.name = a.str("name", default_node_name());
  j.workers.settings = worker_settings_from(a, "adapters", j.workers.count);
  j.model_dir = j.workers.settings.model_dir;
  j.tokenizer_dir = j.workers.settings.tokenizer_dir;
  j.adapter_dir = j.workers.settings.adapter_dir;
  j.workers.report_interval = std::chrono::milliseconds(a.integer_in("report-interval-ms", 100, 10, 60'000));
  j.tls.ca_file = a.str("tls-ca");
  j.tls.certificate = a.str("tls-cert");
  j.tls.key = a.str("tls-key");
  j.tls.join_token_file = a.str("join-token-file");
  j.heartbeat_interval = std::chrono::milliseconds(a.integer_in("heartbeat-interval-ms", 1000, 0, 3'600'000));
  j.heartbeat_timeout = std::chrono::milliseconds(a.integer_in("heartbeat-timeout-ms", 5000, 0, 3'600'000));
  j.reconnect_initial = std::chrono::milliseconds(a.integer_in("reconnect-initial-ms", 200, 1, 3'600'000));
  j.reconnect_max = std::chrono::milliseconds(a.integer_in("reconnect-max-ms", 5000, 1, 3'600'000));
  worker_node_run run;
  run.probe_listen = a.str("probe-listen");
  run.drain = std::chrono::seconds(a.integer_in("drain-timeout", 10, 0, 86400));
  run.ready_file = a.str("ready-file");
  const auto logs = log_settings_from(a, "info", j.name);
  a.defer_check();
  a.finish();
  const auto cfg = cluster::join_cluster_config(j);  // names the flag it refuses
  if (std::string why; !run.probe_listen.empty() && !gateway::parse_host_port(run.probe_listen, &why))
    throw std::invalid_argument("--probe-listen: " + why);
  need_file("--tls-ca", j.tls.ca_file);
  need_file("--tls-cert", j.tls.certificate);
  need_file("--tls-key", j.tls.key);
  if (!j.tls.join_token_file.empty()) {
    std::string why;
    cluster::read_join_token(j.tls.join_token_file, why);
    if (!why.empty())
      throw std::invalid_argument("--join-token-file: " + why);
  }
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(j.model_dir) / "config.json", ec))
    throw std::invalid_argument("--model " + j.model_dir + ": not a model directory (no config.json)");
  args::checkpoint();
  log::configure(logs);
  log_line("worker node \"" + j.name + "\" joining the cluster at " + j.router
           + (cfg.tls.enabled() ? " (mutual TLS)" : "") + (j.tls.join_token_file.empty() ? "" : " with a join token"));
  return run_worker_node(cfg, *cfg.find(j.name), run, sigs);
}

} // namespace lf::tools
