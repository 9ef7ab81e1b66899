// Cache-aware routing end to end in one process: workers' prefix-cache events reach the router's
// index, and a conversation's next turn lands on the worker holding its history.
#include "tests/unit/router/cluster_fixture.hpp"

#include <map>
#include <set>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

namespace {

const char* const openings[] = {
  "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
  "foolishness, it was the epoch of belief, it was the epoch of incredulity.",
  "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, "
  "and nothing particular to interest me on shore, I thought I would sail about a little.",
  "In a hole in the ground there lived a hobbit. Not a nasty, dirty, wet hole, filled with the ends of worms "
  "and an oozy smell, nor yet a dry, bare, sandy hole with nothing in it to sit down on.",
  "Happy families are all alike; every unhappy family is unhappy in its own way. Everything was in confusion "
  "in the Oblonskys' house. The wife had discovered that the husband was carrying on an intrigue.",
};

router_config policy(placement_policy p) {
  router_config rc;
  rc.placement.policy = p;
  return rc;
}

} // namespace

TEST_CASE("a conversation's next turn lands on the worker holding its history", "[cluster][prefix]") {
  cluster c(policy(placement_policy::cache_aware),
            {test::fake_worker(), test::fake_worker(), test::fake_worker(), test::fake_worker()});
  client cl(c.sys, c.router);
  // Turn 1 of four conversations, all at once: they spread over the workers.
  for (std::uint64_t i = 0; i < 4; ++i)
    cl.submit(test::greedy(i + 1, openings[i], 8));
  REQUIRE(cl.run_until_terminals(4));
  std::set<std::uint32_t> used;
  std::vector<std::vector<std::int32_t>> history(4);
  for (std::uint64_t i = 0; i < 4; ++i) {
    INFO("conversation " << i << ": " << (cl.log[i + 1].error ? cl.log[i + 1].error->message : std::string("done")));
    REQUIRE(cl.log[i + 1].done);
    used.insert(cl.log[i + 1].done->worker.value());
    history[i] = test::tokenizer().encode(openings[i]);
    const auto& out = cl.log[i + 1].done->tokens;
    history[i].insert(history[i].end(), out.begin(), out.end());
  }
  REQUIRE(used.size() >= 2);  // else any policy would pass below
  CHECK(cl.stats().prefix_blocks > 0);
  // Turn 2, one conversation at a time on an idle cluster (least_loaded would pick worker 1 for
  // each): the history plus a new user message.
  for (std::uint64_t i = 0; i < 4; ++i) {
    auto r = test::greedy(10 + i, "", 8);
    r.draft.prompt = history[i];
    const auto more = test::tokenizer().encode(" And then what happened next?");
    r.draft.prompt.insert(r.draft.prompt.end(), more.begin(), more.end());
    cl.submit(std::move(r));
    REQUIRE(cl.run_until_terminals(5 + i));
    REQUIRE(cl.log[10 + i].done);
    CHECK(cl.log[10 + i].done->worker == cl.log[i + 1].done->worker);
    CHECK(cl.log[10 + i].done->usage.cached_tokens >= 8 * ((history[i].size() - 1) / 8) - 8);
  }
}

TEST_CASE("least_loaded, for contrast, sends the next turns to the first idle worker", "[cluster][prefix]") {
  cluster c(policy(placement_policy::least_loaded), {test::fake_worker(), test::fake_worker()});
  client cl(c.sys, c.router);
  cl.submit(test::greedy(1, openings[0], 8));
  cl.submit(test::greedy(2, openings[1], 8));
  REQUIRE(cl.run_until_terminals(2));
  REQUIRE(cl.log[2].done);
  REQUIRE(cl.log[2].done->worker == worker_id{2});
  auto r = test::greedy(3, "", 8);
  r.draft.prompt = test::tokenizer().encode(openings[1]);
  const auto& out = cl.log[2].done->tokens;
  r.draft.prompt.insert(r.draft.prompt.end(), out.begin(), out.end());
  cl.submit(std::move(r));
  REQUIRE(cl.run_until_terminals(3));
  CHECK(cl.log[3].done->worker == worker_id{1});
  CHECK(cl.log[3].done->usage.cached_tokens == 0);
  // The index is kept whatever the policy (the events cost little); only placement ignores it.
  CHECK(cl.stats().prefix_blocks > 0);
}

TEST_CASE("a hot system prompt spreads over the workers, and its requests leave the guard's books",
          "[cluster][prefix]") {
  cluster c(policy(placement_policy::cache_aware),
            {test::fake_worker(), test::fake_worker(), test::fake_worker(), test::fake_worker()});
  client cl(c.sys, c.router);
  const std::string system = openings[0];
  // One request warms a worker with the system prompt.
  cl.submit(test::greedy(1, system, 4));
  REQUIRE(cl.run_until_terminals(1));
  REQUIRE(cl.log[1].done);
  const auto warm = cl.log[1].done->worker;
  // A burst of 12 requests behind the same system prompt, all at once: the prefix credit alone
  // would put every one on the warm worker; the guard spreads them once it has 2 more of them in
  // flight than the least busy worker.
  for (std::uint64_t i = 0; i < 12; ++i)
    cl.submit(test::greedy(10 + i, system + " Question number " + std::to_string(i) + ": what then?", 4));
  REQUIRE(cl.run_until_terminals(13));
  std::map<std::uint32_t, int> per_worker;
  for (std::uint64_t i = 0; i < 12; ++i) {
    REQUIRE(cl.log[10 + i].done);
    ++per_worker[cl.log[10 + i].done->worker.value()];
  }
  CHECK(per_worker.size() >= 3);
  for (const auto& [w, n] : per_worker) {
    INFO("worker " << w << " took " << n << " of 12");
    CHECK(n <= 6);
  }
  CHECK(per_worker.count(warm.value()) == 1);
  // The burst is over. One request at a time now lands where the system prompt is cached and
  // reuses it.
  const auto prompt_blocks = (test::tokenizer().encode(system).size() / 8) * 8;
  for (std::uint64_t i = 0; i < 4; ++i) {
    cl.submit(test::greedy(30 + i, system + " One more, alone: " + std::to_string(i), 4));
    REQUIRE(cl.run_until_terminals(14 + i));
    REQUIRE(cl.log[30 + i].done);
    CHECK(cl.log[30 + i].done->usage.cached_tokens >= prompt_blocks - 8);
  }
}
