// The router link in one process: two router replicas sharing two workers (each serving loop has
// a worker actor per replica), the link in front of both. A replica killed mid-stream costs its
// streams a pause: they continue on the other replica with the undisturbed text, one terminal
// each. Also: the router's checks on a continuation, and no replica up.
#include "tests/unit/router/cluster_fixture.hpp"

#include "cluster/router_link.hpp"

using namespace lf;
using namespace lf::actors;
using namespace std::chrono_literals;

namespace {

/// Two routers and two fake workers registered with both.
struct replicas {
  test::test_config cfg;
  caf::actor_system sys{cfg};
  std::vector<router_actor> routers;
  std::vector<std::shared_ptr<void>> owners;
  std::vector<worker::serving_loop*> loops;
  std::vector<worker_actor> workers;
  std::vector<router_actor> links;  ///< stopped first: a link lives until told to go

  replicas() {
    for (int r = 0; r < 2; ++r)
      routers.push_back(router::spawn_router(sys, router::router_config{}));
    for (int i = 0; i < 2; ++i) {
      auto b = test::fake_worker(8, std::chrono::microseconds(2000))();
      owners.push_back(b.owner);
      loops.push_back(b.loop);
      for (auto& r : routers) {
        worker_options o;
        o.name = "w" + std::to_string(i + 1);
        o.report_interval = 20ms;
        workers.push_back(spawn_worker(sys, b, r, o));
      }
    }
    caf::scoped_actor self{sys};
    for (auto& r : routers) {
      bool ready = false;
      self->request(r, std::chrono::seconds(30), caf::wait_for_atom::value, std::uint32_t{2})
        .receive([&](const router_stats& s) { ready = s.workers == 2; }, [&](const caf::error&) {});
      REQUIRE(ready);
    }
  }

  ~replicas() {
    for (auto& l : links)
      caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
    for (auto& w : workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
    for (auto& r : routers)
      caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
    for (auto* l : loops)
      l->stop(false);
  }

  router_actor link() {
    cluster::router_link_options o;
    for (std::size_t r = 0; r < routers.size(); ++r)
      o.routers.push_back({"r" + std::to_string(r), "", 0, routers[r]});
    o.stats_interval = 50ms;
    links.push_back(cluster::spawn_router_link(sys, o));
    return links.back();
  }
};

/// Greedy and seeded requests, 60-90 tokens, ids from `base`.
std::vector<generate_request> requests(std::uint64_t base) {
  std::vector<generate_request> out;
  for (std::uint64_t i = 0; i < 12; ++i) {
    auto r = test::greedy(base + i, test::prompts()[i % test::prompts().size()], 60 + static_cast<int>(i % 4) * 10);
    if (i % 2) {
      r.draft.params.temperature = 1.0f;
      r.draft.params.seed = 500 + i;
    }
    out.push_back(r);
  }
  return out;
}

} // namespace

TEST_CASE("a router replica killed mid-stream: its streams continue on the other, texts undisturbed", "[link]") {
  replicas c;
  auto link = c.link();
  test::client calm(c.sys, link);
  for (auto& r : requests(0))
    calm.submit(r);
  REQUIRE(calm.run_until_terminals(12));
  // Through the link, the stats count over both replicas (each served some of the 12).
  CHECK(calm.stats().completed == 12);
  CHECK(calm.stats().workers == 2);

  test::client cl(c.sys, link);
  for (auto& r : requests(100))
    cl.submit(r);
  // Every stream has begun: about half of them are on the replica that dies.
  REQUIRE(cl.run_until([](const test::client& x) {
    std::size_t started = 0;
    for (auto& [id, l] : x.log)
      started += l.tokens.size() >= 3 ? 1 : 0;
    return started == 12;
  }));
  caf::anon_send_exit(c.routers[0], caf::exit_reason::kill);
  REQUIRE(cl.run_until_terminals(12));
  cl.drain();
  std::uint32_t continued = 0;
  for (std::uint64_t i = 0; i < 12; ++i) {
    INFO("request " << i);
    auto& l = cl.log[100 + i];
    CHECK(l.terminals == 1);
    CHECK(l.after_terminal == 0);
    REQUIRE(l.done);
    CHECK(l.indices_in_order);
    CHECK(l.streamed == l.done->text);
    CHECK(l.tokens == l.done->tokens);
    CHECK(l.done->text == calm.log[i].done->text);
    continued += l.done->resumed;
  }
  CHECK(continued >= 1);
  // The surviving replica served the continuations; the link still takes new work.
  router_stats s;
  caf::scoped_actor self{c.sys};
  self->request(c.routers[1], 5s, caf::get_atom::value).receive([&](router_stats& x) { s = x; }, [](caf::error&) {});
  CHECK(s.continued == continued);
  test::client after(c.sys, link);
  after.submit(requests(200)[0]);
  REQUIRE(after.run_until_terminals(1));
  CHECK(after.log[200].done);
}

TEST_CASE("with no replica up, a new request gets no_workers and a retry time", "[link]") {
  replicas c;
  auto link = c.link();
  for (auto& r : c.routers)
    caf::anon_send_exit(r, caf::exit_reason::kill);
  test::client cl(c.sys, link);
  // The link learns of the losses from its monitors; its stats reply errs once both are gone.
  caf::scoped_actor self{c.sys};
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i)
    self->request(link, 5s, caf::get_atom::value)
      .receive([](const router_stats&) {}, [&](const caf::error& e) { gone = serve_code_of(e) == serve_errc::no_workers; });
  REQUIRE(gone);
  cl.submit(requests(0)[0]);
  REQUIRE(cl.run_until_terminals(1));
  REQUIRE(cl.log[0].error);
  CHECK(cl.log[0].error->code == serve_errc::no_workers);
  CHECK(cl.log[0].error->retry_after_ms > 0);
}

TEST_CASE("the router refuses a continuation without a seed or longer than max_tokens", "[link]") {
  replicas c;
  test::client cl(c.sys, c.routers[0]);
  // The router seeds an unseeded request itself, so only the seed the continued tokens were
  // drawn with makes them meaningful: a sampled continuation must bring it.
  auto unseeded = requests(0)[1];
  unseeded.id = sink_request_id{0};
  unseeded.continued = {1, 2};
  unseeded.draft.params.seed.reset();
  cl.submit(unseeded);
  auto too_long = requests(0)[1];
  too_long.id = sink_request_id{1};
  too_long.draft.params.seed = 1;
  too_long.continued.assign(static_cast<std::size_t>(too_long.draft.params.max_tokens) + 1, 5);
  auto out_of_vocab = requests(0)[3];
  out_of_vocab.id = sink_request_id{2};
  out_of_vocab.draft.params.seed = 1;
  out_of_vocab.continued = {1, 60000};
  cl.submit(too_long);
  cl.submit(out_of_vocab);
  REQUIRE(cl.run_until_terminals(3));
  for (std::uint64_t i : {0, 1, 2}) {
    INFO("request " << i);
    REQUIRE(cl.log[i].error);
    CHECK(cl.log[i].error->code == serve_errc::invalid_request);
  }
  // A good continuation streams on from its first new index.
  auto good = requests(0)[5];
  good.id = sink_request_id{3};
  good.continued = {11, 12, 13};
  cl.submit(good);
  REQUIRE(cl.run_until_terminals(4));
  REQUIRE(cl.log[3].done);
  CHECK(cl.log[3].done->tokens.size() == static_cast<std::size_t>(good.draft.params.max_tokens));
  CHECK(std::vector<std::int32_t>(cl.log[3].done->tokens.begin(), cl.log[3].done->tokens.begin() + 3)
        == std::vector<std::int32_t>{11, 12, 13});
}
