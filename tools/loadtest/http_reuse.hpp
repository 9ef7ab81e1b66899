#pragma once
/// When the load tester's HTTP client may reuse a keep-alive connection, and when it may send a
/// request again. Pure C++ (no sockets): http_client.cpp asks these for every reply and failure.
///
/// A server may close an idle keep-alive connection at any time (llama.cpp's server closes every
/// connection after a streamed reply, without saying `Connection: close`). A request written on
/// such a connection just before the close reaches the client fails with end-of-file before any
/// byte of the response: the server never saw it, or dropped it unread, so sending it again on a
/// new connection is safe. Any other failure is the server's answer and is reported as it came:
/// a reply that started (a status line, then perhaps tokens) is never sent again, nor is a
/// request that failed on a fresh connection, nor one that timed out.

#include <cstdint>
#include <string_view>

namespace lf::loadtest {

/// How many times one request may be sent again after meeting a stale connection. Each resend
/// goes out on a new connection, which cannot be stale, so one is enough; more would only hide a
/// server that drops fresh connections too.
inline constexpr std::uint32_t max_stale_resends = 1;

/// How one attempt to send a request ended, as far as resending is concerned.
struct http_attempt {
  /// Sent on an idle connection that had carried a complete reply before (not a new one).
  bool reused = false;
  /// Some of the response came back (the status line and headers, or body bytes).
  bool response_started = false;
  /// Ended because the connection closed or was reset (end-of-file, ECONNRESET, EPIPE); false
  /// for a timeout or a complete reply.
  bool connection_closed = false;
  /// Times this request was already sent again.
  std::uint32_t resends = 0;
};

/// True when `a` met a stale keep-alive connection (reused, closed before any response byte) and
/// has resends left: send it again on a new connection and count it apart from errors.
bool resend_on_fresh_connection(const http_attempt& a);

/// Whether a connection may carry another request after a complete reply of HTTP/`major`.`minor`
/// whose `Connection` header is `connection` (empty when absent): not after `Connection: close`,
/// and for HTTP/1.0 only with `Connection: keep-alive`. Tokens are matched without case, in a
/// comma-separated list.
bool reusable_after_reply(int major, int minor, std::string_view connection);

} // namespace lf::loadtest
