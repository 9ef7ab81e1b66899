#pragma once
/// The soak's cluster: `lorafleet launch CONFIG` as a child process (its output to a log file),
/// its node pids from the ready file, its gateway stats, and the faults done to its nodes
/// (signals, `lorafleet drain`).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "client/client.hpp"
#include "cluster/child_process.hpp"

namespace lf::soak {

/// What to launch.
struct fleet_options {
  std::string binary;      ///< the lorafleet executable
  std::string config;      ///< the cluster config
  std::string work_dir;    ///< ready file and launch.log go here
  std::vector<std::string> launch_args;  ///< extra `launch` flags (--log-level warn)
};

/// The outcome of `lorafleet drain`.
struct drain_outcome {
  int exit_status = -1;    ///< -1: it did not end within the limit
  std::string output;      ///< what it printed
};

/// See the file comment. Not copyable; the destructor stops the cluster.
class fleet {
public:
  /// Starts `lorafleet launch CONFIG --ready-file WORK_DIR/ready`.
  explicit fleet(fleet_options o);
  /// SIGTERM to launch and up to 60 s for it to stop the nodes (SIGKILL after that).
  ~fleet();
  fleet(const fleet&) = delete;
  fleet& operator=(const fleet&) = delete;

  /// Waits until the ready file appears (every worker registered). False when launch exits or
  /// `limit` passes first.
  bool wait_ready(std::chrono::seconds limit);
  /// The client endpoint from the ready file.
  const std::string& endpoint() const { return endpoint_; }
  /// Node name -> pid, as the ready file says now (launch rewrites it after a restart).
  std::map<std::string, pid_t> pids() const;
  /// Gateway stats; empty when the gateway did not answer within `timeout`.
  std::map<std::string, double> stats(std::chrono::milliseconds timeout = std::chrono::seconds(2)) const;
  /// Sends `sig` to node `name`'s process; false when it has no pid.
  bool signal_node(const std::string& name, int sig) const;
  /// Runs `lorafleet drain NODE --endpoint EP` (at most `limit`).
  drain_outcome drain(const std::string& node, std::chrono::seconds limit) const;
  /// SIGTERM to launch; its wait status, or nullopt if it did not end within `limit`.
  std::optional<int> stop(std::chrono::seconds limit);
  /// Lines worth a look: launch's own and the nodes' warnings and errors (the first 400).
  std::vector<std::string> notable_lines() const;
  /// Path of the whole log.
  std::string log_path() const { return opts_.work_dir + "/launch.log"; }

private:
  void read_output();

  fleet_options opts_;
  std::string endpoint_;
  std::unique_ptr<cluster::child_process> launch_;
  std::unique_ptr<client::client> client_;
  std::thread reader_;
  std::atomic<bool> reading_{true};
  mutable std::mutex m_;
  std::vector<std::string> notable_;
};

} // namespace lf::soak
