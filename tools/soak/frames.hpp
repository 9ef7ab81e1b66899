#pragma once
/// The soak's frames on the wire: a planned request as a submit (or as the malformed frame an
/// invalid request calls for) and a cancel. Pure: bytes in, bytes out.

#include <cstdint>
#include <string>

#include "tools/soak/plan.hpp"

namespace lf::soak {

/// The submit frame of `r` (streaming). A bad_field_type request sends its temperature as a
/// string, which no encoder of well-typed messages can write.
std::string submit_frame(const planned_request& r);

/// The cancel frame for request `id`.
std::string cancel_frame(std::uint64_t id);

} // namespace lf::soak
