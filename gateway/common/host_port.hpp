#pragma once
/// "host:port" as the HTTP gateway's listen address and the load tester's http:// URLs write it
/// ("127.0.0.1:8000", "[::1]:8000", "localhost:0"). Pure C++; one parser for every place that
/// reads one, so a bad address is refused up front with the same words.

#include <optional>
#include <string>

namespace lf::gateway {

/// A parsed address.
struct host_port {
  std::string host;  ///< without IPv6 brackets
  int port = 0;      ///< 0-65535 (0: any free port)
};

/// `text` as host:port, or std::nullopt with `why` (if given) saying what is wrong.
std::optional<host_port> parse_host_port(const std::string& text, std::string* why = nullptr);

} // namespace lf::gateway
