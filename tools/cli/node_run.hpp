#pragma once
/// What `lorafleet node` shares between a node named in a config file and one that joins with
/// --join: its log lines, its stop signals, and running a worker node with its probe port.

#include <chrono>
#include <csignal>
#include <string>

#include "cluster/cluster_config.hpp"
#include "tools/common/args.hpp"

namespace lf::tools {

/// The node's own progress lines, through the structured logger (component "node").
void log_line(const std::string& line);

/// The one positional argument (the config file), or std::invalid_argument with `usage`.
std::string config_arg(args& a, const char* usage);

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (and every thread started later); sigwait
/// takes them.
sigset_t block_stop_signals();

/// "SIGINT", "SIGTERM" or "SIGHUP".
const char* signal_name(int sig);

/// How a worker node runs besides its config.
struct worker_node_run {
  std::string probe_listen;                 ///< HOST:PORT of /health, /ready, /metrics; "" = none
  std::chrono::seconds drain{10};           ///< on a stop signal: time the moving requests get
  std::string ready_file;                   ///< receives "ready" once every worker registered
};

/// Loads `node`'s workers, serves until a stop signal in `sigs`, then drains (its requests move
/// to other workers with their K/V) and returns the exit status (0).
int run_worker_node(const cluster::cluster_config& cfg, const cluster::node_config& node, const worker_node_run& run,
                    sigset_t sigs);

/// `lorafleet node --join HOST:PORT ...` (tools/cli/cmd_node_join.cpp).
int cmd_node_join(int argc, char** argv, sigset_t sigs);

} // namespace lf::tools
