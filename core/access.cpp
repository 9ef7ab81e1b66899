#include "core/access.hpp"

#include <cctype>
#include <cstring>

namespace lf::auth {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

/// A key worth comparing: non-empty, no spaces or control bytes, not absurdly long.
std::optional<std::string> usable(std::string_view k) {
  k = trim(k);
  if (k.empty() || k.size() > 1024)
    return std::nullopt;
  for (unsigned char c : k)
    if (c <= 0x20 || c == 0x7f)
      return std::nullopt;
  return std::string(k);
}

bool is_digits(std::string_view s) noexcept {
  if (s.empty() || s.size() > 3)
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
}

} // namespace

std::string_view to_string(op_class c) noexcept {
  switch (c) {
    case op_class::open: return "open";
    case op_class::metrics: return "metrics";
    case op_class::user: return "user";
    case op_class::admin: return "admin";
  }
  return "admin";
}

std::string_view to_string(verdict v) noexcept {
  switch (v) {
    case verdict::allowed: return "allowed";
    case verdict::unauthenticated: return "unauthenticated";
    case verdict::forbidden: return "forbidden";
  }
  return "forbidden";
}

bool may(const caller& c, op_class op, bool keys_configured) noexcept {
  if (op != op_class::admin)
    return true;
  if (c.keyed())
    return c.role == role::admin;
  return !keys_configured && c.local;
}

access check_http(const door_policy& p, const std::optional<std::string>& presented, op_class op, bool local) {
  access a;
  a.caller.local = local;
  const bool keys = p.keys != nullptr && p.keys->has_secrets();
  if (op == op_class::open || (op == op_class::metrics && !p.metrics_need_key))
    return a;
  if (!keys) {
    if (may(a.caller, op, false))
      return a;
    a.verdict = verdict::forbidden;
    a.why = "admin operations are accepted only from loopback when no API keys are configured";
    return a;
  }
  const api_key* k = presented ? p.keys->find_secret(*presented) : nullptr;
  if (k == nullptr) {
    a.verdict = verdict::unauthenticated;
    a.why = presented ? "the API key is not valid" : "an API key is required (Authorization: Bearer KEY or x-api-key: KEY)";
    return a;
  }
  a.caller.name = k->name;
  a.caller.role = k->role;
  a.caller.tenant = k->tenant;
  if (!may(a.caller, op, true)) {
    a.verdict = verdict::forbidden;
    a.why = "key " + k->name + " has role " + std::string(to_string(k->role)) + "; this operation needs admin";
  }
  return a;
}

access check_zmq(const caller& c, bool keys_configured, op_class op) {
  access a;
  a.caller = c;
  if (may(c, op, keys_configured))
    return a;
  if (c.keyed()) {
    a.verdict = verdict::forbidden;
    a.why = "key " + c.name + " has role " + std::string(to_string(c.role)) + "; this operation needs admin";
  } else if (keys_configured) {
    a.verdict = verdict::unauthenticated;
    a.why = "admin operations need a CURVE client key with the admin role";
  } else {
    a.verdict = verdict::forbidden;
    a.why = "admin operations are accepted only over ipc or loopback endpoints when no keys are configured";
  }
  return a;
}

std::optional<std::string> presented_key(const char* authorization, const char* x_api_key) {
  if (authorization != nullptr) {
    const auto h = trim(authorization);
    constexpr std::string_view scheme = "bearer";
    bool bearer = h.size() > scheme.size() && is_space(h[scheme.size()]);
    for (std::size_t i = 0; bearer && i < scheme.size(); ++i)
      bearer = std::tolower(static_cast<unsigned char>(h[i])) == scheme[i];
    if (bearer)
      if (auto k = usable(h.substr(scheme.size())))
        return k;
  }
  if (x_api_key != nullptr)
    return usable(x_api_key);
  return std::nullopt;
}

bool loopback_host(std::string_view host) noexcept {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host == "::1" || host == "0:0:0:0:0:0:0:1")
    return true;
  if (host.rfind("::ffff:", 0) == 0)  // IPv4-mapped
    host.remove_prefix(7);
  // 127.0.0.0/8, four decimal parts
  int parts = 0;
  std::size_t pos = 0;
  while (pos <= host.size()) {
    auto dot = host.find('.', pos);
    if (dot == std::string_view::npos)
      dot = host.size();
    const auto part = host.substr(pos, dot - pos);
    if (!is_digits(part) || std::stoi(std::string(part)) > 255)
      return false;
    if (parts == 0 && part != "127")
      return false;
    ++parts;
    if (dot == host.size())
      break;
    pos = dot + 1;
  }
  return parts == 4;
}

bool local_endpoint(std::string_view endpoint) noexcept {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0)
    return true;
  if (endpoint.rfind("tcp://", 0) != 0)
    return false;
  auto rest = endpoint.substr(6);
  if (auto semi = rest.find(';'); semi != std::string_view::npos)  // "tcp://src;dst": the bind side is last
    rest = rest.substr(semi + 1);
  const auto colon = rest.rfind(':');
  const auto host = rest.substr(0, colon);
  return host == "localhost" || host == "lo" || loopback_host(host);
}

} // namespace lf::auth
