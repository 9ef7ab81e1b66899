// Leaving on purpose, as real processes (`lorafleet launch` of three-nodes.toml): SIGTERM on a busy
// worker node and `lorafleet drain NODE` both move the node's running requests to the other
// node's workers, which continue them exactly; `lorafleet undrain NODE` puts the node back under
// the same load; no client sees an error or a second terminal.
#include "tests/integration/cluster_processes.hpp"

#include <csignal>
#include <iostream>

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

/// Every request ended exactly once with done and nothing followed; returns how many.
int check_all_done(const std::vector<std::unique_ptr<load_client>>& clients) {
  int done = 0;
  for (const auto& c : clients)
    for (const auto& [id, r] : c->records()) {
      INFO("request " << id << ": " << r.terminals << " terminal(s), error " << to_string(r.error));
      CHECK(r.terminals == 1);
      CHECK(r.after_terminal == 0);
      CHECK(r.done);
      done += r.done ? 1 : 0;
    }
  return done;
}

} // namespace

TEST_CASE("three nodes as processes: SIGTERM on a busy worker node and `lorafleet drain` move its requests "
          "without a client noticing, and `lorafleet undrain` puts the node back",
          "[cluster][processes]") {
  launched_cluster c(three_nodes);
  const auto pids = c.pids();
  std::vector<std::unique_ptr<load_client>> clients;
  for (int i = 0; i < 4; ++i)
    clients.push_back(std::make_unique<load_client>(c.endpoint(), 4, 200));
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.completed") >= 4 && s.at("router.inflight") >= 8; }, 60s));

  // SIGTERM: w2 asks the router to drain it, then leaves; launch starts it again.
  ::kill(pids.at("w2"), SIGTERM);
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.workers") == 2; }, 20s));
  CHECK_THAT(c.log(), Catch::Matchers::Contains("drained: 2 worker(s)"));
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.workers") == 4; }, 60s));

  // The operator drains w1 while it is busy; a name that matches nothing is an error.
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.inflight") >= 8; }, 60s));
  const std::string bin = LF_LORAFLEET_BIN;
  CHECK(run_to_end({bin, "drain", "w1", "--endpoint", c.endpoint()}, 30s));
  CHECK_FALSE(run_to_end({bin, "drain", "no-such-node", "--endpoint", c.endpoint()}, 30s));
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.draining") == 2; }, 10s));
  const auto at_drain = c.stats().at("router.completed");
  REQUIRE(c.wait_stats([&](const auto& s) { return s.at("router.completed") >= at_drain + 8; }, 60s));

  // Undrained under the same load: w1's workers take requests again; nothing is lost either way.
  CHECK(run_to_end({bin, "undrain", "w1", "--endpoint", c.endpoint()}, 30s));
  CHECK_FALSE(run_to_end({bin, "undrain", "w1", "--endpoint", c.endpoint()}, 30s));  // nothing drained now
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.draining") == 0 && s.at("router.accepting") == 4; },
                       10s));
  const auto at_undrain = c.stats().at("router.completed");
  REQUIRE(c.wait_stats([&](const auto& s) { return s.at("router.completed") >= at_undrain + 8; }, 60s));

  for (auto& cl : clients)
    cl->stop_submitting();
  for (auto& cl : clients)
    REQUIRE(cl->wait_all_ended(120s));
  std::this_thread::sleep_for(500ms);  // anything after a terminal would arrive now
  const int done = check_all_done(clients);
  const auto s = c.stats();
  CHECK(s.at("router.worker_lost") == 0);
  CHECK(s.at("router.resumed") >= 1);
  CHECK(s.at("router.kv_shipped") >= 1);  // the drained requests took their K/V along (200-token streams)
  std::cerr << "SIGTERM of w2, then drain of w1, under load: " << done << " done, "
            << s.at("router.resumed") << " resumed, " << s.at("router.replaced") << " placed again, "
            << s.at("router.kv_shipped") << " moved with " << s.at("router.kv_shipped_tokens") << " tokens of K/V\n";
  REQUIRE(c.stop(60s));
}
