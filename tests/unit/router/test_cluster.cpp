// A router and two workers over the tiny GPT-2 in one actor system: many concurrent requests,
// overload, invalid requests.
#include "tests/unit/router/cluster_fixture.hpp"

#include <set>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

TEST_CASE("200 concurrent requests each end once, with the text they get alone", "[cluster]") {
  router_config rc;
  rc.placement.policy = placement_policy::least_loaded;
  cluster c(rc, {test::fake_worker(), test::fake_worker()});
  const int max_tokens = 12;
  auto alone = test::alone_texts(c, max_tokens);

  client cl(c.sys, c.router);
  const std::size_t n = 200;
  for (std::size_t i = 0; i < n; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], max_tokens));
  REQUIRE(cl.run_until_terminals(n));
  auto stats = cl.stats();
  cl.drain();

  std::set<std::uint32_t> served_by;
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = cl.log[i];
    INFO("request " << i << (l.error ? ": " + l.error->message : std::string()));
    CHECK(l.terminals == 1);
    REQUIRE(l.done);
    CHECK(l.done->text == alone[i % alone.size()]);
    CHECK(l.streamed == l.done->text);
    CHECK(l.tokens == l.done->tokens);
    CHECK(l.tokens.size() == static_cast<std::size_t>(max_tokens));
    CHECK(l.indices_in_order);
    CHECK(l.done->usage.completion_tokens == static_cast<std::uint32_t>(max_tokens));
    served_by.insert(l.done->worker.value());
  }
  CHECK(cl.terminals() == n);   // no stray terminal events
  CHECK(served_by.size() == 2);  // least_loaded used both workers
  CHECK(stats.completed == n + alone.size());
  CHECK(stats.inflight == 0);
  CHECK(stats.queued == 0);
  CHECK(stats.overloaded == 0);
}

TEST_CASE("an overload burst gets `overloaded` at once for the excess", "[cluster]") {
  router_config rc;
  rc.max_inflight_per_worker = 4;
  rc.max_queue = 8;
  rc.retry_after_ms = 150;
  cluster c(rc, {test::fake_worker(), test::fake_worker()});
  client cl(c.sys, c.router);
  // Room: 2 workers x 4 in flight + 8 queued = 16. Long generations so none ends mid-burst.
  const std::size_t burst = 40, room = 16;
  for (std::size_t i = 0; i < burst; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], 120));
  REQUIRE(cl.run_until_terminals(burst));
  cl.stats();
  cl.drain();

  std::size_t overloaded = 0, done = 0;
  int first_done_rank = static_cast<int>(burst);
  int last_overload_rank = -1;
  for (std::size_t i = 0; i < burst; ++i) {
    auto& l = cl.log[i];
    CHECK(l.terminals == 1);
    if (l.error) {
      CHECK(l.error->code == serve_errc::overloaded);
      CHECK(l.error->retry_after_ms == 150);
      CHECK(l.tokens.empty());
      CHECK(i >= room);  // the first 16 were admitted
      ++overloaded;
      last_overload_rank = std::max(last_overload_rank, l.done_rank);
    } else {
      REQUIRE(l.done);
      CHECK(l.done->tokens.size() == 120);
      ++done;
      first_done_rank = std::min(first_done_rank, l.done_rank);
    }
  }
  CHECK(overloaded == burst - room);
  CHECK(done == room);
  // "At once": every refusal arrived before any admitted request finished.
  CHECK(last_overload_rank < first_done_rank);
}

TEST_CASE("invalid requests get an error event and the cluster keeps serving", "[cluster]") {
  cluster c(router_config{}, {test::fake_worker(), test::fake_worker()});
  client cl(c.sys, c.router);
  std::map<std::uint64_t, serve_errc> expect;

  auto bad_temp = test::greedy(1, "Hello", 4);
  bad_temp.draft.params.temperature = -1;
  cl.submit(bad_temp);
  expect[1] = serve_errc::invalid_request;

  cl.submit(test::greedy(2, "", 4));
  expect[2] = serve_errc::invalid_request;

  auto bad_adapter = test::greedy(3, "Hello", 4);
  bad_adapter.draft.adapter = "../secrets";
  cl.submit(bad_adapter);
  expect[3] = serve_errc::invalid_request;

  auto unknown_adapter = test::greedy(4, "Hello", 4);
  unknown_adapter.draft.adapter = "no_such_adapter";  // well-formed; no worker serves it
  cl.submit(unknown_adapter);
  expect[4] = serve_errc::unknown_adapter;

  auto too_many_tokens = test::greedy(5, "", 16);
  too_many_tokens.draft.prompt.assign(250, 464);  // 250 + 16 > 256: the router sees it
  cl.submit(too_many_tokens);
  expect[5] = serve_errc::prompt_too_long;

  std::string long_text;
  for (int i = 0; i < 60; ++i)
    long_text += " the cat";  // 120 tokens + 200 > 256
  cl.submit(test::greedy(6, long_text, 200));
  expect[6] = serve_errc::prompt_too_long;

  auto bad_id = test::greedy(7, "", 4);
  bad_id.draft.prompt = {1, 2, 60000};  // outside the vocabulary
  cl.submit(bad_id);
  expect[7] = serve_errc::invalid_request;

  auto bad_stop = test::greedy(8, "Hello", 4);
  bad_stop.draft.params.stop = {""};
  cl.submit(bad_stop);
  expect[8] = serve_errc::invalid_request;

  // A duplicate id while the first is still running.
  cl.submit(test::greedy(9, "Once upon a time", 100));
  cl.submit(test::greedy(9, "Once upon a time", 4));

  REQUIRE(cl.run_until_terminals(expect.size() + 2));
  for (auto& [id, code] : expect) {
    auto& l = cl.log[id];
    INFO("request " << id);
    CHECK(l.terminals == 1);
    REQUIRE(l.error);
    CHECK(l.error->code == code);
    CHECK_FALSE(l.error->message.empty());
  }
  // Request 9: one done (the first) and one invalid_request (the duplicate).
  auto& dup = cl.log[9];
  CHECK(dup.terminals == 2);
  CHECK(dup.done);
  REQUIRE(dup.error);
  CHECK(dup.error->code == serve_errc::invalid_request);

  // Nobody died: a good request is still served, on either worker.
  cl.submit(test::greedy(10, "Call me Ishmael.", 5));
  REQUIRE(cl.run_until_terminals(expect.size() + 3));
  REQUIRE(cl.log[10].done);
  CHECK(cl.log[10].done->tokens.size() == 5);
  CHECK(cl.stats().workers == 2);
}
