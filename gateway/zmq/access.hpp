#pragma once
/// The ZeroMQ gateway's door: which client messages are admin operations, and the caller a CURVE
/// key name stands for (core/access.hpp decides; common/audit.hpp writes the audit line).

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


} // namespace lf::gateway
