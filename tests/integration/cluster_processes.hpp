#pragma once
/// Integration-test helpers for whole clusters of real processes: a tiny model and a config made
/// from one of cluster-configs/ (free ports, the temp model), `lorafleet launch` running it with
/// its output captured, and a load client that keeps requests in flight over a raw DEALER socket
/// and counts every message per request id (so a second terminal reply would be seen).

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "core/serve_errc.hpp"
#include "cluster/child_process.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"

namespace lf::test {

/// Runs `argv` to its end (output discarded); true on exit status 0.
bool run_to_end(const std::vector<std::string>& argv, std::chrono::seconds limit);

/// `lorafleet launch` over a config written into a temp dir.
class launched_cluster {
public:
  /// Writes the tiny model and `config_text` (see config_from) into a temp dir and launches it;
  /// waits until the ready file appears (all workers registered).
  explicit launched_cluster(const std::function<std::string(const temp_dir&)>& config_text);
  /// SIGKILLs the launcher if still running (its nodes get SIGTERM from the kernel).
  ~launched_cluster();

  /// The temp dir with the model, the config and the ready file.
  const temp_dir& dir() const { return dir_; }
  /// Where clients connect.
  std::string endpoint() const { return endpoint_; }
  /// pid of each node process as the ready file says now.
  std::map<std::string, pid_t> pids() const;
  /// Gateway stats (empty on timeout).
  std::map<std::string, double> stats() const;
  /// Polls stats until `pred` holds or `limit` passes.
  bool wait_stats(const std::function<bool(const std::map<std::string, double>&)>& pred,
                  std::chrono::milliseconds limit) const;
  /// SIGTERM to the launcher; its wait status, or nullopt if it did not end within `limit`.
  std::optional<int> stop(std::chrono::seconds limit);
  /// Everything the launcher printed so far.
  std::string log() const;

private:
  temp_dir dir_;
  std::string endpoint_;
  std::unique_ptr<cluster::child_process> launch_;
  std::thread reader_;
  std::atomic<bool> reading_{true};
  mutable std::mutex m_;
  std::string log_;
};

/// cluster-configs/NAME with the model directory, the CAF ports and the gateway port replaced.
std::string config_from(const std::string& name, const temp_dir& dir);

/// cluster-configs/three-nodes.toml as config_from writes it (a launched_cluster's config).
inline std::string three_nodes(const temp_dir& dir) { return config_from("three-nodes.toml", dir); }

/// What one request saw.
struct request_record {
  int terminals = 0;         ///< done + error + cancelled
  int after_terminal = 0;    ///< messages of any kind after its terminal (must stay 0)
  int tokens = 0;
  bool done = false;
  serve_errc error = serve_errc::none;
  std::chrono::steady_clock::time_point submitted, ended;
};

/// Keeps `in_flight` streaming requests going over one DEALER socket on its own thread.
class load_client {
public:
  load_client(std::string endpoint, int in_flight, int max_tokens);
  ~load_client();
  /// No new submits from now on.
  void stop_submitting() { submitting_ = false; }
  /// Waits until every submitted request has its terminal reply.
  bool wait_all_ended(std::chrono::milliseconds limit);
  /// Every request so far, by id.
  std::map<std::uint64_t, request_record> records() const;
  /// Requests without their terminal reply yet.
  int live() const;

private:
  void run();
  std::string endpoint_;
  int in_flight_, max_tokens_;
  std::atomic<bool> submitting_{true}, running_{true};
  mutable std::mutex m_;
  std::map<std::uint64_t, request_record> records_;
  std::thread thread_;
};

} // namespace lf::test
