#pragma once
/// Whether an HTTP stream (server-sent events) should close its connection when it ends, judged
/// from the request's headers. Pure C++.
///
/// Why: node-fetch 2 (the HTTP client of the `openai` npm package up to v4) over a keep-alive
/// agent on Node.js 18 reports "Premature close" for every chunked response that leaves the
/// connection open, before the stream is read: measured here against lorafleet and against a
/// plain Node.js 18 server alike, and not on Node.js 20. Debian bookworm ships Node.js 18, so a
/// user there streaming with that SDK would fail against any keep-alive server. For those clients
/// (and for any client that asks for `Connection: close`) the stream ends with
/// `Connection: close`; every other client keeps its connection for reuse.

#include <string_view>

namespace lf::gateway {

/// The request headers that decide it (empty when absent).
struct stream_client {
  std::string_view connection;       ///< `Connection`
  std::string_view user_agent;       ///< `User-Agent`
  std::string_view runtime;          ///< `X-Stainless-Runtime` (the openai SDKs: "node", ...)
  std::string_view runtime_version;  ///< `X-Stainless-Runtime-Version` ("v18.20.4")
};

/// True when the stream's connection should close at its end: the client asked for it, or it is
/// node-fetch (its own User-Agent) or an openai SDK on Node.js older than 20.
bool close_after_stream(const stream_client& c);

} // namespace lf::gateway
