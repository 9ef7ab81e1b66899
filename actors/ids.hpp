#pragma once
/// Ids the actors use. Standard library only, so the pure router cores (placement, admission)
/// share them with the CAF messages.

#include <cstdint>

#include "core/strong_id.hpp"

namespace lf::actors {

/// An event sink's id of its request (the gateway's or a test's own numbering): unique among
/// the live requests of one sender. Not proto::client_request_id, which a ZeroMQ client chooses
/// and the gateway maps to one of these.
using sink_request_id = lf::strong_id<struct sink_request_tag, std::uint64_t>;

/// The router's id of an accepted request (unique in one router).
using route_id = lf::strong_id<struct route_tag, std::uint64_t>;

/// A worker as the router numbers it (assigned at registration, from 1).
using worker_id = lf::strong_id<struct worker_tag, std::uint32_t>;

} // namespace lf::actors
