/// Fuzz target for the protocol decoder, in libFuzzer's interface (fuzz_driver.cpp runs it
/// without libFuzzer). Properties checked on every input, as both a client and a server frame:
///   - decoding returns (an exception escaping decode_* ends the process: a finding);
///   - a decode_error has a non-empty, valid UTF-8 message with code invalid_request (it is sent
///     back to the client as is);
///   - a decoded message survives a round trip: decode(encode(m)) == m.
/// A failed property prints what it saw and aborts, which both drivers report as a crash.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "proto/protocol.hpp"
#include "worker/engine/text_stream.hpp"

namespace {

using namespace lf::proto;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_protocol: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const decode_error& e) {
  if (e.code != lf::serve_errc::invalid_request)
    finding("decode_error with a code other than invalid_request", e.message);
  if (e.message.empty())
    finding("decode_error without a message", "");
  if (!lf::is_valid_utf8(e.message))
    finding("decode_error message is not valid UTF-8", e.message);
}

/// decode(encode(m)) == m, for whichever message `decoded` holds.
template <class Result, class Decode>
void check_round_trip(const Result& decoded, Decode decode) {
  std::visit(
    [&](const auto& m) {
      using T = std::decay_t<decltype(m)>;
      if constexpr (std::is_same_v<T, decode_error>) {
        check_error(m);
      } else {
        const auto bytes = encode(m);
        const auto again = decode(bytes);
        if (const auto* e = std::get_if<decode_error>(&again)) {
          // The decoder accepts compact encodings that encode() writes out in full, so a frame
          // close to the limit may not fit once re-encoded; that is the only excuse.
          if (bytes.size() > max_frame_bytes)
            return;
          finding("re-encoded message does not decode", e->message);
        }
        const auto* back = std::get_if<T>(&again);
        if (back == nullptr)
          finding("re-encoded message decodes as another type", std::to_string(again.index()));
        if (!(*back == m))
          finding("decode(encode(m)) != m", "");
      }
    },
    decoded);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_round_trip(decode_client(bytes), [](std::string_view b) { return decode_client(b); });
  check_round_trip(decode_server(bytes), [](std::string_view b) { return decode_server(b); });
  return 0;
}
