#pragma once
/// The request id of a frame the decoder refused, read straight from its bytes.
///
/// msgpack-c refuses a whole frame when any part breaks the decoder's limits (nesting deeper than
/// 3, a map of more than 4,096 entries, an array of more than 1,024, bin or ext values, trailing or
/// missing bytes), so the decoder never sees the frame's `id`. A client with many requests in
/// flight then cannot tell which one failed. This scan recovers the id from the raw bytes when
/// the frame is a msgpack map whose top level has an `id` key holding a non-negative integer.
///
/// It walks the top-level map's keys in order and stops at the first `id`; any other key and
/// value is skipped by its declared length. It gives up (std::nullopt) on anything odd: a frame
/// that is not a map, a byte no value starts with, a value running past the end, a value before
/// the id nested more than `max_scan_depth` levels below the frame map, more than
/// `max_scan_values` values read, or a first `id` that is not a non-negative integer. It never reads past the end of `frame`, allocates nothing and
/// runs in at most `max_scan_values` steps, whatever lengths the frame declares.
///
/// The id read is the decoder's: an unsigned integer in any msgpack width, or a signed encoding
/// holding a non-negative value (msgpack-c reads both as a positive integer).

#include <cstddef>
#include <optional>
#include <string_view>

#include "proto/protocol.hpp"

namespace lf::proto {

/// Deepest nesting below the frame map that the scan skips through on its way to the id (the
/// protocol allows 2).
inline constexpr std::size_t max_scan_depth = 16;
/// Most values (keys, values and their elements) the scan reads before giving up.
inline constexpr std::size_t max_scan_values = std::size_t{1} << 17;

/// The `id` at the top level of the msgpack map `frame`, or std::nullopt (see the file comment).
/// Pure and noexcept; safe on any bytes.
std::optional<client_request_id> scan_request_id(std::string_view frame) noexcept;

} // namespace lf::proto
