#pragma once
/// A tiny OpenAI-style HTTP server on 127.0.0.1 for the load tester's HTTP client tests: it
/// answers POST /v1/completions with a streamed SSE reply of three tokens ("a", "b", "c", then
/// usage and [DONE]) and GET /v1/models with one model, and does to each connection what a plan
/// says: keep it open, close it after the reply (as llama.cpp's server does), close it without an
/// answer, answer 500, or cut a reply short. Raw sockets, one thread per connection.

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lf::test {

/// What the server does with one request.
enum class reply_kind {
  stream_keep_open,       ///< the whole reply; the connection stays open for the next request
  stream_then_close,      ///< the whole reply, then close without a `Connection: close` header
  stream_announce_close,  ///< the whole reply with `Connection: close`; the server keeps the socket
  close_unanswered,       ///< read the request, close without a byte of reply
  error_500,              ///< an OpenAI error object with status 500; the connection stays open
  partial_then_close,     ///< headers and the first token, then close
};

/// Picks the reply to the `nth` request (from 0) on the `conn`-th accepted connection (from 0).
using reply_plan = std::function<reply_kind(std::size_t conn, std::size_t nth)>;

/// See the file comment.
class fake_openai_server {
public:
  /// Listens on 127.0.0.1, on a port the kernel picks. Throws std::runtime_error on failure.
  explicit fake_openai_server(reply_plan plan);
  /// Closes every socket and joins every thread.
  ~fake_openai_server();
  fake_openai_server(const fake_openai_server&) = delete;
  fake_openai_server& operator=(const fake_openai_server&) = delete;

  /// http://127.0.0.1:PORT
  std::string url() const;
  /// Connections accepted so far.
  std::size_t connections() const { return connections_.load(); }
  /// Requests read in full so far (each answered or not as the plan says).
  std::size_t requests() const { return requests_.load(); }

private:
  void accept_loop();
  void serve(int fd, std::size_t conn);
  void close_fd(std::size_t conn);

  reply_plan plan_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connections_{0}, requests_{0};
  std::mutex m_;
  std::vector<int> fds_;  ///< under m_: per connection, -1 once closed
  std::vector<std::thread> threads_;  ///< under m_
  std::thread acceptor_;
};

} // namespace lf::test
