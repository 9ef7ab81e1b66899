// Bad input over the real socket: every malformed or invalid frame gets an error reply, and a
// well-behaved client next to the offender is served normally throughout.
#include "tests/integration/gateway_fixture.hpp"
#include "tests/unit/proto/frame_builder.hpp"

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

/// Expects exactly an error reply with `code` to what `raw` just sent.
void expect_error_reply(raw_client& raw, serve_errc code, const std::string& what) {
  INFO(what);
  auto r = raw.recv_decoded(10s);
  REQUIRE(r.has_value());
  auto* e = std::get_if<proto::error_msg>(&*r);
  if (e == nullptr)
    FAIL("expected an error reply, got message #" << r->index());
  INFO("message: " << e->message);
  CHECK(e->code == code);
  CHECK_FALSE(e->message.empty());
}

} // namespace

TEST_CASE("malformed frames get errors while another client is served", "[gateway][model]") {
  gateway_cluster gc({}, 1);
  client::client good(opts_for(gc.endpoint()));
  auto background = good.submit(greedy("Once upon a time", 48));
  raw_client raw(gc.endpoint());

  const std::vector<std::pair<std::string, std::string>> frames = {
    {"random bytes", std::string("\xc1\xff\x00\x13garbage", 11)},
    {"truncated msgpack", submit_fields().bytes().substr(0, 10)},
    {"trailing bytes", submit_fields().bytes() + "x"},
    {"wrong top-level type", std::string("\x93\x01\x02\x03", 4)},
    {"empty frame", std::string()},
    {"missing type", fields{{"v", u64(1)}, {"id", u64(1)}}.bytes()},
    {"extra field", submit_fields().set("colour", str("blue")).bytes()},
    {"wrong field type", submit_fields().set("max_tokens", str("ten")).bytes()},
    {"2^64-1 max_tokens", submit_fields().set("max_tokens", u64(~std::uint64_t{0})).bytes()},
    {"invalid UTF-8", submit_fields().set("prompt", str("bad \xff\xfe utf8")).bytes()},
    {"empty prompt", submit_fields().set("prompt", str("")).bytes()},
    {"max_tokens 0", submit_fields().set("max_tokens", i64(0)).bytes()},
    {"max_tokens -1", submit_fields().set("max_tokens", i64(-1)).bytes()},
    {"max_tokens 2^31", submit_fields().set("max_tokens", u64(std::uint64_t{1} << 31)).bytes()},
    {"NaN temperature", submit_fields().set("temperature", f64(std::nan(""))).bytes()},
    {"Inf temperature", submit_fields().set("temperature", f64(INFINITY)).bytes()},
    {"negative temperature", submit_fields().set("temperature", f64(-0.5)).bytes()},
    {"top_p 0", submit_fields().set("top_p", f64(0.0)).bytes()},
    {"top_p 1.5", submit_fields().set("top_p", f64(1.5)).bytes()},
    {"top_p NaN", submit_fields().set("top_p", f64(std::nan(""))).bytes()},
    {"empty stop string", submit_fields().set("stop", strings({""})).bytes()},
    {"too many stop strings", submit_fields().set("stop", strings(std::vector<std::string>(40, "x"))).bytes()},
    {"wrong version", submit_fields().set("v", u64(9)).bytes()},
    {"frame over the size limit", submit_fields().set("prompt", str(std::string(2u << 20, 'a'))).bytes()},
  };
  for (const auto& [what, bytes] : frames) {
    raw.send(bytes);
    expect_error_reply(raw, serve_errc::invalid_request, what);
  }
  // Three frames in one message, and the semantic errors the router and workers find.
  raw.send_frames({"a", "b", "c"});
  expect_error_reply(raw, serve_errc::invalid_request, "three frames");

  raw.send(proto::encode(greedy(std::string(3000, 'a') + " end", 8, proto::client_request_id{41})));
  expect_error_reply(raw, serve_errc::prompt_too_long, "prompt longer than the context");

  auto with_adapter = [](std::string a, std::uint64_t id) {
    auto m = greedy("Hello", 4, proto::client_request_id{id});
    m.adapter = std::move(a);
    return proto::encode(m);
  };
  raw.send(with_adapter("no-such-adapter", 42));
  {
    auto r = raw.recv_decoded(10s);
    REQUIRE(r.has_value());
    if (std::holds_alternative<proto::accepted_msg>(*r))
      r = raw.recv_decoded(10s);
    REQUIRE(r.has_value());
    auto* e = std::get_if<proto::error_msg>(&*r);
    REQUIRE(e != nullptr);
    CHECK(e->code == serve_errc::unknown_adapter);
  }
  raw.send(with_adapter("../etc", 43));
  expect_error_reply(raw, serve_errc::invalid_request, "../ adapter path");

  // A duplicate live id: the second submit is refused with an error without id (with it, the
  // error would end the live request for the client), and the first still completes.
  raw.send(proto::encode(greedy("Once upon a time", 40, proto::client_request_id{44})));
  raw.send(proto::encode(greedy("Once upon a time", 40, proto::client_request_id{44})));
  bool refused = false, done = false;
  for (int i = 0; i < 200 && !(refused && done); ++i) {
    auto r = raw.recv_decoded(10s);
    REQUIRE(r.has_value());
    if (auto* e = std::get_if<proto::error_msg>(&*r)) {
      INFO(e->message);
      CHECK_FALSE(e->id.has_value());
      refused = refused || (e->code == serve_errc::invalid_request
                            && e->message.find("request id 44 is live") != std::string::npos
                            && e->message.find("duplicate") != std::string::npos);
    }
    done = done || std::holds_alternative<proto::done_msg>(*r);
  }
  CHECK(refused);
  CHECK(done);

  auto r = background.get();
  INFO(client::describe(r));
  CHECK(r.ok());
  CHECK(good.ping(5000ms).has_value());
}

TEST_CASE("a cluster on a busy or bad endpoint fails with the endpoint named, and does not hang",
          "[gateway][model]") {
  gateway_cluster first;
  for (const std::string& ep : {first.endpoint(), std::string("bogus")}) {
    INFO(ep);
    auto s = tiny_cluster_settings(ep, 1);
    auto started = std::async(std::launch::async, [s] {
      try {
        cluster::local_cluster second(s);
        return std::string("started");
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
    });
    REQUIRE(started.wait_for(60s) == std::future_status::ready);
    auto what = started.get();
    CHECK(what.find("cannot bind " + ep) != std::string::npos);
  }
  client::client c(opts_for(first.endpoint()));
  auto r = c.submit(greedy("Still serving", 4)).get();
  CHECK(r.ok());
}
