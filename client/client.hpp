#pragma once
/// The C++ async client: many concurrent requests over one ZeroMQ DEALER socket, each either a
/// future of the whole result or a stream of tokens through callbacks. Thread-safe; one I/O thread
/// owns the socket and runs every callback.
///
///   lf::client::client c({"tcp://127.0.0.1:5555"});
///   lf::proto::submit_msg m;
///   m.prompt = "Once upon a time";
///   auto fut = c.submit(m);                   // std::future<lf::client::result>
///   c.submit(m, {on_token, on_done});         // streaming
///
/// Liveness: while requests are in flight the client pings the gateway every `heartbeat`; when
/// nothing at all arrives for 3 heartbeats the gateway counts as lost. With one endpoint every
/// in-flight request then ends with worker_lost ("gateway unreachable") and the socket is
/// re-created (ZeroMQ then reconnects on its own). With several (`endpoints`, gateways of one
/// cluster) the client moves to the next one and sends each live request there again as a
/// continuation (the tokens it already has, the same seed: the client gives every request one),
/// so the stream pauses and goes on with the text an undisturbed run gives. When every gateway in
/// turn stayed silent, the live requests end with worker_lost.
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/protocol.hpp"

namespace lf::client {

/// Settings of a client.
struct client_options {
  std::string endpoint = "tcp://127.0.0.1:5555";
  /// Gateways of one cluster to fail over between, first used first; empty: `endpoint` alone.
  std::vector<std::string> endpoints;
  /// A request without a terminal reply after this long ends with `timeout` (and is cancelled
  /// on the server). Zero: no limit.
  std::chrono::milliseconds request_timeout{0};
  std::chrono::milliseconds heartbeat{2000};
  /// CURVE: the server's public key (Z85, 40 chars); empty = plaintext. The client's own key
  /// pair is generated when left empty.
  std::string server_public_key, public_key, secret_key;
  /// The tenant of every request that names none itself (submit_msg::tenant); empty: the
  /// default tenant. A gateway that knows this client's CURVE key by name uses that instead.
  std::string tenant;
};

/// The end of a request: finished (error == none) or not.
struct result {
  serve_errc error = serve_errc::none;
  std::string message;                        ///< error detail
  /// With overloaded, no_workers and rate_limited (the caller's key is past its rpm= / tpm=):
  /// when a retry may succeed. The message says which limit.
  std::optional<std::uint32_t> retry_after_ms;
  std::string text;
  std::string finish_reason;
  std::vector<std::int32_t> tokens;           ///< token ids (streaming; or stream=false with logprobs)
  /// With submit_msg::logprobs: each token's log-probability and alternatives, as `tokens`.
  std::vector<token_logprobs> logprobs;
  proto::usage_info usage;                    ///< usage.resumed: mid-stream moves between workers
  proto::timing_info timings;
  std::uint64_t seed = 0;                     ///< the seed used (the request's or the router's)
  bool ok() const noexcept { return error == serve_errc::none; }
};

/// Streaming callbacks, run on the client's I/O thread: on_token per token, then on_done once.
///
/// Credits (a submit with `window`): the server streams at most `window` tokens ahead of the
/// credits granted, then pauses the request (it leaves the batch) until more come. By default
/// the client grants them itself as on_token returns (a token handed to the application is a
/// token consumed), half a window at a time. `manual_credit`: the application grants with
/// client::grant() as it really consumes (e.g. when it queues tokens for a slower consumer).
struct stream_callbacks {
  std::function<void(const proto::token_msg&)> on_token;
  std::function<void(const result&)> on_done;
  bool manual_credit = false;
};

/// See the file comment.
class client {
public:
  explicit client(client_options opts);
  /// Ends every request still in flight with `cancelled` (locally) and joins the I/O thread.
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Sends `m` (its id is replaced by a fresh one; an empty tenant becomes
  /// client_options::tenant) and returns the id at once.
  proto::client_request_id submit(proto::submit_msg m, stream_callbacks cb);
  /// Sends `m` and returns a future of its result (never throws through the future).
  std::future<result> submit(proto::submit_msg m);
  /// Asks the server to cancel; false if the request is not in flight.
  bool cancel(proto::client_request_id id);

  /// Grants a request with a window `tokens` more tokens (stream_callbacks::manual_credit); false
  /// if the request is not in flight or `tokens` is 0.
  bool grant(proto::client_request_id id, std::uint32_t tokens);
  /// Round trip to the gateway; std::nullopt on timeout.
  std::optional<std::chrono::microseconds> ping(std::chrono::milliseconds timeout);
  /// The cluster's counters; std::nullopt on timeout.
  std::optional<std::map<std::string, double>> stats(std::chrono::milliseconds timeout);

  /// Drains a worker node (or one worker, "node/N"): the router places nothing there again and
  /// moves its running requests to other workers, which continue them exactly. nullopt when no
  /// answer came within `timeout`; drained_msg::workers == 0 when no live worker has that name.
  /// Throws std::runtime_error ("forbidden: ..." / "unauthenticated: ...") when the gateway
  /// refuses the caller.
  std::optional<proto::drained_msg> drain(const std::string& node, std::chrono::milliseconds timeout);
  /// Undoes a drain of a node (or one worker, "node/N"): its drained workers take requests again.
  /// nullopt when no answer came within `timeout`; undrained_msg::workers == 0 when no live
  /// drained worker has that name.
  std::optional<proto::undrained_msg> undrain(const std::string& node, std::chrono::milliseconds timeout);
  /// The cluster's adapter registry: list, add, update or remove (proto::adapters_msg); nullopt
  /// when no answer came within `timeout` (an add waits for a worker to check the files). Calls
  /// are serialised.
  std::optional<proto::adapters_result> adapters(const proto::adapters_msg& m, std::chrono::milliseconds timeout);
  /// Requests sent and not yet ended.
  std::size_t in_flight() const;
  /// The gateway in use now (it changes when one is lost and `endpoints` has another).
  std::string endpoint() const;
  /// Requests moved to another gateway so far.
  std::uint64_t continuations() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Reads "text" of `r` for printing: the text when ok, else "error CODE: message".
std::string describe(const result& r);

} // namespace lf::client
