// Elastic membership at the router: a join token refuses unauthenticated workers, and a worker
// that registers under a name already held replaces the old entry (its requests move at once).
#include "tests/unit/router/cluster_fixture.hpp"

#include <atomic>
#include <thread>

#include <caf/system_messages.hpp>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

namespace {

/// Spawns one more fake worker named `name` into `c`, registering with `token`.
worker_actor add_named_worker(cluster& c, const std::string& name, const std::string& token,
                        std::shared_ptr<std::atomic<int>> registered = nullptr) {
  auto b = test::fake_worker(8, std::chrono::microseconds(3000))();
  c.loops.push_back(b.loop);
  c.owners.push_back(b.owner);
  worker_options o;
  o.name = name;
  o.report_interval = std::chrono::milliseconds(20);
  o.join_token = token;
  o.registered = std::move(registered);
  auto w = spawn_worker(c.sys, std::move(b), c.router, o);
  c.workers.push_back(w);
  return w;
}

/// Polls `pred` (bounded): for counters that an actor updates on its own thread.
template <class Pred>
bool until_true(Pred pred) {
  for (int i = 0; i < 2000 && !pred(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return pred();
}

/// Waits (bounded) until the router counts `n` workers.
bool workers_reach(client& cl, std::uint32_t n) {
  for (int i = 0; i < 2000; ++i) {
    if (cl.stats().workers == n)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

} // namespace

TEST_CASE("join token: a worker without it is refused and ends, one with it registers", "[cluster][join]") {
  router_config rc;
  rc.join_token = "0123456789abcdef-cluster-secret";
  cluster c(rc, {});
  client cl(c.sys, c.router);
  auto registered = std::make_shared<std::atomic<int>>(0);
  for (const std::string bad : {"", "0123456789abcdef-cluster-secreT", "wrong"}) {
    INFO("token '" << bad << "'");
    auto w = add_named_worker(c, "intruder", bad, registered);
    cl.self->monitor(w);
    std::optional<caf::error> reason;
    cl.self->receive([&](caf::down_msg& dm) { reason = dm.reason; },
                     caf::after(std::chrono::seconds(10)) >> [] {});
    REQUIRE(reason);  // the refused worker quits with the router's answer
    CHECK(c.sys.render(*reason).find("unauthenticated") != std::string::npos);
    CHECK(cl.stats().workers == 0);
    CHECK(registered->load() == 0);
  }
  auto w = add_named_worker(c, "member", rc.join_token, registered);
  REQUIRE(workers_reach(cl, 1));
  CHECK(cl.stats().loads.size() <= 1);
  REQUIRE(until_true([&] { return registered->load() == 1; }));
  // It serves.
  cl.submit(test::greedy(1, "Once upon a time", 8));
  REQUIRE(cl.run_until_terminals(1, std::chrono::seconds(30)));
  CHECK(cl.log[1].done);
  // Its end takes it off the count the node's /ready reads.
  cl.self->monitor(w);
  caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  cl.self->receive([](caf::down_msg&) {}, caf::after(std::chrono::seconds(10)) >> [] {});
  REQUIRE(until_true([&] { return registered->load() == 0; }));
  CHECK(workers_reach(cl, 0));
}

TEST_CASE("a worker registering under a name already held replaces the old entry, its requests continue exactly",
          "[cluster][join]") {
  // Undisturbed text first, on a cluster of its own.
  std::string alone;
  {
    cluster ref(router_config{}, {test::fake_worker(8, std::chrono::microseconds(3000))});
    client rc(ref.sys, ref.router);
    rc.submit(test::greedy(1, "The replaced pod", 120));
    REQUIRE(rc.run_until_terminals(1));
    alone = rc.log[1].streamed;
  }
  cluster c(router_config{}, {});
  client cl(c.sys, c.router);
  auto old = add_named_worker(c, "pod-a/1", "");
  REQUIRE(workers_reach(cl, 1));
  cl.submit(test::greedy(1, "The replaced pod", 120));
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(1) && k.log.at(1).tokens.size() >= 10; }));
  // The pod comes back under the same name while the old one still looks alive to the router.
  cl.self->monitor(old);
  add_named_worker(c, "pod-a/1", "");
  REQUIRE(cl.run_until_terminals(1, std::chrono::seconds(60)));
  bool old_ended = false;
  cl.self->receive([&](caf::down_msg&) { old_ended = true; }, caf::after(std::chrono::seconds(10)) >> [] {});
  CHECK(old_ended);  // told to stop: a late old worker sends nothing more
  const auto& r = cl.log[1];
  CHECK(r.terminals == 1);
  CHECK(r.after_terminal == 0);
  CHECK(r.indices_in_order);
  REQUIRE(r.done);
  CHECK(r.streamed == alone);
  const auto s = cl.stats();
  CHECK(s.workers == 1);  // one entry for the name, not two
  CHECK(s.resumed == 1);
  cl.drain();
  CHECK(cl.log[1].after_terminal == 0);
}
