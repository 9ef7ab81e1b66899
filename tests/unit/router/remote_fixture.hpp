#pragma once
/// Two nodes on loopback for the router's cross-node tests: a router published over CAF's
/// middleman in one actor system and a worker in a second, registered through remote_actor, as a
/// worker node joins the router node.

#include <caf/io/middleman.hpp>

#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#include "tests/unit/router/cluster_fixture.hpp"

namespace lf::test {

/// An actor system config with lorafleet's types and the middleman.
struct remote_node_config : caf::actor_system_config {
  remote_node_config() {
    actors::add_lorafleet_types(*this);
    load<caf::io::middleman>();
  }
};

/// The router's stats, asked from a scoped actor of `sys`.
inline actors::router_stats router_stats_of(caf::actor_system& sys, const actors::router_actor& router) {
  caf::scoped_actor self{sys};
  actors::router_stats out;
  self->request(router, std::chrono::seconds(30), caf::get_atom::value)
    .receive([&](actors::router_stats& s) { out = std::move(s); },
             [&](const caf::error& e) { FAIL("router stats: " << caf::to_string(e)); });
  return out;
}

/// Asks the router's stats until `ok` holds (at most ~5 s); the last stats.
template <class Pred>
actors::router_stats await_router_stats(caf::actor_system& sys, const actors::router_actor& router, Pred ok) {
  auto s = router_stats_of(sys, router);
  for (int i = 0; i < 500 && !ok(s); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = router_stats_of(sys, router);
  }
  return s;
}

/// A router whose moved requests wait 500 ms for another worker.
inline router::router_config short_move_wait() {
  router::router_config rc;
  rc.move_wait = std::chrono::milliseconds(500);
  return rc;
}

/// Router node + worker node, each its own actor system with a middleman; the worker
/// ("remote-w1") has registered when the constructor returns. The destructor stops both actors
/// and the worker's serving loop.
struct two_nodes {
  remote_node_config router_cfg;
  caf::actor_system router_sys{router_cfg};
  actors::router_actor router;
  std::uint16_t port = 0;

  remote_node_config worker_cfg;
  caf::actor_system worker_sys{worker_cfg};
  actors::worker_backend backend;
  actors::worker_actor worker;

  explicit two_nodes(router::router_config rc = short_move_wait(), actors::worker_backend b = fake_worker()())
    : router(router::spawn_router(router_sys, std::move(rc))), backend(std::move(b)) {
    auto p = router_sys.middleman().publish(router, 0, "127.0.0.1");
    REQUIRE(p);
    port = *p;
    // What a worker node does: look the router up, then spawn workers that register with it.
    auto remote = worker_sys.middleman().remote_actor<actors::router_actor>("127.0.0.1", port);
    REQUIRE(remote);
    actors::worker_options o;
    o.name = "remote-w1";
    worker = actors::spawn_worker(worker_sys, backend, *remote, o);
    caf::scoped_actor self{router_sys};
    bool ready = false;
    self->request(router, std::chrono::seconds(30), caf::wait_for_atom::value, std::uint32_t{1})
      .receive([&](const actors::router_stats& s) { ready = s.workers == 1; }, [&](const caf::error&) {});
    REQUIRE(ready);
  }

  ~two_nodes() {
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
    backend.loop->stop(false);
  }
};

} // namespace lf::test
