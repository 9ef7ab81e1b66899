// The router link's books (pure): which replica carries each stream, the tokens the client has,
// and the continuation a stream takes to another replica when its own is lost.
#include <catch2/catch.hpp>

#include "gateway/common/router_link_book.hpp"

using namespace lf;
using namespace lf::gateway;
using namespace std::chrono_literals;

namespace {

request_draft seeded(int max_tokens, std::uint32_t timeout_ms = 0) {
  request_draft d;
  d.prompt = {1, 2, 3};
  d.params.max_tokens = max_tokens;
  d.params.seed = 42;
  d.timeout_ms = timeout_ms;
  return d;
}

} // namespace

TEST_CASE("a new stream goes to a replica up, preferring one with accepting workers", "[link]") {
  router_link_book b(3);
  CHECK_FALSE(b.pick());  // every replica down
  b.router_up(0);
  b.router_up(2);
  const auto t0 = link_clock::now();
  b.router_accepting(0, 0);  // just came back: no worker registered yet
  b.router_accepting(2, 2);
  CHECK(b.pick() == std::optional<std::size_t>(2));
  CHECK(b.pick() == std::optional<std::size_t>(2));
  b.router_accepting(0, 2);
  // Both accept: the one carrying fewer of this link's streams.
  b.open(seeded(8), 0, 2, t0);
  CHECK(b.pick() == std::optional<std::size_t>(0));
  CHECK(b.pick(std::size_t{0}) == std::optional<std::size_t>(2));  // `except`
}

TEST_CASE("open needs a seed: a continuation elsewhere must draw the same tokens", "[link]") {
  router_link_book b(1);
  b.router_up(0);
  auto d = seeded(8);
  d.params.seed.reset();
  CHECK_THROWS_AS(b.open(d, 0, 0, link_clock::now()), std::invalid_argument);
}

TEST_CASE("tokens count only from the carrying replica and in index order", "[link]") {
  router_link_book b(2);
  b.router_up(0);
  b.router_up(1);
  const auto id = b.open(seeded(8), 0, 0, link_clock::now());
  CHECK(b.token(id, 0, 0, 11));
  CHECK_FALSE(b.token(id, 0, 0, 11));  // repeated
  CHECK_FALSE(b.token(id, 0, 2, 13));  // a gap
  CHECK_FALSE(b.token(id, 1, 1, 12));  // another replica's
  CHECK(b.token(id, 0, 1, 12));
  CHECK(b.find(id)->tokens == std::vector<std::int32_t>{11, 12});
  CHECK(b.carried_by(id, 0));
  CHECK_FALSE(b.carried_by(id, 1));
}

TEST_CASE("a lost replica's streams continue on another with the tokens sent and the credit bound",
          "[link]") {
  router_link_book b(2);
  b.router_up(0);
  b.router_up(1);
  const auto t0 = link_clock::now();
  const auto a = b.open(seeded(8), 4, 0, t0);
  const auto other = b.open(seeded(8), 0, 1, t0);
  b.token(a, 0, 0, 5);
  b.token(a, 0, 1, 6);
  CHECK(b.grant(a, 2) == 6);
  CHECK(b.on(0) == 1);
  const auto moved = b.router_down(0, t0);
  CHECK(moved == std::vector<link_stream_id>{a});
  CHECK(b.on(0) == 0);
  CHECK(b.waiting() == std::vector<link_stream_id>{a});
  CHECK_FALSE(b.token(a, 0, 2, 7));  // the lost replica's late token: dropped
  auto r = b.pick();
  REQUIRE(r == std::optional<std::size_t>(1));
  auto next = b.continue_on(a, *r, t0 + 10ms);
  REQUIRE(std::holds_alternative<link_continuation>(next));
  const auto& c = std::get<link_continuation>(next);
  CHECK(c.continued == std::vector<std::int32_t>{5, 6});
  CHECK(c.window == 6);
  CHECK(c.draft.params.seed == std::optional<std::uint64_t>(42));
  CHECK(b.carried_by(a, 1));
  CHECK(b.on(1) == 2);
  CHECK(b.token(a, 1, 2, 7));  // the new replica numbers on from 2
  CHECK(b.find(a)->continuations == 1);
  CHECK(b.continuations() == 1);
  CHECK(b.waiting().empty());
  b.close(a);
  b.close(other);
  CHECK(b.size() == 0);
  CHECK(b.on(1) == 0);
}

TEST_CASE("a continuation's deadline counts from the first submit", "[link]") {
  router_link_book b(2);
  b.router_up(0);
  b.router_up(1);
  const auto t0 = link_clock::now();
  const auto a = b.open(seeded(8, 1000), 0, 0, t0);
  const auto late = b.open(seeded(8, 1000), 0, 0, t0);
  b.router_down(0, t0);
  auto next = b.continue_on(a, 1, t0 + 300ms);
  REQUIRE(std::holds_alternative<link_continuation>(next));
  CHECK(std::get<link_continuation>(next).draft.timeout_ms == 700);
  CHECK(std::holds_alternative<link_expired>(b.continue_on(late, 1, t0 + 1000ms)));
}

TEST_CASE("waiting streams are found after the wait limit", "[link]") {
  router_link_book b(1);
  b.router_up(0);
  const auto t0 = link_clock::now();
  const auto a = b.open(seeded(8), 0, 0, t0);
  b.router_down(0, t0);
  CHECK(b.waited_past(1000ms, t0 + 999ms).empty());
  CHECK(b.waited_past(1000ms, t0 + 1000ms) == std::vector<link_stream_id>{a});
  CHECK_FALSE(b.pick());
}
