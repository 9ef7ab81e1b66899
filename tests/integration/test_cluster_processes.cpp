// cluster-configs/three-nodes.toml as real processes (`lorafleet launch`): a worker node killed
// with SIGKILL under load, a frozen (SIGSTOPped) worker node, the router node killed and
// restarted. Every request must get exactly one terminal reply and none may hang.
#include "tests/integration/cluster_processes.hpp"

#include <csignal>
#include <iostream>
#include <set>

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

/// The ids N of the "worker.N.*" stats: the live workers.
std::set<int> worker_ids(const std::map<std::string, double>& s) {
  std::set<int> ids;
  for (const auto& [k, v] : s)
    if (k.rfind("worker.", 0) == 0)
      ids.insert(std::stoi(k.substr(7)));
  return ids;
}

double sum_finished(const std::map<std::string, double>& s, const std::set<int>& ids) {
  double n = 0;
  for (int id : ids)
    if (auto it = s.find("worker." + std::to_string(id) + ".finished"); it != s.end())
      n += it->second;
  return n;
}

/// Every request has exactly one terminal reply and nothing after it; returns (done, errors).
std::pair<int, int> check_terminals(const std::vector<std::unique_ptr<load_client>>& clients,
                                    const std::set<serve_errc>& allowed_errors) {
  int done = 0, errors = 0;
  for (const auto& c : clients) {
    for (const auto& [id, r] : c->records()) {
      INFO("request " << id << ": " << r.terminals << " terminal(s), error " << to_string(r.error));
      CHECK(r.terminals == 1);
      CHECK(r.after_terminal == 0);
      if (r.done) {
        ++done;
      } else {
        ++errors;
        CHECK(allowed_errors.count(r.error) == 1);
      }
    }
  }
  return {done, errors};
}

} // namespace

TEST_CASE("three nodes as processes: a worker node killed under load, every request ends once, it rejoins and gets work",
          "[cluster][processes]") {
  launched_cluster c(three_nodes);
  const auto before = c.stats();
  REQUIRE(before.at("router.workers") == 4);
  const auto old_ids = worker_ids(before);
  const auto pids = c.pids();
  REQUIRE(pids.count("w1"));

  // Four clients with four long requests in flight each.
  std::vector<std::unique_ptr<load_client>> clients;
  for (int i = 0; i < 4; ++i)
    clients.push_back(std::make_unique<load_client>(c.endpoint(), 4, 200));
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.completed") >= 4 && s.at("router.inflight") >= 8; }, 60s));

  ::kill(pids.at("w1"), SIGKILL);
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.workers") == 2; }, 10s));
  // The cluster keeps serving on w2.
  const auto at_kill = c.stats().at("router.completed");
  REQUIRE(c.wait_stats([&](const auto& s) { return s.at("router.completed") >= at_kill + 8; }, 60s));

  for (auto& cl : clients)
    REQUIRE(cl->wait_all_ended(120s));
  std::this_thread::sleep_for(500ms);  // anything after a terminal would arrive now
  auto [done, errors] = check_terminals(clients, {});
  CHECK(done > 0);
  CHECK(errors == 0);
  const auto after = c.stats();
  // Requests were on w1 when it died: placed again (nothing streamed yet) or resumed exactly.
  CHECK(after.at("router.replaced") + after.at("router.resumed") >= 1);
  CHECK(after.at("router.worker_lost") == 0);
  std::cerr << "SIGKILL of w1 under load: " << done << " done, " << errors << " errors, "
            << after.at("router.replaced") << " placed again, " << after.at("router.resumed") << " resumed\n";

  // launch restarts w1; its workers register under new ids and get work.
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.workers") == 4; }, 90s));
  CHECK(c.pids().at("w1") != pids.at("w1"));
  std::set<int> fresh;
  for (int id : worker_ids(c.stats()))
    if (!old_ids.count(id))
      fresh.insert(id);
  REQUIRE(fresh.size() == 2);
  clients.clear();
  clients.push_back(std::make_unique<load_client>(c.endpoint(), 8, 32));
  REQUIRE(c.wait_stats([&](const auto& s) { return sum_finished(s, fresh) >= 2; }, 60s));
  REQUIRE(clients[0]->wait_all_ended(60s));
  auto [done2, errors2] = check_terminals(clients, {});
  CHECK(done2 > 0);
  CHECK(errors2 == 0);

  auto st = c.stop(60s);
  REQUIRE(st);
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  CHECK_THAT(c.log(), Catch::Matchers::Contains("[launch] stopped"));
}

TEST_CASE("three nodes as processes: a frozen worker node is dropped within the heartbeat timeout, the router node restarts",
          "[cluster][processes]") {
  launched_cluster c(three_nodes);
  const auto pids = c.pids();
  // [heartbeat] interval_ms = 500, timeout_ms = 3000 in three-nodes.toml.
  ::kill(pids.at("w2"), SIGSTOP);
  const auto t0 = std::chrono::steady_clock::now();
  const bool dropped = c.wait_stats([](const auto& s) { return s.at("router.workers") == 2; }, 10s);
  const auto noticed = std::chrono::steady_clock::now() - t0;
  ::kill(pids.at("w2"), SIGCONT);
  REQUIRE(dropped);
  // Timeout + one heartbeat tick + the router's bookkeeping and our 100 ms polling.
  CHECK(noticed <= 3000ms + 500ms + 1000ms);
  CHECK(noticed >= 2500ms);  // not dropped before the timeout: heartbeats kept it alive
  // After SIGCONT the node sees its connection closed, reconnects and registers again.
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.workers") == 4; }, 30s));

  // The router node dies: launch restarts it and both worker nodes register again.
  ::kill(pids.at("head"), SIGKILL);
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.workers") == 4; }, 60s));
  CHECK(c.pids().at("head") != pids.at("head"));
  std::vector<std::unique_ptr<load_client>> clients;
  clients.push_back(std::make_unique<load_client>(c.endpoint(), 4, 16));
  REQUIRE(c.wait_stats([](const auto& s) { return s.at("router.completed") >= 8; }, 60s));
  REQUIRE(clients[0]->wait_all_ended(60s));
  auto [done, errors] = check_terminals(clients, {});
  CHECK(errors == 0);
  CHECK(done >= 8);
  REQUIRE(c.stop(60s));
}
