#pragma once
/// Inputs for fuzz_driver: valid frames of every message type (built with encode()) and msgpack
/// snippets that tend to break decoders.

#include <string>
#include <vector>

namespace lf::fuzz {

/// One or more valid frames of each client and server message type.
std::vector<std::string> seed_corpus();

/// Encoded msgpack values at the edges: 2^64-1, INT64_MIN, NaN, a str32 header declaring 4 GiB,
/// invalid UTF-8, nested arrays, field names of the protocol, ...
const std::vector<std::string>& interesting_tokens();

/// True when `input` decodes as a client or a server message.
bool decodes(const std::string& input);

} // namespace lf::fuzz
