/// scan_request_id: the id read from the raw bytes of a frame msgpack-c refused. Every integer
/// encoding, ids after every kind of value, frames the decoder refuses (which now carry the id),
/// and the scan giving up on what it cannot walk: truncation, deep nesting, huge declared lengths,
/// wrong id types, its budget. Then mutated and truncated frames: never a wrong id, never a read
/// past the end (ASan / UBSan builds check that), always fast.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "proto/id_scan.hpp"
#include "tests/unit/proto/frame_builder.hpp"

using namespace lf::proto;
using namespace lf::test;
using namespace std::string_literals;
using Catch::Contains;

namespace {

/// One packed value.
std::string packed(const value& v) {
  msgpack::sbuffer buf;
  packer p(buf);
  v(p);
  return std::string(buf.data(), buf.size());
}

/// A fixmap header for `n` pairs.
std::string map_head(unsigned n) { return std::string(1, static_cast<char>(0x80 | n)); }

/// A key as a fixstr.
std::string key(const std::string& k) { return packed(str(k)); }

/// {"v": 1, "type": "cancel", "id": <id_bytes>}: a cancel whose id is written by hand.
std::string cancel_with_id(const std::string& id_bytes) {
  return map_head(3) + key("v") + "\x01" + key("type") + key("cancel") + key("id") + id_bytes;
}

/// The scan over a heap copy of exactly `bytes.size()` bytes, so that under ASan a read past the
/// end is a finding (a std::string's spare capacity or inline buffer would hide it).
std::optional<std::uint64_t> scan(std::string_view bytes) {
  const auto exact = std::make_unique<char[]>(bytes.size());
  std::copy(bytes.begin(), bytes.end(), exact.get());
  const auto id = scan_request_id(std::string_view(exact.get(), bytes.size()));
  return id ? std::optional<std::uint64_t>(id->value()) : std::nullopt;
}

} // namespace

TEST_CASE("id scan: every msgpack integer encoding, as the decoder reads it", "[protocol][id_scan]") {
  const std::vector<std::pair<std::string, std::uint64_t>> ids = {
    {"\x00"s, 0}, {"\x05"s, 5}, {"\x7f"s, 127},                           // positive fixint
    {"\xcc\xff"s, 255}, {"\xcd\x01\x00"s, 256}, {"\xce\x00\x01\x00\x00"s, 65536},
    {"\xcf\xff\xff\xff\xff\xff\xff\xff\xff"s, ~std::uint64_t{0}},      // uint 8 .. 64
    {"\xd0\x05"s, 5}, {"\xd1\x00\xff"s, 255}, {"\xd2\x00\x00\x01\x00"s, 256},
    {"\xd3\x7f\xff\xff\xff\xff\xff\xff\xff"s, 0x7fff'ffff'ffff'ffffull},  // int 8 .. 64, >= 0
  };
  for (const auto& [bytes, want] : ids) {
    const auto frame = cancel_with_id(bytes);
    INFO("id bytes of length " << bytes.size() << ", want " << want);
    CHECK(scan(frame) == want);
    // The decoder reads the same id from the same bytes.
    const auto decoded = expect_message<cancel_msg>(decode_client(frame));
    CHECK(decoded.id.value() == want);
  }
  // Negative ids, in every signed encoding: no id, for the scan as for the decoder.
  for (const auto& bytes : {"\xff"s, "\xe0"s, "\xd0\xff"s, "\xd1\x80\x00"s, "\xd2\xff\xff\xff\xff"s,
                            "\xd3\x80\x00\x00\x00\x00\x00\x00\x00"s}) {
    CHECK_FALSE(scan(cancel_with_id(bytes)));
    CHECK_FALSE(expect_error(decode_client(cancel_with_id(bytes))).id);
  }
}

TEST_CASE("id scan: the id after values of every kind", "[protocol][id_scan]") {
  const std::vector<std::pair<const char*, std::string>> before = {
    {"nil", "\xc0"s}, {"bool", "\xc3"s}, {"negative", "\xd3\x80\x00\x00\x00\x00\x00\x00\x00"s},
    {"float32", packed(f32(1.5f))}, {"float64", packed(f64(2.5))},
    {"str8", packed(str(std::string(200, 'a')))}, {"str16", packed(str(std::string(300, 'a')))},
    {"str32", packed(str(std::string(70000, 'a')))}, {"bin8", packed(bin("xyz"))},
    {"bin32", packed(bin(std::string(70000, 'b')))},
    {"fixext1..16", "\x95\xd4\x01\x00\xd5\x01\x00\x00\xd6\x01\x00\x00\x00\x00"s
                      + "\xd7\x01"s + std::string(8, '\0') + "\xd8\x01"s + std::string(16, '\0')},
    {"ext8/16/32", "\x93\xc7\x02\x01\xaa\xbb\xc8\x00\x01\x01\xcc\xc9\x00\x00\x00\x00\x01"s},
    {"array of maps", packed(array({fields{{"id", u64(99)}}.as_value(), u64(3)}))},
    {"map16", "\xde\x00\x01"s + key("id") + "\x63"},
    {"depth 5", packed(array({array({array({array({str("id")})})})}))},
    {"\"id\" as a bin key's value", packed(bin("id"))},
  };
  for (const auto& [what, value_bytes] : before) {
    INFO(what);
    // {"v": 1, "x": <value>, "type": "submit", "id": 42}
    const auto frame = map_head(4) + key("v") + "\x01" + key("x") + value_bytes + key("type")
                       + key("submit") + key("id") + "\x2a";
    CHECK(scan(frame) == 42u);
  }
  // Keys other than strings are skipped like values; a bin "id" key is not the id.
  CHECK(scan(map_head(3) + "\x07\x08" + packed(array({u64(1)})) + "\xc0" + key("id") + "\x09") == 9u);
  CHECK_FALSE(scan(map_head(1) + packed(bin("id")) + "\x09"));
  // The id key written as str8 / str16 rather than fixstr.
  CHECK(scan(map_head(1) + "\xd9\x02id\x0b"s) == 11u);
  CHECK(scan(map_head(1) + "\xda\x00\x02id\x0c"s) == 12u);
  // The first id decides, as in the decoder.
  CHECK(scan(map_head(2) + key("id") + "\x01" + key("id") + "\x02") == 1u);
  CHECK_FALSE(scan(map_head(2) + key("id") + key("7") + key("id") + "\x02"));
}

TEST_CASE("id scan: frames the decoder refuses now carry their id", "[protocol][id_scan]") {
  const auto with = [](const char* k, value v) { return submit_fields().set(k, std::move(v)); };
  const std::vector<std::pair<std::string, std::string>> refused = {
    {"nested deeper than 3 levels", with("stop", array({array({array({array({str("x")})})})})).bytes()},
    {"an array has more than 1024 elements", with("stop", strings(std::vector<std::string>(2000, "x"))).bytes()},
    {"binary values", with("prompt", bin("hello")).bytes()},
    {"extension values", submit_fields().bytes().replace(0, 1, "\x85"s) + key("x") + "\xd4\x01\x00"s},
    {"trailing bytes", submit_fields().bytes() + "\xc0"},
    {"truncated", submit_fields().bytes().substr(0, submit_fields().bytes().size() - 2)},
    {"the limit is 1048576", with("prompt", str(std::string(max_frame_bytes, 'a'))).bytes()},
    {"malformed msgpack", submit_fields().bytes().replace(0, 1, "\x85"s) + key("x") + "\xc1"},
  };
  for (const auto& [why, bytes] : refused) {
    INFO(why);
    const auto e = expect_error(decode_client(bytes));
    CHECK_THAT(e.message, Contains(why));
    CHECK(e.id == client_request_id{5});
    CHECK(expect_error(decode_server(bytes)).id == client_request_id{5});
  }
  // A map of 5,000 keys (over 4,096) with the id last.
  std::string many = "\xdf\x00\x00\x13\x88"s;
  for (int i = 0; i < 4999; ++i)
    many += key("k" + std::to_string(i)) + "\xc0";
  many += key("id") + "\xcd\x30\x39";
  const auto e = expect_error(decode_client(many));
  CHECK_THAT(e.message, Contains("a map has more than 4096 entries"));
  CHECK(e.id == client_request_id{12345});
}

TEST_CASE("id scan: gives up on what it cannot walk", "[protocol][id_scan]") {
  const auto after = [](const std::string& value_bytes) {
    return map_head(2) + key("x") + value_bytes + key("id") + "\x07";
  };
  CHECK(scan(after("\xc0")) == 7u);  // the control
  // Not a map, or no top-level id.
  CHECK_FALSE(scan(""));
  CHECK_FALSE(scan(packed(array({str("id"), u64(7)}))));
  CHECK_FALSE(scan(packed(fields{{"v", u64(1)}, {"type", str("ping")}}.as_value())));
  CHECK_FALSE(scan(map_head(1) + key("x") + packed(fields{{"id", u64(7)}}.as_value())));
  CHECK_FALSE(scan(map_head(1) + key("idx") + "\x07"));
  CHECK_FALSE(scan(map_head(1) + key("i") + "\x07"));
  // An id of the wrong type.
  for (const auto& v : {packed(str("7")), packed(nil()), packed(f64(7.5)), packed(f32(7.5f)),
                        packed(boolean(true)), packed(array({u64(7)})), packed(bin("\x07")), "\xff"s})
    CHECK_FALSE(scan(map_head(1) + key("id") + v));
  // Values that cannot be skipped: a byte no value starts with, lengths past the end, nesting
  // past max_scan_depth.
  CHECK_FALSE(scan(after("\xc1"s)));
  CHECK_FALSE(scan(after("\xdb\xff\xff\xff\xff"s)));
  CHECK_FALSE(scan(after("\xc6\x00\x01\x00\x00"s)));
  CHECK_FALSE(scan(after("\xc9\xff\xff\xff\xff\x01"s)));
  CHECK_FALSE(scan(after("\xdd\xff\xff\xff\xff"s)));
  CHECK_FALSE(scan(after("\xdf\x7f\xff\xff\xff"s)));
  CHECK(scan(after(std::string(max_scan_depth, '\x91') + "\xc0")) == 7u);
  CHECK_FALSE(scan(after(std::string(max_scan_depth + 1, '\x91') + "\xc0")));
  CHECK_FALSE(scan(after(std::string(100000, '\x91') + "\xc0")));
  // Truncated: every proper prefix of a frame whose id is last.
  const auto frame = submit_fields().erase("id").set("id", u64(0x1234'5678)).bytes();
  REQUIRE(scan(frame) == 0x1234'5678u);
  for (std::size_t n = 0; n < frame.size(); ++n)
    CHECK_FALSE(scan(frame.substr(0, n)));
  // A top-level map declaring 2^32 - 1 entries: walked as far as its bytes go.
  CHECK_FALSE(scan("\xdf\xff\xff\xff\xff"s));
  CHECK(scan("\xdf\xff\xff\xff\xff"s + key("a") + "\x01" + key("id") + "\x03") == 3u);
}

TEST_CASE("id scan: its budget of values bounds the work", "[protocol][id_scan]") {
  // `pairs` pairs (fixint key, nil) before the id: the map header, 2 values a pair, the id's key
  // and value.
  const auto frame = [](std::uint32_t pairs) {
    std::string s = "\xdf";
    for (int shift = 24; shift >= 0; shift -= 8)
      s += static_cast<char>(((pairs + 1) >> shift) & 0xffu);
    for (std::uint32_t i = 0; i < pairs; ++i)
      s += "\x01\xc0";
    return s + key("id") + "\x07";
  };
  const auto fits = static_cast<std::uint32_t>((max_scan_values - 3) / 2);
  CHECK(scan(frame(fits)) == 7u);
  CHECK_FALSE(scan(frame(fits + 1)));
}

TEST_CASE("id scan: mutated frames never give a wrong id and stay fast", "[protocol][id_scan]") {
  std::mt19937_64 rng(11);
  const auto start = std::chrono::steady_clock::now();
  std::size_t found = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t id = rng() >> (rng() % 64);
    auto m = submit_msg{};
    m.id = client_request_id{id};
    m.prompt = std::string(rng() % 40, 'p');
    m.stop = std::vector<std::string>(rng() % 4, "s");
    auto bytes = encode(m);
    // Flip, insert or delete a few bytes anywhere.
    const auto edits = 1 + rng() % 3;
    for (std::size_t k = 0; k < edits && !bytes.empty(); ++k) {
      const auto at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes.insert(at, 1, static_cast<char>(rng())); break;
        default: bytes.erase(at, 1); break;
      }
    }
    const auto got = scan(bytes);
    if (got)
      ++found;
    // A mutation can change the id's own bytes; what it must never do is move the scan off the
    // frame's structure. Where the decoder reads an id, the scan reads the same one.
    const auto decoded = decode_client(bytes);
    if (const auto* s = std::get_if<submit_msg>(&decoded))
      CHECK(got == s->id.value());
    else if (const auto* e = std::get_if<decode_error>(&decoded); e != nullptr && e->id)
      CHECK(got == e->id->value());
  }
  CHECK(found > 10000);  // most single edits leave the id readable
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  CHECK(took.count() < 10.0);
}
