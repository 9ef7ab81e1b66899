#pragma once
/// Internal to the codec: the readers of the adapter registry's messages (protocol_decode.cpp
/// dispatches to them).

#include "proto/field_reader.hpp"
#include "proto/protocol.hpp"

namespace lf::proto::detail {

/// The fields of an `adapters` frame: op (one of list, add, update, remove), name (required but
/// for list), path (required for add and update, refused otherwise).
void read_adapters(field_reader& r, adapters_msg& m);

/// The fields of an `adapters_result` frame.
void read_adapters_result(field_reader& r, adapters_result& m);

} // namespace lf::proto::detail
