// Honest health through the router actor with workers over the fake engine: drain then undrain
// under load loses nothing; with every worker drained (or lost) a new request is refused at once
// with no_workers, a queued one ends within max_queue_wait, and an undrain serves again; each
// worker's state shows in the router's stats.
#include "tests/unit/router/cluster_fixture.hpp"

#include <thread>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;
using namespace std::chrono_literals;

namespace {

std::uint32_t drain(client& cl, cluster& c, const std::string& node) {
  std::uint32_t n = 0;
  cl.self->request(c.router, 10s, drain_atom::value, node)
    .receive([&](std::uint32_t workers, std::uint32_t) { n = workers; },
             [&](const caf::error& e) { FAIL("drain: " << caf::to_string(e)); });
  return n;
}

std::uint32_t undrain(client& cl, cluster& c, const std::string& node) {
  std::uint32_t n = 0;
  cl.self->request(c.router, 10s, undrain_atom::value, node)
    .receive([&](std::uint32_t workers) { n = workers; },
             [&](const caf::error& e) { FAIL("undrain: " << caf::to_string(e)); });
  return n;
}

/// The state the router reports for worker `wid`.
worker_state state_of(const router_stats& s, std::uint64_t wid) {
  for (const auto& m : s.metrics)
    if (m.wid.value() == wid)
      return m.state;
  FAIL("no metrics row for worker " << wid);
  return worker_state::lost;
}

} // namespace

TEST_CASE("drain then undrain under load: every request ends once, done, and the worker serves again",
          "[cluster][health]") {
  router_config rc;
  rc.placement.policy = placement_policy::round_robin;
  cluster c{rc, {test::fake_worker(), test::fake_worker()}};
  client cl{c.sys, c.router};
  for (std::uint64_t i = 0; i < 16; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], 80));
  REQUIRE(cl.run_until([](const client& x) { return x.log.size() >= 4; }, 30s));  // streaming
  CHECK(drain(cl, c, "w1") == 1);
  auto s = cl.stats();
  CHECK(s.accepting == 1);
  CHECK(state_of(s, 1) != worker_state::serving);
  CHECK(state_of(s, 2) == worker_state::serving);
  CHECK(undrain(cl, c, "w1") == 1);
  CHECK(undrain(cl, c, "w1") == 0);  // serving already
  CHECK(undrain(cl, c, "nobody") == 0);
  s = cl.stats();
  CHECK(s.accepting == 2);
  CHECK(state_of(s, 1) == worker_state::serving);
  // More work after the undrain: round robin places on w1 again.
  for (std::uint64_t i = 16; i < 24; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], 20));
  REQUIRE(cl.run_until_terminals(24));
  s = cl.stats();
  cl.drain();
  for (const auto& [id, l] : cl.log) {
    INFO("request " << id);
    CHECK(l.terminals == 1);
    CHECK(l.after_terminal == 0);
    CHECK(l.done);
    CHECK(l.indices_in_order);
  }
  CHECK(s.completed == 24);
  CHECK(s.worker_lost == 0);
}

TEST_CASE("every worker drained: new requests get no_workers at once, queued ones within max_queue_wait, "
          "undrain serves again",
          "[cluster][health]") {
  router_config rc;
  rc.max_inflight_per_worker = 1;  // the second request queues at the router
  rc.max_queue_wait = 300ms;
  cluster c{rc, {test::fake_worker()}};
  client cl{c.sys, c.router};
  cl.submit(test::greedy(1, "a long request", 200));  // ~400 ms of steps: still running at the drain
  cl.submit(test::greedy(2, "a queued request", 10));
  REQUIRE(cl.run_until([](const client& x) { return x.log.count(1) && !x.log.at(1).tokens.empty(); }, 30s));
  const auto drained_at = std::chrono::steady_clock::now();
  REQUIRE(drain(cl, c, "w1") == 1);

  // A new request: refused at once.
  const auto asked = std::chrono::steady_clock::now();
  cl.submit(test::greedy(3, "a new request", 10));
  REQUIRE(cl.run_until([](const client& x) { return x.log.count(3) && x.log.at(3).terminals > 0; }, 5s));
  CHECK(std::chrono::steady_clock::now() - asked < 1s);
  REQUIRE(cl.log[3].error);
  CHECK(cl.log[3].error->code == serve_errc::no_workers);
  CHECK(cl.log[3].error->retry_after_ms >= 1000);
  auto s = cl.stats();
  CHECK(s.accepting == 0);
  CHECK(s.workers == 1);

  // The queued one and the one moved off the drained worker end with no_workers after ~300 ms.
  REQUIRE(cl.run_until_terminals(3, 10s));
  const auto waited = std::chrono::steady_clock::now() - drained_at;
  CHECK(waited >= 250ms);
  CHECK(waited < 300ms + 700ms);
  for (std::uint64_t id : {1, 2}) {
    INFO("request " << id);
    REQUIRE(cl.log[id].error);
    CHECK(cl.log[id].error->code == serve_errc::no_workers);
    CHECK(cl.log[id].terminals == 1);
  }
  CHECK(state_of(cl.stats(), 1) == worker_state::drained);

  // Undrained: it serves again.
  REQUIRE(undrain(cl, c, "w1") == 1);
  CHECK(cl.stats().accepting == 1);
  cl.submit(test::greedy(4, "after the undrain", 10));
  REQUIRE(cl.run_until_terminals(4, 30s));
  CHECK(cl.log[4].done);
  std::this_thread::sleep_for(400ms);  // the drain's outage check fires now: it must find nothing
  cl.drain();
  for (const auto& [id, l] : cl.log)
    CHECK(l.after_terminal == 0);
}

TEST_CASE("every worker lost: no_workers at once, and the worker shows as lost", "[cluster][health]") {
  router_config rc;
  rc.max_queue_wait = 5s;
  cluster c{rc, {test::fake_worker()}};
  client cl{c.sys, c.router};
  caf::anon_send_exit(c.workers[0], caf::exit_reason::kill);
  // Wait (bounded) until the router has seen the worker go.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (cl.stats().workers != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  REQUIRE(cl.stats().workers == 0);
  const auto asked = std::chrono::steady_clock::now();
  cl.submit(test::greedy(1, "nobody serves this", 10));
  REQUIRE(cl.run_until_terminals(1, 5s));
  CHECK(std::chrono::steady_clock::now() - asked < 1s);
  REQUIRE(cl.log[1].error);
  CHECK(cl.log[1].error->code == serve_errc::no_workers);
  auto s = cl.stats();
  CHECK(s.accepting == 0);
  CHECK(state_of(s, 1) == worker_state::lost);
}
