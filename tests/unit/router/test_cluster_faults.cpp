// Faults in the in-process cluster: cancellation, deadlines, a worker killed mid-batch, a client
// that goes away.
#include "tests/unit/router/cluster_fixture.hpp"

#include <thread>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

namespace {

/// The worker's load snapshot.
worker_load load_of(client& cl, const worker_actor& w) {
  worker_load out;
  cl.self->request(w, std::chrono::seconds(30), caf::get_atom::value)
    .receive([&](worker_load& l) { out = std::move(l); },
             [&](const caf::error& e) { FAIL("worker load: " << caf::to_string(e)); });
  return out;
}

/// Polls `pred` (bounded): for state that a worker publishes after its next engine step.
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(10)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

} // namespace

TEST_CASE("cancellation ends a streaming request and reaches the worker", "[cluster]") {
  cluster c(router_config{}, {test::fake_worker()});
  client cl(c.sys, c.router);
  cl.submit(test::greedy(1, "Once upon a time", 240));
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(1) && !k.log.at(1).tokens.empty(); }));
  cl.cancel(1);
  REQUIRE(cl.run_until_terminals(1));
  cl.stats();
  cl.drain();
  auto& l = cl.log[1];
  CHECK(l.terminals == 1);
  REQUIRE(l.error);
  CHECK(l.error->code == serve_errc::cancelled);
  CHECK(l.tokens.size() < 240);

  // The worker's loop cancelled it and freed its blocks.
  auto w = c.workers[0];
  CHECK(eventually([&] { return load_of(cl, w).cancelled == 1; }));
  // A later request runs one step, after which the pool is whole again.
  cl.submit(test::greedy(2, "Hi", 3));
  REQUIRE(cl.run_until_terminals(2));
  CHECK(cl.log[2].done);
  CHECK(eventually([&] {
    auto ld = load_of(cl, w);
    return ld.running == 0 && ld.free_blocks == ld.total_blocks;
  }));
  // Cancelling what has ended is a no-op: no second terminal event.
  cl.cancel(1);
  cl.stats();
  cl.drain();
  CHECK(cl.log[1].terminals == 1);
}

TEST_CASE("a request past its deadline ends with timeout", "[cluster]") {
  cluster c(router_config{}, {test::fake_worker()});
  client cl(c.sys, c.router);
  auto r = test::greedy(1, "Once upon a time", 240);
  r.draft.timeout_ms = 1;
  cl.submit(r);
  auto ok = test::greedy(2, "Hi", 3);
  ok.draft.timeout_ms = 60000;
  cl.submit(ok);
  REQUIRE(cl.run_until_terminals(2));
  cl.stats();
  cl.drain();
  REQUIRE(cl.log[1].error);
  CHECK(cl.log[1].error->code == serve_errc::timeout);
  CHECK(cl.log[1].terminals == 1);
  CHECK(cl.log[2].done);
}

TEST_CASE("without resumptions, killing a worker mid-batch: unstarted requests move, started ones "
          "end worker_lost",
          "[cluster]") {
  router_config rc;
  rc.placement.policy = placement_policy::round_robin;
  rc.max_resumptions = 0;
  // Worker 1 runs 2 sequences at a time, so most of its share waits inside it, not started.
  cluster c(rc, {test::fake_worker(2), test::fake_worker(8)});
  const int max_tokens = 40;
  auto alone = test::alone_texts(c, max_tokens);

  client cl(c.sys, c.router);
  const std::size_t n = 24;
  // Round robin from worker 1: requests 0, 2, 4, ... go to worker 1.
  for (std::size_t i = 0; i < n; ++i)
    cl.submit(test::greedy(i, test::prompts()[i % test::prompts().size()], max_tokens));
  REQUIRE(cl.run_until([](const client& k) {
    for (auto& [id, l] : k.log)
      if (id % 2 == 0 && !l.tokens.empty())
        return true;
    return false;
  }));
  caf::anon_send_exit(c.workers[0], caf::exit_reason::kill);
  REQUIRE(cl.run_until_terminals(n));
  auto stats = cl.stats();
  cl.drain();

  std::size_t lost = 0, moved = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = cl.log[i];
    INFO("request " << i);
    CHECK(l.terminals == 1);
    if (l.error) {
      CHECK(i % 2 == 0);  // only worker 1's requests can be lost
      CHECK(l.error->code == serve_errc::worker_lost);
      CHECK_FALSE(l.tokens.empty());  // it had streamed: it cannot silently restart
      ++lost;
      continue;
    }
    REQUIRE(l.done);
    CHECK(l.done->text == alone[i % alone.size()]);
    CHECK(l.streamed == l.done->text);  // nothing from the dead worker leaked into the stream
    CHECK(l.indices_in_order);
    if (i % 2 == 0 && l.done->worker.value() == 2)
      ++moved;
  }
  CHECK(lost >= 1);
  CHECK(moved >= 1);
  CHECK(stats.replaced == moved);
  CHECK(stats.worker_lost == lost);
  CHECK(stats.workers == 1);
  CHECK(stats.inflight == 0);
  // The dead worker's loop ended every request it was given (the actor's end cancelled the
  // rest), so no sequence is left holding KV blocks: 4 alone-phase + 12 burst requests.
  CHECK(eventually([&] {
    auto l = c.loops[0]->load();
    return l.finished + l.cancelled + l.failed == alone.size() / 2 + n / 2;
  }));
}

TEST_CASE("a client that goes away has its requests cancelled", "[cluster]") {
  cluster c(router_config{}, {test::fake_worker()});
  {
    client gone(c.sys, c.router);
    gone.submit(test::greedy(1, "Once upon a time", 240));
    REQUIRE(gone.run_until([](const client& k) { return k.log.count(1) && !k.log.at(1).tokens.empty(); }));
  }  // the scoped_actor dies here
  client cl(c.sys, c.router);
  CHECK(eventually([&] {
    auto s = cl.stats();
    return s.inflight == 0 && s.cancelled == 1;
  }));
  auto w = c.workers[0];
  CHECK(eventually([&] { return load_of(cl, w).cancelled == 1; }));
}

TEST_CASE("a stopping router ends what is live with shutting_down", "[cluster]") {
  cluster c(router_config{}, {test::fake_worker()});
  client cl(c.sys, c.router);
  cl.submit(test::greedy(1, "Once upon a time", 240));
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(1) && !k.log.at(1).tokens.empty(); }));
  caf::anon_send_exit(c.router, caf::exit_reason::user_shutdown);
  REQUIRE(cl.run_until_terminals(1));
  REQUIRE(cl.log[1].error);
  CHECK(cl.log[1].error->code == serve_errc::shutting_down);
  // The worker saw its router go, cancelled its requests and quit.
  CHECK(eventually([&] { return c.loops[0]->load().cancelled == 1; }));
}

TEST_CASE("requests waiting in the queue when a worker registers are served by it", "[cluster]") {
  // The router places queued requests on a worker the moment it registers, before its answer to
  // the registration; the worker must not run them before it knows its id (their events would
  // carry id 0, which the router drops as a stale worker's: the clients would never hear back).
  // Found by lorafleet soak: a worker node restarted while 256 clients kept the queue full.
  router_config rc;
  rc.max_inflight_per_worker = 1;
  cluster c(rc, {test::fake_worker()});
  client cl(c.sys, c.router);
  for (std::uint64_t id = 1; id <= 4; ++id)
    cl.submit(test::greedy(id, "Once upon a time", 40));
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(1) && !k.log.at(1).tokens.empty(); }));
  CHECK(cl.stats().queued == 3);
  // A second worker registers: the router hands it the head of the queue at once.
  auto b = test::fake_worker()();
  c.loops.push_back(b.loop);
  c.owners.push_back(b.owner);
  actors::worker_options o;
  o.name = "w2";
  o.report_interval = std::chrono::milliseconds(20);
  c.workers.push_back(actors::spawn_worker(c.sys, std::move(b), c.router, o));
  REQUIRE(cl.run_until_terminals(4, std::chrono::seconds(30)));
  for (std::uint64_t id = 1; id <= 4; ++id) {
    INFO("request " << id);
    CHECK(cl.log[id].terminals == 1);
    REQUIRE(cl.log[id].done);
    CHECK(cl.log[id].tokens.size() == 40);
  }
  const auto s = cl.stats();
  CHECK(s.inflight == 0);
  CHECK(s.completed == 4);
}
