/// A bounded msgpack walker over raw bytes: it reads value headers and skips payloads by their
/// declared lengths, building nothing. See id_scan.hpp.
///
/// Every length is checked against the bytes left before it is used, and every value read costs
/// one unit of a fixed budget, so a few bytes declaring a 4-billion-entry map cost what their
/// bytes allow and no more. Nested containers are tracked by a fixed array of counters (values
/// still to skip at each open level), not by recursion.

#include "proto/id_scan.hpp"

#include <array>
#include <cstdint>

namespace lf::proto {

namespace {

/// What a value's header says about it.
enum class kind {
  uint,      ///< a non-negative integer (any width, signed encodings included); `value` holds it
  negative,  ///< a negative integer
  scalar,    ///< nil, bool or float, payload already consumed
  str,       ///< `n` bytes of payload follow
  blob,      ///< bin or ext: `n` bytes of payload follow (ext's type byte included)
  array,     ///< `n` values follow
  map,       ///< `n` key-value pairs follow
};

/// One value's header, read and consumed.
struct head {
  kind k = kind::scalar;
  std::uint64_t n = 0;
  std::uint64_t value = 0;
};

/// A read position in the frame plus the scan's budget of values.
class cursor {
public:
  explicit cursor(std::string_view bytes) noexcept : bytes_(bytes) {}

  std::size_t left() const noexcept { return bytes_.size() - pos_; }

  /// Skips `n` bytes; false (and nothing skipped) when fewer are left.
  bool skip(std::uint64_t n) noexcept {
    if (n > left())
      return false;
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

  /// True when the next bytes are `s` (not consumed).
  bool next_is(std::string_view s) const noexcept { return bytes_.substr(pos_).substr(0, s.size()) == s; }

  /// The next `width` bytes (1 to 8) as a big-endian unsigned integer.
  std::optional<std::uint64_t> big_endian(std::size_t width) noexcept {
    if (width > left())
      return std::nullopt;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i)
      v = (v << 8) | static_cast<unsigned char>(bytes_[pos_ + i]);
    pos_ += width;
    return v;
  }

  /// The next value's header; std::nullopt when the budget is spent, the bytes end, or the byte
  /// starts no msgpack value (0xc1).
  std::optional<head> next() noexcept {
    if (budget_ == 0 || left() == 0)
      return std::nullopt;
    --budget_;
    const auto b = static_cast<unsigned char>(bytes_[pos_++]);
    if (b <= 0x7f)
      return head{kind::uint, 0, b};
    if (b <= 0x8f)
      return head{kind::map, b & 0x0fu, 0};
    if (b <= 0x9f)
      return head{kind::array, b & 0x0fu, 0};
    if (b <= 0xbf)
      return head{kind::str, b & 0x1fu, 0};
    if (b >= 0xe0)
      return head{kind::negative, 0, 0};
    switch (b) {
      case 0xc0: case 0xc2: case 0xc3: return head{kind::scalar, 0, 0};
      case 0xc4: case 0xc5: case 0xc6: return sized(kind::blob, std::size_t{1} << (b - 0xc4), 0);
      case 0xc7: case 0xc8: case 0xc9: return sized(kind::blob, std::size_t{1} << (b - 0xc7), 1);
      case 0xca: return skip(4) ? std::optional<head>(head{}) : std::nullopt;
      case 0xcb: return skip(8) ? std::optional<head>(head{}) : std::nullopt;
      case 0xcc: case 0xcd: case 0xce: case 0xcf: return integer(std::size_t{1} << (b - 0xcc), false);
      case 0xd0: case 0xd1: case 0xd2: case 0xd3: return integer(std::size_t{1} << (b - 0xd0), true);
      case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        return head{kind::blob, 1 + (std::uint64_t{1} << (b - 0xd4)), 0};
      case 0xd9: case 0xda: case 0xdb: return sized(kind::str, std::size_t{1} << (b - 0xd9), 0);
      case 0xdc: case 0xdd: return sized(kind::array, std::size_t{2} << (b - 0xdc), 0);
      case 0xde: case 0xdf: return sized(kind::map, std::size_t{2} << (b - 0xde), 0);
      default: return std::nullopt;  // 0xc1: never used
    }
  }

private:
  /// A header whose length is the next `width` bytes, plus `extra` payload bytes (ext's type).
  std::optional<head> sized(kind k, std::size_t width, std::uint64_t extra) noexcept {
    const auto n = big_endian(width);
    if (!n)
      return std::nullopt;
    return head{k, *n + extra, 0};
  }

  std::optional<head> integer(std::size_t width, bool is_signed) noexcept {
    const auto v = big_endian(width);
    if (!v)
      return std::nullopt;
    if (is_signed && ((*v >> (8 * width - 1)) & 1u) != 0)
      return head{kind::negative, 0, 0};
    return head{kind::uint, 0, *v};
  }

  std::string_view bytes_;
  std::size_t pos_ = 0;
  std::size_t budget_ = max_scan_values;
};

/// Skips what follows the header `h` (payload, or a container's values); false when it cannot.
bool skip_rest(cursor& c, head h) noexcept {
  std::array<std::uint64_t, max_scan_depth> left{};  // values still to skip at each open level
  std::size_t depth = 0;
  for (;;) {
    if (h.k == kind::str || h.k == kind::blob) {
      if (!c.skip(h.n))
        return false;
    } else if (h.k == kind::array || h.k == kind::map) {
      const std::uint64_t values = h.k == kind::map ? 2 * h.n : h.n;
      if (values > c.left())  // every value takes one byte at least
        return false;
      if (values > 0) {
        if (depth == max_scan_depth)
          return false;
        left[depth++] = values;
      }
    }
    while (depth > 0 && left[depth - 1] == 0)
      --depth;
    if (depth == 0)
      return true;
    --left[depth - 1];
    const auto next = c.next();
    if (!next)
      return false;
    h = *next;
  }
}

} // namespace

std::optional<client_request_id> scan_request_id(std::string_view frame) noexcept {
  cursor c(frame);
  const auto top = c.next();
  if (!top || top->k != kind::map)
    return std::nullopt;
  // The top-level count is not checked against the bytes left: a truncated frame may still have
  // its id before the cut. Each pair read consumes bytes and budget, so the loop ends either way.
  for (std::uint64_t i = 0; i < top->n; ++i) {
    const auto key = c.next();
    if (!key)
      return std::nullopt;
    if (key->k == kind::str && key->n == 2 && c.next_is("id")) {
      (void) c.skip(2);
      const auto v = c.next();
      if (v && v->k == kind::uint)
        return client_request_id{v->value};
      return std::nullopt;  // the first id decides, as in the decoder
    }
    if (!skip_rest(c, *key))
      return std::nullopt;
    const auto value = c.next();
    if (!value || !skip_rest(c, *value))
      return std::nullopt;
  }
  return std::nullopt;
}

} // namespace lf::proto
