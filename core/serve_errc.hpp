#pragma once
/// The error codes every layer reports to clients (worker loop, router, gateway, wire protocol).
/// Plain enum here so pure code can use it; actors/ registers it with CAF as an error category.

#include <cstdint>
#include <optional>
#include <string_view>

namespace lf {

/// Why a request did not complete normally.
enum class serve_errc : std::uint8_t {
  none = 0,
  invalid_request,   ///< malformed or out-of-range field
  prompt_too_long,   ///< prompt + max_tokens exceed the context window or the KV pool
  unknown_adapter,   ///< adapter id not in the adapter directory, or failed to load
  overloaded,        ///< admission queue full; retry later
  worker_lost,       ///< the worker died after the request had streamed tokens
  timeout,           ///< deadline passed before the request finished
  cancelled,         ///< cancelled by the client (or the client went away)
  internal,          ///< a bug or an engine failure; the request cannot be completed
  shutting_down,     ///< the server is stopping and does not take new requests
  /// refused at admission: the router predicts the request cannot finish (or start) within its
  /// deadline (or its ttft target); the message gives the predicted time
  deadline_unmeetable,
  /// no worker takes requests (every one drained or lost): refused at once, or ended after
  /// waiting max_queue_wait_ms in the queue; retry later
  no_workers,
  unauthenticated,   ///< no key, or a key the server does not know (HTTP 401)
  forbidden,         ///< the caller's role may not do this (an admin operation; HTTP 403)
  rate_limited,      ///< the key's requests or tokens per minute are spent; retry after the time given (HTTP 429)
};

/// The last code (for loops over every code).
inline constexpr serve_errc last_serve_errc = serve_errc::rate_limited;

/// Wire spelling: "invalid_request", "prompt_too_long", ...
constexpr std::string_view to_string(serve_errc e) noexcept {
  switch (e) {
    case serve_errc::none: return "none";
    case serve_errc::invalid_request: return "invalid_request";
    case serve_errc::prompt_too_long: return "prompt_too_long";
    case serve_errc::unknown_adapter: return "unknown_adapter";
    case serve_errc::overloaded: return "overloaded";
    case serve_errc::worker_lost: return "worker_lost";
    case serve_errc::timeout: return "timeout";
    case serve_errc::cancelled: return "cancelled";
    case serve_errc::internal: return "internal";
    case serve_errc::shutting_down: return "shutting_down";
    case serve_errc::deadline_unmeetable: return "deadline_unmeetable";
    case serve_errc::no_workers: return "no_workers";
    case serve_errc::unauthenticated: return "unauthenticated";
    case serve_errc::forbidden: return "forbidden";
    case serve_errc::rate_limited: return "rate_limited";
  }
  return "internal";
}

/// Inverse of to_string.
inline std::optional<serve_errc> parse_serve_errc(std::string_view s) noexcept {
  for (int i = 0; i <= static_cast<int>(last_serve_errc); ++i)
    if (to_string(static_cast<serve_errc>(i)) == s)
      return static_cast<serve_errc>(i);
  return std::nullopt;
}

} // namespace lf
