// Prefix-cache events over the real transport: a worker in a second actor system tells the
// router (published over CAF's middleman on loopback) what its prefix cache holds; a gap in the
// numbers brings a snapshot; the worker's loss takes its entries at once.
#include "tests/unit/router/cluster_fixture.hpp"

#include <caf/io/middleman.hpp>

#include <thread>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_remote_prefix {

namespace {

struct node_config : caf::actor_system_config {
  node_config() {
    add_lorafleet_types(*this);
    load<caf::io::middleman>();
  }
};

router_stats stats_of(caf::actor_system& sys, const router_actor& router) {
  caf::scoped_actor self{sys};
  router_stats out;
  self->request(router, std::chrono::seconds(30), caf::get_atom::value)
    .receive([&](router_stats& s) { out = std::move(s); }, [&](const caf::error& e) { FAIL(caf::to_string(e)); });
  return out;
}

/// Asks the router's stats until `ok` holds (at most ~5 s); the last stats.
template <class Pred>
router_stats await_stats(caf::actor_system& sys, const router_actor& router, Pred ok) {
  auto s = stats_of(sys, router);
  for (int i = 0; i < 500 && !ok(s); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = stats_of(sys, router);
  }
  return s;
}

} // namespace

TEST_CASE("prefix-cache events cross nodes: index, gap and snapshot, loss", "[cluster][remote][prefix]") {
  node_config router_cfg;
  caf::actor_system router_sys{router_cfg};
  router_config rc;
  rc.placement.policy = placement_policy::cache_aware;
  rc.move_wait = std::chrono::milliseconds(200);
  auto router = spawn_router(router_sys, rc);
  auto port = router_sys.middleman().publish(router, 0, "127.0.0.1");
  REQUIRE(port);
  node_config worker_cfg;
  caf::actor_system worker_sys{worker_cfg};
  auto backend = test::fake_worker()();
  auto remote = worker_sys.middleman().remote_actor<router_actor>("127.0.0.1", *port);
  REQUIRE(remote);
  worker_options o;
  o.name = "remote-w1";
  auto worker = spawn_worker(worker_sys, backend, *remote, o);
  REQUIRE(await_stats(router_sys, router, [](const router_stats& s) { return s.workers == 1; }).workers == 1);

  client cl(router_sys, router);
  const std::string prompt =
    "The quick brown fox jumps over the lazy dog, and the lazy dog, unbothered, goes back to sleep in the sun.";
  cl.submit(test::greedy(1, prompt, 8));
  REQUIRE(cl.run_until_terminals(1, std::chrono::seconds(60)));
  REQUIRE(cl.log[1].done);
  // The step's events travel ahead of its terminal: the index knew before the client did.
  const auto blocks = stats_of(router_sys, router).prefix_blocks;
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
  const auto after = await_stats(router_sys, router, [&](const router_stats& s) { return s.prefix_blocks > blocks; });
  CHECK(after.prefix_blocks > blocks);

  // A batch numbered far ahead (as if some were lost): the router drops the worker's entries and
  // asks it, across the nodes, for a snapshot, which brings them all back.
  caf::anon_send(router, prefix_events{worker_id{1}, 1'000'000, false, 8, true, {}, {}});
  const auto resynced = await_stats(router_sys, router, [&](const router_stats& s) {
    return s.prefix_resyncs == 1 && s.prefix_blocks == after.prefix_blocks;
  });
  CHECK(resynced.prefix_resyncs == 1);
  CHECK(resynced.prefix_blocks == after.prefix_blocks);

  // The worker is lost: its entries go with it.
  caf::anon_send_exit(worker, caf::exit_reason::kill);
  const auto gone = await_stats(router_sys, router, [](const router_stats& s) { return s.workers == 0; });
  CHECK(gone.workers == 0);
  CHECK(gone.prefix_blocks == 0);

  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  backend.loop->stop(false);
}

} // namespace test_remote_prefix
