#include "gateway/common/host_port.hpp"

#include <algorithm>
#include <cctype>

namespace lf::gateway {

std::optional<host_port> parse_host_port(const std::string& text, std::string* why) {
  auto bad = [&](const std::string& reason) -> std::optional<host_port> {
    if (why)
      *why = reason;
    return std::nullopt;
  };
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return bad("expected HOST:PORT, e.g. 127.0.0.1:8000 (got \"" + text + "\")");
  host_port out;
  out.host = text.substr(0, colon);
  const bool bracketed = out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']';
  if (bracketed)
    out.host = out.host.substr(1, out.host.size() - 2);
  if (out.host.find('/') != std::string::npos || (!bracketed && out.host.find(':') != std::string::npos))
    return bad("expected HOST:PORT without a scheme or path (IPv6 in brackets), e.g. 127.0.0.1:8000 (got \"" + text
               + "\")");
  const auto port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }))
    return bad("the port must be a number in [0, 65535] (got \"" + port + "\" in \"" + text + "\")");
  out.port = std::stoi(port);
  if (out.port > 65535)
    return bad("the port must be a number in [0, 65535] (got \"" + port + "\" in \"" + text + "\")");
  return out;
}

} // namespace lf::gateway
