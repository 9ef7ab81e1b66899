// A worker's step crosses the router as one message and reaches each client as one event_batch:
// per request, tokens in index order and one terminal after them, cancels included.
#include "tests/unit/router/cluster_fixture.hpp"

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

TEST_CASE("a worker's steps reach the client as event batches, one terminal per request", "[cluster][batch]") {
  router_config rc;
  cluster c(rc, {test::fake_worker(8)});
  client cl(c.sys, c.router);
  const std::size_t n = 8;
  const int max_tokens = 30;
  for (std::size_t i = 0; i < n; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], max_tokens));
  REQUIRE(cl.run_until_terminals(n));
  cl.stats();
  cl.drain();
  std::size_t tokens = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = cl.log[i];
    INFO("request " << i);
    CHECK(l.terminals == 1);
    CHECK(l.after_terminal == 0);
    REQUIRE(l.done);
    CHECK(l.indices_in_order);
    CHECK(l.tokens == l.done->tokens);
    CHECK(l.streamed == l.done->text);
    tokens += l.tokens.size();
  }
  CHECK(tokens == n * max_tokens);
  CHECK(cl.lone_tokens() == 0);  // every token came in a worker step's batch
  // Eight requests decoding together: about one batch per step, not one message per token.
  CHECK(cl.batches() > 0);
  CHECK(cl.batches() < tokens / 2);
}

TEST_CASE("a cancel among batched requests ends only that request, and nothing of it follows", "[cluster][batch]") {
  router_config rc;
  cluster c(rc, {test::fake_worker(8)});
  client cl(c.sys, c.router);
  const std::size_t n = 6;
  for (std::size_t i = 0; i < n; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], i == 0 ? 200 : 40));
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(0) && k.log.at(0).tokens.size() >= 5; }));
  cl.cancel(0);
  REQUIRE(cl.run_until_terminals(n));
  cl.stats();  // after every event the router sent before it
  cl.drain();
  auto& victim = cl.log[0];
  REQUIRE(victim.error);
  CHECK(victim.error->code == serve_errc::cancelled);
  CHECK(victim.terminals == 1);
  CHECK(victim.after_terminal == 0);
  CHECK(victim.tokens.size() < 200);
  CHECK(victim.indices_in_order);
  for (std::size_t i = 1; i < n; ++i) {
    INFO("request " << i);
    CHECK(cl.log[i].terminals == 1);
    CHECK(cl.log[i].after_terminal == 0);
    REQUIRE(cl.log[i].done);
    CHECK(cl.log[i].tokens.size() == 40);
  }
}
