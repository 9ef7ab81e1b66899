/// Fuzz target for the protocol decoder, in libFuzzer's interface (fuzz_driver.cpp runs it
/// without libFuzzer). Properties checked on every input, as both a client and a server frame:
///   - decoding returns (an exception escaping decode_* ends the process: a finding);
///   - a decode_error has a non-empty, valid UTF-8 message with code invalid_request (it is sent
///     back to the client as is);
///   - a decoded message survives a round trip: decode(encode(m)) == m;
///   - the raw-bytes id scan (proto/id_scan.hpp) never contradicts the decoder: a decoded
///     message's id is the scan's, and an error's id is the scan's unless the scan gave up.
/// A failed property prints what it saw and aborts, which both drivers report as a crash.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "core/utf8.hpp"
#include "proto/id_scan.hpp"
#include "proto/protocol.hpp"

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

template <class T, class = void>
struct has_id : std::false_type {};
template <class T>
struct has_id<T, std::void_t<decltype(std::declval<T>().id)>> : std::true_type {};

/// The id the decoder found, as an optional (error_msg and decode_error hold one already).
template <class T>
std::optional<client_request_id> id_of(const T& m) {
  if constexpr (has_id<T>::value)
    return m.id;
  else
    return std::nullopt;
}

template <class Result>
void check_id_scan(std::string_view bytes, const Result& decoded) {
  const auto scanned = scan_request_id(bytes);
  std::visit(
    [&](const auto& m) {
      const auto id = id_of(m);
      if (!id)
        return;
      const bool is_error = std::is_same_v<std::decay_t<decltype(m)>, decode_error>;
      if (scanned ? *scanned != *id : !is_error)
        finding("scan_request_id disagrees with the decoder",
                std::to_string(id->value()) + " vs "
                  + (scanned ? std::to_string(scanned->value()) : std::string("none")));
    },
    decoded);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto as_client = decode_client(bytes);
  check_round_trip(as_client, [](std::string_view b) { return decode_client(b); });
  check_id_scan(bytes, as_client);
  const auto as_server = decode_server(bytes);
  check_round_trip(as_server, [](std::string_view b) { return decode_server(b); });
  check_id_scan(bytes, as_server);
  return 0;
}
