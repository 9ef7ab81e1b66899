#pragma once
/// What both gateways share at their doors: which ZeroMQ messages are admin operations, the
/// caller a CURVE key name stands for, and the audit line (core/access.hpp decides).

#include <string>
#include <string_view>

#include "core/access.hpp"
#include "proto/protocol.hpp"

namespace lf::gateway {

/// What a client message needs. Submits, cancels, credits, stats, pings and the adapter list are
/// user operations; every other message (drain, adapter changes, and any message added later
/// unless listed here) is an admin operation.
auth::op_class op_class_of(const proto::client_decode_result& m) noexcept;

/// The operation's name for logs: "submit", "drain", "adapters.add", ...
std::string op_name_of(const proto::client_decode_result& m);

/// The caller behind a ZeroMQ connection whose CURVE key is named `key_name` (empty: none):
/// the key file's line of that name (role, tenant) or else a `user` whose tenant is the name.
/// `local`: the gateway's endpoint is ipc or loopback.
auth::caller zmq_caller(const auth::key_table* keys, const std::string& key_name, bool local);

/// The audit line (info, component "audit"): key name ("-" when anonymous), role, remote
/// address, door ("http" / "zmq"), operation, result ("ok", "unauthenticated", "forbidden", or
/// the error's code), and the reason when refused.
void audit(const auth::caller& c, std::string_view remote, std::string_view door, std::string_view op,
           std::string_view result, std::string_view why = {});

} // namespace lf::gateway
