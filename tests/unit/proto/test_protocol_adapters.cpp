/// The adapter registry's messages: round trips, and the refusals of a malformed adapters frame.

#include <catch2/catch.hpp>

#include "tests/unit/proto/frame_builder.hpp"

using namespace lf::proto;
using namespace lf::test;

namespace {

template <class T>
void round_trip_client(const T& m) {
  auto d = decode_client(encode(m));
  if (auto* e = std::get_if<decode_error>(&d))
    FAIL(e->message);
  REQUIRE(std::holds_alternative<T>(d));
  CHECK(std::get<T>(d) == m);
}

template <class T>
void round_trip_server(const T& m) {
  auto d = decode_server(encode(m));
  if (auto* e = std::get_if<decode_error>(&d))
    FAIL(e->message);
  REQUIRE(std::holds_alternative<T>(d));
  CHECK(std::get<T>(d) == m);
}

std::string refusal(const adapters_msg& m) {
  auto d = decode_client(encode(m));
  REQUIRE(std::holds_alternative<decode_error>(d));
  return std::get<decode_error>(d).message;
}

} // namespace

TEST_CASE("adapters messages round-trip", "[protocol][adapters]") {
  round_trip_client(adapters_msg{"list", "", ""});
  round_trip_client(adapters_msg{"add", "styles/kjv", "/srv/adapters/kjv"});
  round_trip_client(adapters_msg{"update", "styles/kjv", "/srv/adapters/kjv-2"});
  round_trip_client(adapters_msg{"remove", "styles/kjv", ""});
  adapters_result r;
  round_trip_server(r);
  r.seq = 7;
  adapter_row row;
  row.name = "styles/kjv";
  row.version = 3;
  row.path = "/srv/adapters/kjv-2";
  row.hash = "0cc57146b1f4b64c";
  row.rank = 8;
  row.targets = "attn.c_attn,mlp.c_fc";
  row.bytes = 524288;
  row.updated_ms = 1795547610448;
  row.resident = 2;
  r.adapters = {row, row};
  r.adapters[1].removed = true;
  round_trip_server(r);
  adapters_result refused;
  refused.error = lf::serve_errc::invalid_request;
  refused.message = "adapter x refused: rank 16 is above the cluster's limit of 8";
  round_trip_server(refused);
}

TEST_CASE("a malformed adapters frame is refused with the rule it broke", "[protocol][adapters]") {
  CHECK_THAT(refusal({"rename", "x", ""}), Catch::Contains("op must be list, add, update or remove"));
  CHECK_THAT(refusal({"add", "x", ""}), Catch::Contains("path"));
  CHECK_THAT(refusal({"remove", "", ""}), Catch::Contains("name"));
  CHECK_THAT(refusal({"remove", "x", "/p"}), Catch::Contains("path is only for add and update"));
  CHECK_THAT(refusal({"add", std::string(129, 'a'), "/p"}), Catch::Contains("name"));
  CHECK_THAT(refusal({"add", "x", std::string(4097, 'p')}), Catch::Contains("path"));
}
