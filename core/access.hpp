#pragma once
/// Who may do what at the doors (HTTP and ZeroMQ): a caller's identity from its key, the class
/// of an operation, and the one decision that lets it through or refuses it. Pure C++.
///
///   keys configured  key given   operation        verdict
///   no               -           open / user      allowed (anonymous)
///   no               -           admin            allowed from a local door, else forbidden
///   yes              none/wrong  open             allowed
///   yes              none/wrong  anything else    unauthenticated
///   yes              user key    admin            forbidden
///   yes              right key   the rest         allowed (the key's identity)
///
/// `metrics` is open unless `metrics_need_key`; then it is a user operation.

#include <optional>
#include <string>
#include <string_view>

#include "core/api_keys.hpp"

namespace lf::auth {

/// A caller as the doors know it; travels with its requests and admin commands.
struct caller {
  std::string name;        ///< the key's name; empty: anonymous (no keys configured, or open)
  auth::role role = auth::role::user;
  std::string tenant;      ///< the key's tenant; empty: the request's own (anonymous)
  bool local = false;      ///< came through a loopback / ipc door
  /// Has a key (HTTP secret or named CURVE client key).
  bool keyed() const noexcept { return !name.empty(); }
};

/// What an operation needs.
enum class op_class : unsigned char {
  open,     ///< /health, /ready: always answered
  metrics,  ///< /metrics, the dashboard and its data: open unless metrics_need_key
  user,     ///< completions, chat, models, adapter list, stats
  admin,    ///< drain, undrain, adapter add / update / remove: changes the cluster
};

/// "open", "metrics", "user", "admin".
std::string_view to_string(op_class c) noexcept;

/// The decision.
enum class verdict : unsigned char { allowed, unauthenticated, forbidden };

/// "allowed", "unauthenticated", "forbidden".
std::string_view to_string(verdict v) noexcept;

/// A decision with the caller it admits (or names) and, when refused, why (no key material).
struct access {
  auth::verdict verdict = auth::verdict::allowed;
  auth::caller caller;
  std::string why;  ///< for the refusal's message and the audit line
};

/// How a door is set up.
struct door_policy {
  const key_table* keys = nullptr;  ///< nullptr or no keys of the door's kind: none configured
  bool metrics_need_key = false;
};

/// The HTTP decision: `presented` is the key the request carried (see presented_key), `local`
/// whether its peer is on loopback.
access check_http(const door_policy& p, const std::optional<std::string>& presented, op_class op, bool local);

/// The ZeroMQ decision for a caller already named by its CURVE key (`c.name` empty when the
/// connection has none); `keys_configured`: a key table with CURVE client keys is in force.
access check_zmq(const caller& c, bool keys_configured, op_class op);

/// The role check alone, for the second gate (the router): admin operations need an admin, or
/// an anonymous caller from a local door when no keys are configured.
bool may(const caller& c, op_class op, bool keys_configured) noexcept;

/// The key an HTTP request carries: `Authorization: Bearer KEY` (scheme case-insensitive,
/// spaces around the key ignored) or else `x-api-key: KEY`; nullopt when neither holds one.
/// A malformed Authorization header (another scheme, no key) counts as no key.
std::optional<std::string> presented_key(const char* authorization, const char* x_api_key);

/// Is `host` (a numeric IPv4 / IPv6 address, maybe "[...]") a loopback address?
bool loopback_host(std::string_view host) noexcept;

/// Is a ZeroMQ endpoint local: ipc://, inproc://, or tcp:// bound to a loopback address or
/// "localhost"? A wildcard ("*", 0.0.0.0) or any other address is not.
bool local_endpoint(std::string_view endpoint) noexcept;

} // namespace lf::auth
