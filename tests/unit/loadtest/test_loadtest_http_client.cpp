// The load tester's OpenAI HTTP client (tools/loadtest/http_client.hpp) against a fake server on
// 127.0.0.1 (fake_openai_server.hpp) that closes kept-alive connections as llama.cpp's server
// does: a request that meets a stale connection is sent once more on a new one and counted apart;
// a 500, a reply cut short, or a failure on a new connection is still a failure.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>

#include "tests/unit/loadtest/fake_openai_server.hpp"
#include "tools/loadtest/driver.hpp"
#include "tools/loadtest/http_client.hpp"
#include "tools/loadtest/stats.hpp"

using namespace lf::loadtest;
using lf::test::fake_openai_server;
using lf::test::reply_kind;

namespace {

/// What one request got back.
struct outcome {
  lf::client::result res;
  std::size_t tokens = 0;
};

/// Sends one completion and waits for its end (10 s at most).
outcome complete(http_client& c) {
  auto done = std::make_shared<std::promise<outcome>>();
  auto got = done->get_future();
  auto tokens = std::make_shared<std::size_t>(0);
  lf::proto::submit_msg m;
  m.prompt = "Once upon a time";
  m.max_tokens = 3;
  lf::client::stream_callbacks cb;
  cb.on_token = [tokens](const lf::proto::token_msg&) { ++*tokens; };
  cb.on_done = [done, tokens](const lf::client::result& r) { done->set_value({r, *tokens}); };
  c.submit(m, cb);
  REQUIRE(got.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return got.get();
}

/// Every connection answers its first request and closes on the second without a byte of reply:
/// from the client's side exactly a keep-alive connection the server closed while it was idle.
reply_kind stale_after_one(std::size_t, std::size_t nth) {
  return nth == 0 ? reply_kind::stream_keep_open : reply_kind::close_unanswered;
}

/// `n` requests, the given number at a time, through the load tester's driver.
run_summary drive(http_client& c, std::size_t n, std::uint32_t concurrency) {
  std::vector<planned_request> plan(n);
  for (auto& p : plan) {
    p.prompt = "Once upon a time";
    p.max_tokens = 3;
  }
  driver_options o;
  o.concurrency = concurrency;
  o.drain = std::chrono::milliseconds(10000);
  const auto before = c.stale_retries();
  auto r = run_workload([&c](const lf::proto::submit_msg& m, lf::client::stream_callbacks cb) { c.submit(m, std::move(cb)); },
                        plan, o);
  auto s = summarize(r.samples, r.duration_s, {}, r.lost);
  s.stale_retries = c.stale_retries() - before;
  return s;
}

} // namespace

TEST_CASE("http client: a request on a stale keep-alive connection goes again on a new one, counted apart", "[loadtest][http]") {
  fake_openai_server server(stale_after_one);
  http_client c(server.url(), "");  // GET /v1/models first, on connection 0, which stays idle
  CHECK(c.model() == "fake-model");
  for (int i = 0; i < 5; ++i) {
    const auto o = complete(c);
    CHECK(o.res.ok());
    CHECK(o.res.text == "abc");
    CHECK(o.tokens == 3);
    CHECK(o.res.usage.completion_tokens == 3);
  }
  // Each completion went out on the idle connection, met its close, and went once more on a
  // new connection: 5 resends, 6 connections, 1 + 5 * 2 requests read.
  CHECK(c.stale_retries() == 5);
  CHECK(server.connections() == 6);
  CHECK(server.requests() == 11);
}

TEST_CASE("http client: concurrent requests through the driver all complete past stale connections", "[loadtest][http]") {
  fake_openai_server server(stale_after_one);
  http_client c(server.url(), "m");
  const auto s = drive(c, 24, 4);
  CHECK(s.sent == 24);
  CHECK(s.completed == 24);
  CHECK(s.failed == 0);
  CHECK(s.lost == 0);
  CHECK(s.errors.empty());
  CHECK(s.stale_retries > 0);
  // A resent request was never answered before: every reply the server sent was used once.
  CHECK(server.requests() == 24 + s.stale_retries);
}

TEST_CASE("http client: a server that closes every connection after its reply (llama-server) loses nothing", "[loadtest][http]") {
  fake_openai_server server([](std::size_t, std::size_t) { return reply_kind::stream_then_close; });
  http_client c(server.url(), "m");
  for (int i = 0; i < 3; ++i)
    CHECK(complete(c).res.ok());
  const auto s = drive(c, 32, 4);
  CHECK(s.completed == 32);
  CHECK(s.failed == 0);
  CHECK(s.lost == 0);
  // Whether a request met the close (and went again) or libevent saw it first is a race; either
  // way the server answered each request exactly once, on its own connection.
  CHECK(server.requests() == 35);
  CHECK(server.connections() == 35);
}

TEST_CASE("http client: a reply with Connection: close is not reused, and no resend is needed", "[loadtest][http]") {
  // The server keeps the socket open after saying close; a client that reused it would be
  // answered nothing there and have to resend.
  fake_openai_server server([](std::size_t, std::size_t nth) {
    return nth == 0 ? reply_kind::stream_announce_close : reply_kind::close_unanswered;
  });
  http_client c(server.url(), "m");
  for (int i = 0; i < 4; ++i)
    CHECK(complete(c).res.ok());
  CHECK(c.stale_retries() == 0);
  CHECK(server.connections() == 4);
  CHECK(server.requests() == 4);
}

TEST_CASE("http client: a kept-alive connection serves request after request", "[loadtest][http]") {
  fake_openai_server server([](std::size_t, std::size_t) { return reply_kind::stream_keep_open; });
  http_client c(server.url(), "m");
  for (int i = 0; i < 5; ++i)
    CHECK(complete(c).res.ok());
  CHECK(c.stale_retries() == 0);
  CHECK(server.connections() == 1);
  CHECK(server.requests() == 5);
}

TEST_CASE("http client: a 500 on a reused connection is a failure, not resent", "[loadtest][http]") {
  fake_openai_server server([](std::size_t, std::size_t nth) {
    return nth == 0 ? reply_kind::stream_keep_open : reply_kind::error_500;
  });
  http_client c(server.url(), "m");
  CHECK(complete(c).res.ok());
  const auto o = complete(c);
  CHECK(o.res.error == lf::serve_errc::internal);
  CHECK(o.res.message == "boom");
  CHECK(c.stale_retries() == 0);
  CHECK(server.requests() == 2);
}

TEST_CASE("http client: a reply cut short on a reused connection is a failure, not resent", "[loadtest][http]") {
  fake_openai_server server([](std::size_t, std::size_t nth) {
    return nth == 0 ? reply_kind::stream_keep_open : reply_kind::partial_then_close;
  });
  http_client c(server.url(), "m");
  CHECK(complete(c).res.ok());
  const auto o = complete(c);
  CHECK_FALSE(o.res.ok());
  CHECK(o.tokens == 1);  // the token that came is kept; the request is not sent twice
  CHECK(c.stale_retries() == 0);
  CHECK(server.requests() == 2);
  CHECK(server.connections() == 1);
}

TEST_CASE("http client: a new connection closed without a reply is a failure, not resent", "[loadtest][http]") {
  fake_openai_server server([](std::size_t, std::size_t) { return reply_kind::close_unanswered; });
  http_client c(server.url(), "m");
  const auto o = complete(c);
  CHECK(o.res.error == lf::serve_errc::internal);
  CHECK(c.stale_retries() == 0);
  CHECK(server.requests() == 1);
}

TEST_CASE("http client: a resend that fails too ends the request, once", "[loadtest][http]") {
  // Connection 0 answers once and then closes on the next request; every later connection closes
  // unanswered: the resend (on connection 1) fails and is the request's end.
  fake_openai_server server([](std::size_t conn, std::size_t nth) {
    return conn == 0 && nth == 0 ? reply_kind::stream_keep_open : reply_kind::close_unanswered;
  });
  http_client c(server.url(), "m");
  CHECK(complete(c).res.ok());
  const auto o = complete(c);
  CHECK(o.res.error == lf::serve_errc::internal);
  CHECK(c.stale_retries() == 1);
  CHECK(server.connections() == 2);
  CHECK(server.requests() == 3);
}
