// The HTTP client's rules (tools/loadtest/http_reuse.hpp): a request goes again only after a
// stale keep-alive connection, and a connection is kept only when the reply allows it.
#include <catch2/catch.hpp>

#include "tools/loadtest/http_reuse.hpp"

using namespace lf::loadtest;

TEST_CASE("a request is resent once, only after a reused connection closed before any reply byte", "[loadtest][http]") {
  http_attempt stale;
  stale.reused = true;
  stale.connection_closed = true;
  CHECK(resend_on_fresh_connection(stale));

  auto again = stale;  // the resend went out on a new connection; a second stale one is not expected
  again.resends = max_stale_resends;
  CHECK_FALSE(resend_on_fresh_connection(again));

  auto fresh = stale;  // a new connection that fails is the server's answer
  fresh.reused = false;
  CHECK_FALSE(resend_on_fresh_connection(fresh));

  auto started = stale;  // a status line or tokens came back: never send it twice
  started.response_started = true;
  CHECK_FALSE(resend_on_fresh_connection(started));

  auto timed_out = stale;  // the server kept the connection and said nothing: not stale
  timed_out.connection_closed = false;
  CHECK_FALSE(resend_on_fresh_connection(timed_out));
}

TEST_CASE("a connection goes back to the idle pool unless the reply says close (or is HTTP/1.0)", "[loadtest][http]") {
  CHECK(reusable_after_reply(1, 1, ""));
  CHECK(reusable_after_reply(1, 1, "keep-alive"));
  CHECK_FALSE(reusable_after_reply(1, 1, "close"));
  CHECK_FALSE(reusable_after_reply(1, 1, "Close"));
  CHECK_FALSE(reusable_after_reply(1, 1, "Upgrade, close"));
  CHECK_FALSE(reusable_after_reply(1, 1, " CLOSE "));
  CHECK(reusable_after_reply(1, 1, "closed"));  // not the token
  CHECK_FALSE(reusable_after_reply(1, 0, ""));
  CHECK(reusable_after_reply(1, 0, "Keep-Alive"));
  CHECK_FALSE(reusable_after_reply(1, 0, "keep-alive, close"));
  CHECK(reusable_after_reply(2, 0, ""));
}
