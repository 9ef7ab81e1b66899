// A worker in a second actor system registers with a router published over CAF's middleman on
// loopback: how a worker node joins the router node.
#include "tests/unit/router/remote_fixture.hpp"

#include <mutex>
#include <thread>

#include "tests/support/temp_dir.hpp"

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;

using lf::test::two_nodes;

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

TEST_CASE("adapter registry events, checks and prefetches cross nodes", "[cluster][remote][registry]") {
  test::temp_dir roots;
  router_config rc;
  rc.adapter_roots = {roots.path().string()};
  auto b = test::fake_worker()();
  auto seen = std::make_shared<std::vector<cache::adapter_event>>();
  auto prefetched = std::make_shared<std::vector<std::string>>();
  auto m = std::make_shared<std::mutex>();
  b.check_adapter = [](const std::string& path, std::uint32_t max_rank) {
    if (path.find("bad") != std::string::npos)
      throw std::runtime_error(path + ": rank 128 is above the cluster's limit of " + std::to_string(max_rank));
    cache::adapter_source s;
    s.path = path;
    s.hash = 0x1234;
    s.rank = 8;
    s.targets = {"attn.c_attn"};
    s.bytes = 4096;
    return s;
  };
  b.apply_adapter_events = [seen, m](const std::vector<cache::adapter_event>& ev, bool) {
    std::lock_guard<std::mutex> g(*m);
    seen->insert(seen->end(), ev.begin(), ev.end());
  };
  b.adapter_slots_free = [] { return 4u; };
  b.prefetch_adapter = [prefetched, m](const std::string& key) {
    std::lock_guard<std::mutex> g(*m);
    prefetched->push_back(key);
    return true;
  };
  two_nodes n(rc, std::move(b));
  caf::scoped_actor self{n.router_sys};
  auto ask = [&](adapter_command cmd) {
    adapter_reply out;
    self->request(n.router, std::chrono::seconds(30), std::move(cmd))
      .receive([&](adapter_reply& r) { out = std::move(r); },
               [&](const caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
  };
  // Its first load report (free adapter slots: where prefetches may go) has reached the router.
  auto reported = [&] {
    router_stats st;
    self->request(n.router, std::chrono::seconds(30), caf::get_atom::value)
      .receive([&](router_stats& r) { st = std::move(r); }, [&](const caf::error& e) { FAIL(caf::to_string(e)); });
    return !st.loads.empty() && st.loads[0].adapter_slots_free == 4;
  };
  for (int i = 0; i < 200 && !reported(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(reported());
  auto ok = ask({"add", "tone", roots / "tone"});
  REQUIRE(ok.error == serve_errc::none);
  CHECK(ok.adapters.at(0).source.hash == 0x1234);  // found by the remote worker's check
  CHECK(ok.adapters.at(0).source.targets == std::vector<std::string>{"attn.c_attn"});
  auto bad = ask({"add", "worse", roots / "bad"});
  CHECK(bad.error == serve_errc::invalid_request);
  CHECK_THAT(bad.message, Catch::Contains("rank 128 is above the cluster's limit of 64"));
  bool arrived = false;
  for (int i = 0; i < 200 && !arrived; ++i) {
    {
      std::lock_guard<std::mutex> g(*m);
      arrived = !seen->empty() && !prefetched->empty();
    }
    if (!arrived)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(arrived);
  std::lock_guard<std::mutex> g(*m);
  REQUIRE(seen->size() == 1);
  CHECK(seen->at(0).op == cache::adapter_op::add);
  CHECK(seen->at(0).name == "tone");
  CHECK(seen->at(0).version == 1);
  CHECK(seen->at(0).source.hash == 0x1234);
  CHECK(*prefetched == std::vector<std::string>{"tone@1"});
}
