#pragma once
/// The load tester's OpenAI HTTP client: sends a workload's requests to any OpenAI-compatible
/// server (lorafleet's HTTP gateway, vLLM, llama.cpp's server, ...) as streaming
/// /v1/completions or /v1/chat/completions, and reports tokens and terminal results through the
/// same callbacks as the ZeroMQ client, so the driver and the report are shared.
///
/// One libevent loop thread; one keep-alive connection per request in flight, back to an idle
/// pool after a complete reply unless the reply said `Connection: close` (or was HTTP/1.0 without
/// keep-alive). A request that went out on a reused connection which the server had closed, and
/// that got no byte of a response, is sent once more on a new connection and counted in
/// stale_retries(), not as an error (llama.cpp's server closes every connection after a streamed
/// reply); any other failure is reported as it came (tools/loadtest/http_reuse.hpp).
/// A submit_msg's adapter becomes `model` (empty: the base model's name).

#include <cstdint>
#include <memory>
#include <string>

#include "client/client.hpp"

namespace lf::loadtest {

/// See the file comment.
class http_client {
public:
  /// `url`: http://host:port (a trailing path is ignored). `model`: the base model's name; empty
  /// => the first entry of GET /v1/models. Throws std::runtime_error when the server does not
  /// answer /v1/models within 10 s.
  http_client(const std::string& url, std::string model);
  /// Ends what is in flight with `cancelled` and joins the loop thread.
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends `m` (streaming, usage included); callbacks run on the loop thread. Thread-safe.
  void submit(const proto::submit_msg& m, client::stream_callbacks cb);

  /// The base model's name in use.
  const std::string& model() const;

  /// Requests sent again so far because their reused connection was closed before any byte of
  /// the reply (stale keep-alive connections). Thread-safe.
  std::uint64_t stale_retries() const;

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

/// The serve_errc for an HTTP status and OpenAI error object (`code` when it names one).
serve_errc errc_from_http(int status, const std::string& code);

} // namespace lf::loadtest
