// Exact resumption through the router: a worker killed or drained mid-stream, its requests
// continue on another worker and every client's stream is the undisturbed one (same tokens, same
// indices, one terminal event); requests without a seed get one at admission, reported in done.
#include "tests/unit/router/cluster_fixture.hpp"

#include <thread>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

namespace {

/// Sampled (temperature 1) rather than greedy; seeded unless `seed` is empty. The fake engine's
/// rows give the favourite about a third of the mass, so draws really vary.
generate_request sampled(std::uint64_t id, const std::string& prompt, int max_tokens,
                         std::optional<std::uint64_t> seed) {
  auto r = test::greedy(id, prompt, max_tokens);
  r.draft.params.temperature = 1.0f;
  r.draft.params.seed = seed;
  return r;
}

/// The requests of a run, ids from `base`: greedy, seeded, and (with `unseeded`) unseeded.
std::vector<generate_request> batch(std::uint64_t base, bool unseeded) {
  std::vector<generate_request> out;
  for (std::uint64_t i = 0; i < 16; ++i) {
    const auto& p = test::prompts()[i % test::prompts().size()];
    const int n = 60 + static_cast<int>(i % 4) * 10;
    if (i % 4 == 0)
      out.push_back(test::greedy(base + i, p, n));
    else if (i % 4 == 3 && unseeded)
      out.push_back(sampled(base + i, p, n, std::nullopt));
    else
      out.push_back(sampled(base + i, p, n, 7000 + i));
  }
  return out;
}

/// Every request of `cl` ended once with done, streamed exactly its text with indices in order.
void check_clean_streams(client& cl, std::size_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    INFO("request " << i);
    auto& l = cl.log[i];
    CHECK(l.terminals == 1);
    REQUIRE(l.done);
    CHECK(l.streamed == l.done->text);
    CHECK(l.tokens == l.done->tokens);
    CHECK(l.indices_in_order);
  }
}

/// Submits `reqs` again with the seeds their runs reported and checks the same texts come back.
void check_reproduced(cluster& c, client& first, const std::vector<generate_request>& reqs) {
  client cl(c.sys, c.router);
  for (auto r : reqs) {
    r.draft.params.seed = first.log[r.id.value()].done->seed;
    cl.submit(r);
  }
  REQUIRE(cl.run_until_terminals(reqs.size()));
  for (auto& r : reqs) {
    INFO("request " << r.id.value() << " with seed " << first.log[r.id.value()].done->seed);
    REQUIRE(cl.log[r.id.value()].done);
    CHECK(cl.log[r.id.value()].done->text == first.log[r.id.value()].done->text);
  }
}

/// Until worker 1's requests (even ids under round robin) have streamed a few tokens each.
bool worker_one_streaming(const client& k) {
  int streaming = 0;
  for (auto& [id, l] : k.log)
    if (id % 2 == 0 && l.tokens.size() >= 3)
      ++streaming;
  return streaming >= 4;
}

/// Two workers under round robin, the undisturbed run of batch(1000) done (`ref`), and
/// batch(0, unseeded) streaming on both (`cl`), worker 1's share a few tokens in.
struct mid_stream {
  /// `kv`: the workers' engines keep a (fake) K/V store, so a drain ships it.
  explicit mid_stream(bool unseeded, bool kv = false, bool ship = true)
    : c{round_robin(ship), {test::fake_worker(8, std::chrono::microseconds(2000), kv),
                            test::fake_worker(8, std::chrono::microseconds(2000), kv)}},
      reqs(batch(0, unseeded)) {
    for (auto& r : batch(1000, false))
      ref.submit(r);
    REQUIRE(ref.run_until_terminals(16));
    for (auto& r : reqs)
      cl.submit(r);
    REQUIRE(cl.run_until(worker_one_streaming));
  }
  static router_config round_robin(bool ship) {
    router_config rc;
    rc.placement.policy = placement_policy::round_robin;
    rc.ship_kv = ship;
    return rc;
  }
  cluster c;
  client ref{c.sys, c.router};
  client cl{c.sys, c.router};
  std::vector<generate_request> reqs;
};

} // namespace

TEST_CASE("a worker killed mid-stream: its requests resume exactly on another worker", "[cluster][resume]") {
  mid_stream m(true);
  auto& c = m.c;
  auto& ref = m.ref;
  auto& cl = m.cl;
  const auto& reqs = m.reqs;
  caf::anon_send_exit(c.workers[0], caf::exit_reason::kill);
  REQUIRE(cl.run_until_terminals(reqs.size()));
  auto stats = cl.stats();
  cl.drain();

  check_clean_streams(cl, reqs.size());
  std::uint32_t resumed = 0;
  std::vector<generate_request> unseeded;
  for (std::uint64_t i = 0; i < reqs.size(); ++i) {
    INFO("request " << i);
    auto& d = *cl.log[i].done;
    resumed += d.resumed;
    if (i % 2 == 0)
      CHECK(d.worker.value() == 2);  // worker 1 is gone: everything of its share finished on 2
    if (reqs[i].draft.params.seed || reqs[i].draft.params.temperature == 0) {
      CHECK(d.text == ref.log[1000 + i].done->text);
      CHECK(d.tokens == ref.log[1000 + i].done->tokens);
    } else {
      unseeded.push_back(reqs[i]);
    }
  }
  CHECK(resumed >= 4);
  CHECK(stats.resumed == resumed);
  CHECK(stats.worker_lost == 0);
  CHECK(stats.inflight == 0);
  // Unseeded requests got a seed at admission: asking again with it gives the same text, so
  // their resumption was exact too.
  check_reproduced(c, cl, unseeded);
}

namespace {

/// Drains worker 1 of a mid_stream run and checks every request continued exactly on worker 2.
/// Returns the router's stats after the run and worker 2's load.
std::pair<router_stats, worker::load_report> check_drain(bool kv, bool ship) {
  mid_stream m(false, kv, ship);
  auto& c = m.c;
  auto& ref = m.ref;
  auto& cl = m.cl;
  const auto& reqs = m.reqs;
  std::uint32_t drained = 0, moved = 0;
  cl.self->request(c.router, std::chrono::seconds(10), drain_atom::value, std::string("w1"))
    .receive([&](std::uint32_t w, std::uint32_t m) { drained = w, moved = m; },
             [&](const caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(drained == 1);
  CHECK(moved >= 4);
  REQUIRE(cl.run_until_terminals(reqs.size()));
  check_clean_streams(cl, reqs.size());
  for (std::uint64_t i = 0; i < reqs.size(); ++i) {
    INFO("request " << i);
    CHECK(cl.log[i].done->text == ref.log[1000 + i].done->text);
  }
  // New requests go to worker 2 only; worker 1 is idle with every block free.
  for (std::uint64_t i = 100; i < 106; ++i)
    cl.submit(test::greedy(i, "Hi", 4));
  REQUIRE(cl.run_until_terminals(reqs.size() + 6));
  for (std::uint64_t i = 100; i < 106; ++i)
    CHECK(cl.log[i].done->worker.value() == 2);
  auto stats = cl.stats();
  CHECK(stats.draining == 1);
  CHECK(stats.workers == 2);
  CHECK(stats.resumed >= moved - 1);  // a moved request that had not streamed is "replaced"
  CHECK(stats.worker_lost == 0);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto idle = [&] {
    auto l = c.loops[0]->load();
    return l.running == 0 && l.waiting == 0 && l.free_blocks == l.total_blocks;
  };
  while (!idle() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(idle());
  // A name that matches nothing drains nothing; draining again moves nothing.
  cl.self->request(c.router, std::chrono::seconds(10), drain_atom::value, std::string("w"))
    .receive([&](std::uint32_t w, std::uint32_t m) { CHECK((w == 0 && m == 0)); },
             [&](const caf::error& e) { FAIL(caf::to_string(e)); });
  const auto l = c.loops[1]->load();
  CHECK(l.kv_refused == 0);
  return {stats, l};
}

} // namespace

TEST_CASE("draining a worker moves its running requests and places nothing there again",
          "[cluster][resume]") {
  auto [s, w2] = check_drain(false, true);  // the engine cannot move K/V: moved requests are recomputed
  CHECK(s.kv_shipped == 0);
  CHECK(w2.kv_imported_tokens == 0);
}

TEST_CASE("draining a worker moves its requests with their K/V: the next worker computes only the rest",
          "[cluster][resume][kv_ship]") {
  auto [s, w2] = check_drain(true, true);
  CHECK(s.kv_shipped >= 4);
  CHECK(s.kv_shipped_tokens > 0);
  // Worker 2 wrote what its prefix cache did not hold already (the reference run's prompts).
  CHECK(w2.kv_imported_tokens > 0);
  CHECK(w2.kv_imported_tokens <= s.kv_shipped_tokens);
}

TEST_CASE("with ship_kv off a drain recomputes as before", "[cluster][resume][kv_ship]") {
  auto [s, w2] = check_drain(true, false);
  CHECK(s.kv_shipped == 0);
  CHECK(w2.kv_imported_tokens == 0);
}

TEST_CASE("a request without a seed is given one at admission and done reports it", "[cluster][resume]") {
  cluster c(router_config{}, {test::fake_worker()});
  client cl(c.sys, c.router);
  cl.submit(sampled(1, "Once upon a time", 8, std::nullopt));
  cl.submit(sampled(2, "Once upon a time", 8, std::nullopt));
  cl.submit(sampled(3, "Once upon a time", 8, 12345));
  REQUIRE(cl.run_until_terminals(3));
  REQUIRE(cl.log[1].done);
  REQUIRE(cl.log[2].done);
  REQUIRE(cl.log[3].done);
  CHECK(cl.log[1].done->seed != cl.log[2].done->seed);
  CHECK(cl.log[3].done->seed == 12345);
  CHECK(cl.log[1].done->resumed == 0);
}
