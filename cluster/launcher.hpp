#pragma once
/// `lorafleet launch CONFIG`: runs the cluster's local nodes as child processes.
///
///   [starting]  every local node (and every `ssh` node) started as `lorafleet node CONFIG --name N`;
///       │       other nodes: their exact command printed; output lines forwarded as "[N] line"
///       │ the gateway reports router.workers == all workers of the config (polled every 0.5 s)
///       v
///   [ready]     "clients connect to tcp://..." printed, --ready-file written
///       │       a node process that dies is started again (restart = true) after a backoff
///       │ SIGINT / SIGTERM (or the ready timeout in [starting]: exit status 1; with nodes
///       │ to be started by hand on other hosts the timeout only warns, launch keeps waiting)
///       v
///   [stopping router]  SIGTERM to the router node (it drains its requests); SIGKILL after stop_timeout
///   [stopping workers] SIGTERM to the other nodes; SIGKILL after stop_timeout
///       v                    (a second SIGINT/SIGTERM: SIGKILL to everything at once)
///   [done]
///
/// The ready file lists "endpoint EP" and one "node NAME PID" line per local node process, for
/// scripts and tests.

#include <string>
#include <vector>

#include "cluster/cluster_config.hpp"

namespace lf::cluster {

/// Options of a launch.
struct launch_options {
  std::string self_binary;  ///< the lorafleet executable the local nodes run
  std::string ready_file;   ///< written once the cluster is ready; empty: none
  bool dry_run = false;     ///< print the plan and exit
  /// Added to every node's command line (e.g. --log-level debug --log-format json).
  std::vector<std::string> node_args;
  /// Forward the nodes' output lines as they are, without the "[NODE] " prefix (JSON logs carry
  /// the node's name in each line).
  bool raw_node_output = false;
};

/// Runs a launch to its end (output: stdout, one line at a time); returns the process exit status (0 after a clean stop, 1 when the
/// cluster did not become ready or could not start). Blocks SIGINT and SIGTERM in the calling
/// thread and reads them through a signalfd.
int run_launch(const cluster_config& cfg, const launch_options& opts);

} // namespace lf::cluster
