// A worker in a second actor system registers with a router published over CAF's middleman on
// loopback: how a worker node joins the router node.
#include "tests/unit/router/cluster_fixture.hpp"

#include <caf/io/middleman.hpp>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;

namespace {

struct node_config : caf::actor_system_config {
  node_config() {
    add_lorafleet_types(*this);
    load<caf::io::middleman>();
  }
};

/// A router whose moved requests wait 500 ms for another worker.
router_config short_move_wait() {
  router_config rc;
  rc.move_wait = std::chrono::milliseconds(500);
  return rc;
}

/// Router node + worker node, each its own actor system with a middleman.
struct two_nodes {
  node_config router_cfg;
  caf::actor_system router_sys{router_cfg};
  router_actor router = spawn_router(router_sys, short_move_wait());
  std::uint16_t port = 0;

  node_config worker_cfg;
  caf::actor_system worker_sys{worker_cfg};
  worker_backend backend = test::fake_worker()();
  worker_actor worker;

  two_nodes() {
    auto p = router_sys.middleman().publish(router, 0, "127.0.0.1");
    REQUIRE(p);
    port = *p;
    // What a worker node does: look the router up, then spawn workers that register with it.
    auto remote = worker_sys.middleman().remote_actor<router_actor>("127.0.0.1", port);
    REQUIRE(remote);
    worker_options o;
    o.name = "remote-w1";
    worker = spawn_worker(worker_sys, backend, *remote, o);
    caf::scoped_actor self{router_sys};
    bool ready = false;
    self->request(router, std::chrono::seconds(30), caf::wait_for_atom::value, std::uint32_t{1})
      .receive([&](const router_stats& s) { ready = s.workers == 1; }, [&](const caf::error&) {});
    REQUIRE(ready);
  }

  ~two_nodes() {
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
    backend.loop->stop(false);
  }
};

} // namespace

TEST_CASE("a remote worker registers and serves, and its death is seen across nodes", "[cluster][remote]") {
  two_nodes n;
  client cl(n.router_sys, n.router);
  cl.submit(test::greedy(1, "Once upon a time", 8));
  REQUIRE(cl.run_until_terminals(1, std::chrono::seconds(60)));
  auto& l = cl.log[1];
  REQUIRE(l.done);
  CHECK(l.done->tokens.size() == 8);
  CHECK(l.streamed == l.done->text);
  CHECK(l.done->worker == worker_id{1});

  // A long request streams, then the remote worker is killed: with no other worker to resume
  // it, worker_lost once move_wait has passed, not a hang.
  cl.submit(test::greedy(2, "Call me Ishmael.", 240));
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(2) && !k.log.at(2).tokens.empty(); }));
  caf::anon_send_exit(n.worker, caf::exit_reason::kill);
  REQUIRE(cl.run_until_terminals(2, std::chrono::seconds(60)));
  REQUIRE(cl.log[2].error);
  CHECK(cl.log[2].error->code == serve_errc::worker_lost);
  CHECK_THAT(cl.log[2].error->message, Catch::Contains("no other worker took it within 500 ms"));
  const auto s = cl.stats();
  CHECK(s.workers == 0);
  CHECK(s.resumed == 1);
  CHECK(s.worker_lost == 1);
}
