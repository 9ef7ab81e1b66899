// Frames refused by the decoder's msgpack limits (nesting deeper than 3, a map over 4,096 entries,
// an array over 1,024, bin values) over the real socket: the error reply carries the frame's id,
// found by proto::scan_request_id, so a client with many requests in flight fails the right one at
// once instead of at its timeout.
#include "tests/integration/gateway_fixture.hpp"
#include "tests/unit/proto/frame_builder.hpp"

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

/// A submit frame with `id` and a map of `keys` entries in all (over 4,096: refused), id last.
std::string submit_with_keys(std::uint64_t id, std::uint16_t keys) {
  fields f{{"v", u64(1)}, {"type", str("submit")}, {"prompt", str("Hello")}};
  for (std::uint16_t i = 3; i + 1 < keys; ++i)
    f.add("k" + std::to_string(i), nil());
  f.add("id", u64(id));
  return f.bytes();
}

/// The next reply, which must be an error; fails the test otherwise.
proto::error_msg next_error(raw_client& raw) {
  auto r = raw.recv_decoded(10s);
  REQUIRE(r.has_value());
  auto* e = std::get_if<proto::error_msg>(&*r);
  if (e == nullptr)
    FAIL("expected an error reply, got message #" << r->index());
  return *e;
}

} // namespace

TEST_CASE("frames refused by msgpack's limits are answered at once with their id",
          "[gateway][model]") {
  gateway_cluster gc({}, 1);
  raw_client raw(gc.endpoint());
  const auto depth5 = array({array({array({array({str("x")})})})});  // stop: 5 deep with the frame
  const std::vector<std::tuple<std::string, std::uint64_t, std::string>> frames = {
    {"nested deeper than 3 levels", 101, submit_fields().set("id", u64(101)).set("stop", depth5).bytes()},
    {"a map has more than 4096 entries", 102, submit_with_keys(102, 5000)},
    {"an array has more than 1024 elements", 103,
     submit_fields().set("id", u64(103)).set("stop", strings(std::vector<std::string>(2000, "x"))).bytes()},
    {"binary values", 104, submit_fields().set("id", u64(104)).set("prompt", bin("Hello")).bytes()},
    {"nested deeper than 3 levels", ~std::uint64_t{0},
     submit_fields().set("stop", depth5).set("id", u64(~std::uint64_t{0})).bytes()},
  };
  for (const auto& [why, id, bytes] : frames) {
    INFO(why << ", id " << id);
    const auto start = std::chrono::steady_clock::now();
    raw.send(bytes);
    const auto e = next_error(raw);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    CHECK(e.code == serve_errc::invalid_request);
    CHECK_THAT(e.message, Catch::Contains(why));
    REQUIRE(e.id.has_value());
    CHECK(e.id->value() == id);
    CHECK(took.count() < 5.0);  // answered by the socket thread, not by a timeout
  }
  // Without a readable id, the error has none.
  raw.send(submit_fields().erase("id").set("stop", depth5).bytes());
  CHECK_FALSE(next_error(raw).id.has_value());
  // The connection is still served.
  raw.send(proto::encode(greedy("Hi", 2, proto::client_request_id{105})));
  CHECK(raw.wait_for_type<proto::done_msg>(30s));
}

TEST_CASE("a refused frame naming a live request's id gets an error without the id, and the request goes on",
          "[gateway][model]") {
  gateway_cluster gc({}, 1);
  raw_client raw(gc.endpoint());
  constexpr std::uint64_t live = 300;
  // The submit, then (in the same burst, so the request is surely still live) a frame over
  // msgpack's limits and one with a bad field, both carrying its id: an error with that id would
  // read as the live request's terminal reply, and its tokens would follow it.
  raw.send(proto::encode(greedy("Once upon a time", 200, proto::client_request_id{live})));
  const auto depth5 = array({array({array({array({str("x")})})})});
  raw.send(submit_fields().set("id", u64(live)).set("stop", depth5).bytes());
  raw.send(fields{{"v", u64(1)}, {"type", str("cancel")}, {"id", u64(live)}, {"why", str("x")}}.bytes());
  int refusals = 0, terminals = 0;
  while (terminals == 0) {
    auto r = raw.recv_decoded(30s);
    REQUIRE(r.has_value());
    if (const auto* e = std::get_if<proto::error_msg>(&*r); e != nullptr && !e->id) {
      CHECK_THAT(e->message, Catch::Contains("request id 300 is live"));
      ++refusals;
    } else if (proto::is_terminal(*r)) {
      CHECK(std::holds_alternative<proto::done_msg>(*r));
      ++terminals;
    } else {
      CHECK(proto::request_of(*r) == proto::client_request_id{live});
    }
  }
  CHECK(refusals == 2);
  // Nothing more for the request: the stats reply (after every frame above) comes next.
  raw.send(proto::encode(proto::stats_msg{}));
  auto next = raw.recv_decoded(10s);
  REQUIRE(next.has_value());
  CHECK(std::holds_alternative<proto::stats_reply>(*next));
}

TEST_CASE("the C++ client fails a request whose frame the gateway refuses at once, not at its timeout",
          "[gateway][model]") {
  gateway_cluster gc({}, 1);
  auto o = opts_for(gc.endpoint());
  o.request_timeout = 60s;
  client::client c(o);
  // Requests in flight around the refused one, so the error must find its request by id.
  std::vector<std::future<client::result>> good;
  for (int i = 0; i < 4; ++i)
    good.push_back(c.submit(greedy(prompts()[static_cast<std::size_t>(i)], 24)));
  // 2,000 chat messages: the messages array is over msgpack's 1,024-element limit.
  proto::submit_msg bad;
  bad.messages.assign(2000, proto::chat_message{proto::chat_role::user, "hi"});
  const auto start = std::chrono::steady_clock::now();
  auto refused = c.submit(bad);
  for (int i = 4; i < 8; ++i)
    good.push_back(c.submit(greedy(prompts()[static_cast<std::size_t>(i)], 24)));
  REQUIRE(refused.wait_for(20s) == std::future_status::ready);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const auto r = refused.get();
  INFO(client::describe(r));
  CHECK(r.error == serve_errc::invalid_request);
  CHECK_THAT(r.message, Catch::Contains("an array has more than 1024 elements"));
  CHECK(took.count() < 20.0);  // not the 60 s timeout
  for (auto& f : good) {
    REQUIRE(f.wait_for(120s) == std::future_status::ready);
    const auto g = f.get();
    INFO(client::describe(g));
    CHECK(g.ok());
  }
  CHECK(c.in_flight() == 0);
}
