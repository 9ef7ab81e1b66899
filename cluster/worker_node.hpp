#pragma once
/// A worker node: loads its workers' models once, then keeps them registered with the router
/// node for as long as it runs.
///
///   [connecting] ──remote_actor ok──> [serving]: spawn one worker actor per runtime; they register
///        ^   │ fails: wait backoff (initial, 2x, ... max)      │
///        │   └──────────────────────┘                         │ router lost (down_msg:
///        └──────────── worker actors quit by themselves ──────┘  node died, restarted, or
///                                                                silent past the heartbeat timeout)
///   [serving]: a worker actor that dies while the router lives is spawned again (after backoff)
///   stop() (SIGINT/SIGTERM) from any state ──> worker actors exit, serving loops stop, run() returns
///
/// The runtimes (model, KV pool, serving loop) outlive the actors: re-registering after the router
/// restarts loads nothing again.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cluster/node_system.hpp"
#include "cluster/node_metrics.hpp"

namespace lf::cluster {

/// See the file comment.
class worker_node {
public:
  /// Loads the node's workers (throws std::runtime_error naming the file on a bad model).
  /// `drain_limit`: on stop(), how long the serving loops get to hand their moving requests over
  /// (with their K/V) before the workers end.
  worker_node(const cluster_config& cfg, const node_config& self, log_fn log,
              std::chrono::milliseconds drain_limit = std::chrono::seconds(5));
  ~worker_node();
  worker_node(const worker_node&) = delete;
  worker_node& operator=(const worker_node&) = delete;

  /// Connects, serves and reconnects until stop(); then stops the workers and returns.
  void run();
  /// Makes run() return soon (thread-safe; callable before run()).
  void stop();
  /// How many times the node has connected to the router so far.
  std::uint32_t connections() const noexcept { return connections_.load(); }
  /// Takes work: every worker registered with the router and the node not stopping (a node's
  /// /ready; false while connecting, cut off from the router, or draining). Thread-safe.
  bool ready() const;
  /// Each worker's load now, in worker order (a node's /metrics). Thread-safe.
  std::vector<worker_gauges> gauges() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::atomic<std::uint32_t> connections_{0};
};

} // namespace lf::cluster
