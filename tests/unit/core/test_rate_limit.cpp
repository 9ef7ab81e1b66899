// Rate limits per key (core/rate_limit.hpp): token buckets refilled by the time passed in, both
// limits charged together or not at all, retry times, OpenAI's header figures, and the key file's
// rpm= / tpm= options.
#include <catch2/catch.hpp>

#include "core/api_keys.hpp"
#include "core/rate_limit.hpp"

using namespace lf;
using namespace std::chrono_literals;

namespace {
const rate_limiter::clock::time_point t0{};
}

TEST_CASE("token bucket: full at start, refills per minute, never above its capacity", "[rate_limit]") {
  token_bucket b(60, t0);
  CHECK(b.level(t0) == Approx(60));
  CHECK(b.take(60, t0));
  CHECK_FALSE(b.take(1, t0));
  CHECK(b.wait_for(1, t0) == 1000ms);  // 60 a minute: one a second
  CHECK(b.level(t0 + 500ms) == Approx(0.5));
  CHECK(b.take(1, t0 + 1s));
  CHECK(b.level(t0 + 10min) == Approx(60));
  CHECK(b.until_full(t0 + 10min) == 0ms);
}

TEST_CASE("rate limiter: requests per minute, refused with the time it would fit", "[rate_limit]") {
  rate_limiter rl;
  const rate_limits two{2, 0};
  CHECK(rl.admit("alice", two, 100, t0).allowed);
  auto v = rl.admit("alice", two, 100, t0);
  CHECK(v.allowed);
  CHECK(v.remaining_requests == 0);
  CHECK(v.limit_requests == 2);
  CHECK(v.reset_requests_ms == 60000);
  v = rl.admit("alice", two, 100, t0 + 1s);
  CHECK_FALSE(v.allowed);
  CHECK_FALSE(v.never);
  CHECK(v.retry_after_ms == 29000);  // one request refills in 30 s
  CHECK(rl.admit("bob", two, 100, t0 + 1s).allowed);  // keys are apart
  CHECK(rl.admit("alice", two, 100, t0 + 31s).allowed);
  CHECK(rl.admit("anyone", {}, 1'000'000, t0).allowed);  // no limits
}

TEST_CASE("rate limiter: tokens per minute, both limits charged together or not at all", "[rate_limit]") {
  rate_limiter rl;
  const rate_limits l{10, 1000};
  CHECK(rl.admit("k", l, 600, t0).allowed);
  auto v = rl.admit("k", l, 600, t0);
  CHECK_FALSE(v.allowed);
  CHECK(v.remaining_tokens == 400);
  CHECK(v.remaining_requests == 9);  // the refused request was not charged
  CHECK(v.retry_after_ms == 12000);  // 200 tokens at 1000 a minute
  CHECK(v.reset_tokens_ms == 36000);
  v = rl.admit("k", l, 5000, t0);
  CHECK_FALSE(v.allowed);
  CHECK(v.never);  // more than a minute's budget: no retry can help
  CHECK(rl.admit("k", l, 600, t0 + 12s).allowed);
}

TEST_CASE("rate limiter: OpenAI's reset spelling", "[rate_limit]") {
  CHECK(reset_text(250) == "250ms");
  CHECK(reset_text(1000) == "1s");
  CHECK(reset_text(1001) == "2s");
  CHECK(reset_text(360000) == "6m0s");
  CHECK(reset_text(61500) == "1m2s");
}

TEST_CASE("key file: rpm= and tpm= after the tenant, checked", "[rate_limit][api_keys]") {
  const auto t = auth::parse_key_file("alice user sk-alice-0123456789abcdef rpm=60 tpm=40000\n"
                                      "bob user sk-bob-0123456789abcdef0 team-b tpm=500\n"
                                      "ops admin sk-ops-0123456789abcdef0\n",
                                      "keys.txt");
  const auto* a = t.find_name("alice");
  REQUIRE(a);
  CHECK(a->tenant == "alice");
  CHECK(a->limits.requests_per_minute == 60);
  CHECK(a->limits.tokens_per_minute == 40000);
  const auto* b = t.find_name("bob");
  CHECK(b->tenant == "team-b");
  CHECK(b->limits.requests_per_minute == 0);
  CHECK(b->limits.tokens_per_minute == 500);
  CHECK_FALSE(t.find_name("ops")->limits.any());
  for (const char* bad : {"a user sk-a-0123456789abcdef rpm=0\n", "a user sk-a-0123456789abcdef rpm=x\n",
                          "a user sk-a-0123456789abcdef burst=3\n", "a user sk-a-0123456789abcdef rpm=-1\n"}) {
    INFO(bad);
    CHECK_THROWS_WITH(auth::parse_key_file(bad, "keys.txt"), Catch::Contains("expected rpm=N or tpm=N"));
  }
}

TEST_CASE("a shared limiter: one set of buckets for every gateway, counted per key", "[rate_limit]") {
  lf::shared_rate_limiter shared;
  const auto t0 = lf::shared_rate_limiter::clock::now();
  const lf::rate_limits two{2, 0};
  CHECK(shared.admit("zed", two, 10, t0).allowed);   // say, over ZeroMQ
  CHECK(shared.admit("zed", two, 20, t0).allowed);   // over HTTP: the same bucket
  CHECK_FALSE(shared.admit("zed", two, 5, t0).allowed);
  CHECK(shared.admit("free", lf::rate_limits{}, 7, t0).allowed);  // no limits: never counted
  const auto c = shared.counts();
  REQUIRE(c.count("zed"));
  CHECK(c.at("zed").admitted == 2);
  CHECK(c.at("zed").rate_limited == 1);
  CHECK(c.at("zed").tokens == 30);
  CHECK_FALSE(c.count("free"));
}

TEST_CASE("a limiter of one of several gateways enforces its share of each limit", "[rate_limit]") {
  lf::shared_rate_limiter one_of_two(2);
  const auto t0 = lf::shared_rate_limiter::clock::now();
  const lf::rate_limits l{5, 1000};
  CHECK(one_of_two.share_of(l).requests_per_minute == 2);  // rounded down: never above 5 in all
  CHECK(one_of_two.share_of(l).tokens_per_minute == 500);
  CHECK(one_of_two.share_of({1, 0}).requests_per_minute == 1);  // at least 1 each
  CHECK(one_of_two.share_of({0, 0}).requests_per_minute == 0);  // no limit stays none
  CHECK(one_of_two.admit("k", l, 10, t0).allowed);
  CHECK(one_of_two.admit("k", l, 10, t0).allowed);
  auto v = one_of_two.admit("k", l, 10, t0);
  CHECK_FALSE(v.allowed);
  CHECK(v.limit_requests == 2);  // the headers say what this gateway enforces
}
