#pragma once
/// The HTTP gateway: OpenAI's API, Prometheus metrics, health checks and the live dashboard, on
/// libevent's evhttp (one event-loop thread, any number of connections), bridged to the router
/// actor like the ZeroMQ gateway: same router, same validated requests, same guarantees.
///
///   client ──HTTP──> [event loop thread] evhttp: route, size limits, /health, dashboard page
///                          │ (http id, endpoint, body)
///                          v
///                  [http gateway actor] parse (openai_request), openai_intake: tokenize, one
///                          │ generate_request per choice (prompts x n; http_book) ──> router ──> workers
///                          ^ token / done / error events
///                  openai_reply ── SSE chunks or one body ──(outbox)──> [event loop] ──> client
///
/// A client that disconnects has its requests cancelled at once (evhttp's close callback fires
/// on the read side, so a stream that is waiting for its next token is cancelled too, within one
/// engine step). A client that stops reading while its reply buffer exceeds `max_buffered_bytes`
/// is treated as gone.
///
/// Keys (core/access.hpp): with an API key file, every request but /health and /ready (and
/// /metrics and the dashboard unless `metrics_need_key`) needs `Authorization: Bearer KEY` or
/// `x-api-key: KEY` (else 401); admin operations (adapter add / update / remove) need an admin
/// key (else 403). Without keys, admin operations are taken from loopback peers only. The key's
/// tenant replaces the body's `user`. Admin operations and refusals leave an audit log line.
/// With `tls` set the same loop speaks HTTPS only (libevent's OpenSSL bufferevents: each
/// accepted connection gets its own SSL object, handshakes in the loop, and evhttp reads and
/// writes plaintext through it). A client that speaks plain HTTP to that port fails its
/// handshake and is closed; nobody else notices.

#include <cstdint>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "gateway/openai/http_options.hpp"

namespace lf::gateway {

struct http_io;  ///< http_impl.hpp: shared by the gateway actor and the event loop

/// See the file comment.
class http_gateway {
public:
  /// Binds and starts serving; throws std::runtime_error naming the address when binding fails.
  http_gateway(caf::actor_system& sys, actors::router_actor router, http_options opts);
  /// stop(), then joins the thread.
  ~http_gateway();
  http_gateway(const http_gateway&) = delete;
  http_gateway& operator=(const http_gateway&) = delete;

  /// host:port actually bound.
  std::string address() const;
  /// "https://host:port" with TLS, else "http://host:port".
  std::string url() const;
  /// From now on new completions get 503; requests in flight continue.
  void stop_accepting();
  /// HTTP requests in flight (completions, and stats requests waiting for the router).
  std::size_t live() const;
  /// Cancels what is in flight (each gets its terminal reply), stops the loop.
  void stop();

private:
  std::shared_ptr<http_io> impl_;
};

} // namespace lf::gateway
