#pragma once
/// The router's statistics as the protocol's flat stats reply ("router.queued",
/// "worker.1.running", ...), for `lorafleet status` and clients.

#include "actors/messages.hpp"
#include "proto/protocol.hpp"

namespace lf::gateway {

/// Flattens `rs`; `gateway_live` is the gateway's own count of requests in flight.
proto::stats_reply flatten_stats(const actors::router_stats& rs, std::size_t gateway_live);

/// The router's answer to an adapter command as the wire's adapters_result (hashes as 16 hex
/// digits). Rows that would not fit one frame (or max_adapter_rows) are left out and counted in
/// the message.
proto::adapters_result adapters_result_of(const actors::adapter_reply& r);

} // namespace lf::gateway
