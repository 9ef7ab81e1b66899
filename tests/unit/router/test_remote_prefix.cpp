// Prefix-cache events over the real transport: a worker in a second actor system tells the
// router (published over CAF's middleman on loopback) what its prefix cache holds; a gap in the
// numbers brings a snapshot; the worker's loss takes its entries at once.
#include "tests/unit/router/remote_fixture.hpp"

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;

TEST_CASE("prefix-cache events cross nodes: index, gap and snapshot, loss", "[cluster][remote][prefix]") {
  router_config rc;
  rc.placement.policy = placement_policy::cache_aware;
  rc.move_wait = std::chrono::milliseconds(200);
  test::two_nodes n(rc);
  auto& router_sys = n.router_sys;
  auto& router = n.router;
  client cl(router_sys, router);
  const std::string prompt =
    "The quick brown fox jumps over the lazy dog, and the lazy dog, unbothered, goes back to sleep in the sun.";
  cl.submit(test::greedy(1, prompt, 8));
  REQUIRE(cl.run_until_terminals(1, std::chrono::seconds(60)));
  REQUIRE(cl.log[1].done);
  // The step's events travel ahead of its terminal: the index knew before the client did.
  const auto blocks = test::router_stats_of(router_sys, router).prefix_blocks;
  const auto full = (test::tokenizer().encode(prompt).size() + 7) / 8;
  CHECK(blocks >= full - 1);

  // A follow-up reuses the history there.
  auto r = test::greedy(2, "", 4);
  r.draft.prompt = test::tokenizer().encode(prompt);
  r.draft.prompt.insert(r.draft.prompt.end(), cl.log[1].done->tokens.begin(), cl.log[1].done->tokens.end());
  const auto more = test::tokenizer().encode(" Tell me more about the fox and the dog, and what they did the next morning.");
  r.draft.prompt.insert(r.draft.prompt.end(), more.begin(), more.end());
  cl.submit(std::move(r));
  REQUIRE(cl.run_until_terminals(2, std::chrono::seconds(60)));
  REQUIRE(cl.log[2].done);
  CHECK(cl.log[2].done->usage.cached_tokens > 0);
  const auto after = test::await_router_stats(router_sys, router, [&](const router_stats& s) { return s.prefix_blocks > blocks; });
  CHECK(after.prefix_blocks > blocks);

  // A batch numbered far ahead (as if some were lost): the router drops the worker's entries and
  // asks it, across the nodes, for a snapshot, which brings them all back.
  caf::anon_send(router, prefix_events{worker_id{1}, 1'000'000, false, 8, true, {}, {}});
  const auto resynced = test::await_router_stats(router_sys, router, [&](const router_stats& s) {
    return s.prefix_resyncs == 1 && s.prefix_blocks == after.prefix_blocks;
  });
  CHECK(resynced.prefix_resyncs == 1);
  CHECK(resynced.prefix_blocks == after.prefix_blocks);

  // The worker is lost: its entries go with it.
  caf::anon_send_exit(n.worker, caf::exit_reason::kill);
  const auto gone = test::await_router_stats(router_sys, router, [](const router_stats& s) { return s.workers == 0; });
  CHECK(gone.workers == 0);
  CHECK(gone.prefix_blocks == 0);

}
