#pragma once
/// A whole cluster in one process: actor system, router, N workers over one model, and the
/// ZeroMQ gateway. What `lorafleet serve` runs, and what integration tests and the load tester's
/// self-test start.
///
///   local_cluster c(settings);            // loads the model N times, binds the gateway
///   c.endpoint();                         // "tcp://127.0.0.1:5555"
///   c.shutdown(std::chrono::seconds(30)); // refuse new work, drain, cancel what is left

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/messages.hpp"
#include "gateway/openai/http_gateway.hpp"
#include "gateway/zmq/gateway.hpp"
#include "router/router_actor.hpp"
#include "worker/worker_runtime.hpp"

namespace lf::cluster {

/// The router's statistics now (zeroes if it does not answer within a second).
actors::router_stats query_stats(caf::actor_system& sys, const actors::router_actor& router);

/// Shuts a node's parts down in order: the gateway (if any) stops accepting, waits up to `drain`
/// for requests in flight and cancels the rest; then the workers, the router and every serving
/// loop stop. Returns how many requests were cancelled.
std::size_t drain_and_stop(gateway::zmq_gateway* gw, gateway::http_gateway* http,
                           const std::vector<actors::worker_actor>& workers,
                           const actors::router_actor& router,
                           const std::vector<std::shared_ptr<worker::worker_runtime>>& runtimes,
                           std::chrono::milliseconds drain);

/// The name `model` means the base model by in the HTTP API: the model directory's last
/// component ("gpt2" when there is none).
std::string default_model_name(const std::string& model_dir);

/// What to start.
struct cluster_settings {
  worker::worker_settings worker;   ///< every worker's settings (threads: per worker)
  std::uint32_t workers = 1;
  router::router_config router;
  gateway::gateway_options gateway;
  /// The HTTP gateway (OpenAI API, /metrics, dashboard): `listen` empty => none. Its tokenizer,
  /// context window and (if empty) model name are filled in from the model.
  gateway::http_options http;
  std::chrono::milliseconds report_interval{50};  ///< workers' load reports
};

/// See the file comment.
class local_cluster {
public:
  /// Starts everything and waits until every worker has registered. Throws std::runtime_error
  /// (model, bind or startup problems) with the reason.
  explicit local_cluster(cluster_settings s);
  /// shutdown(0) if not done yet.
  ~local_cluster();
  local_cluster(const local_cluster&) = delete;
  local_cluster& operator=(const local_cluster&) = delete;

  /// The client endpoint actually bound.
  std::string endpoint() const;
  /// The HTTP gateway's host:port, or empty without one.
  std::string http_address() const;
  caf::actor_system& system();
  actors::router_actor router() const;
  /// The router's statistics now (zeroes if it does not answer within a second).
  actors::router_stats stats();
  /// Kills worker `i` (tests: a worker lost mid-batch).
  void kill_worker(std::size_t i);
  /// Refuses new requests, waits up to `drain` for those in flight, cancels the rest (each still
  /// gets its terminal reply), then stops every actor and serving loop. Returns how many requests
  /// were cancelled. Idempotent.
  std::size_t shutdown(std::chrono::milliseconds drain);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::cluster
