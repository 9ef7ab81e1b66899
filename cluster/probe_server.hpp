#pragma once
/// A node's small HTTP port for the kubelet and Prometheus: GET /health (the process is alive),
/// GET /ready (it takes work: 200, else 503) and GET /metrics (text exposition). Plain HTTP on its
/// own thread (libevent); nothing else is served (404), only GET and HEAD (405).
///
///   probe_server probes("0.0.0.0:8081", {alive, ready, metrics});   // binds now, or throws
///   probes.address();                                               // "0.0.0.0:8081"
///
/// The handlers run on the server's thread: they must be thread-safe and quick.

#include <functional>
#include <memory>
#include <string>

namespace lf::cluster {

/// What the three paths answer.
struct probe_handlers {
  std::function<bool()> alive;            ///< /health: 200 when true, else 503
  std::function<bool()> ready;            ///< /ready: 200 when true, else 503
  std::function<std::string()> metrics;   ///< /metrics
};

/// See the file comment.
class probe_server {
public:
  /// Binds `listen` ("HOST:PORT"; port 0 picks a free one) and starts serving; throws
  /// std::runtime_error naming the address when it cannot.
  probe_server(const std::string& listen, probe_handlers h);
  /// Stops the thread and closes the port.
  ~probe_server();
  probe_server(const probe_server&) = delete;
  probe_server& operator=(const probe_server&) = delete;

  /// The address bound, "HOST:PORT" with the actual port.
  std::string address() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace lf::cluster
