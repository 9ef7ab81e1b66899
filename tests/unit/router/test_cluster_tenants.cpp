// Tenants and deadlines at the router, with workers over the fake engine: per-tenant limits,
// VTC against FCFS in the admission queue, deadline-aware admission.
#include "tests/unit/router/cluster_fixture.hpp"

#include <algorithm>

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using Catch::Matchers::Contains;
using lf::test::client;
using lf::test::cluster;

namespace {

actors::generate_request for_tenant(std::uint64_t id, const std::string& tenant, int max_tokens) {
  auto r = test::greedy(id, test::prompts()[id % test::prompts().size()], max_tokens);
  r.draft.tenant = tenant;
  return r;
}

/// One worker, one request in flight at a time: heavy queues 12 requests, then light 3.
/// Returns the rank (0-based order of terminal events) of each of light's requests.
std::vector<int> light_ranks(scheduling_policy policy) {
  router_config rc;
  rc.max_inflight_per_worker = 1;
  rc.tenants.scheduling = policy;
  cluster c(rc, {test::fake_worker(8, std::chrono::microseconds(500))});
  client cl(c.sys, c.router);
  for (std::uint64_t i = 0; i < 12; ++i)
    cl.submit(for_tenant(i, "heavy", 8));
  for (std::uint64_t i = 100; i < 103; ++i)
    cl.submit(for_tenant(i, "light", 8));
  REQUIRE(cl.run_until_terminals(15));
  std::vector<int> ranks;
  for (std::uint64_t i = 100; i < 103; ++i) {
    REQUIRE(cl.log[i].done);
    ranks.push_back(cl.log[i].done_rank);
  }
  return ranks;
}

} // namespace

TEST_CASE("tenants: max_queued refuses naming the tenant, max_inflight holds only that tenant back", "[cluster][tenants]") {
  router_config rc;
  rc.max_inflight_per_worker = 8;
  tenant_limits capped;
  capped.max_inflight = 1;
  capped.max_queued = 2;
  rc.tenants.tenants["capped"] = capped;
  cluster c(rc, {test::fake_worker()});
  client cl(c.sys, c.router);
  // capped: 1 placed, 2 queued, the rest refused. Long generations: nothing ends meanwhile.
  for (std::uint64_t i = 0; i < 5; ++i)
    cl.submit(for_tenant(i, "capped", 200));
  REQUIRE(cl.run_until_terminals(2));
  for (std::uint64_t i = 3; i < 5; ++i) {
    REQUIRE(cl.log[i].error);
    CHECK(cl.log[i].error->code == serve_errc::overloaded);
    CHECK_THAT(cl.log[i].error->message, Contains("tenant \"capped\" has 2 requests queued"));
    CHECK_THAT(cl.log[i].error->message, Contains("max_queued 2"));
  }
  // Others go straight past capped's waiting requests to the free slots.
  for (std::uint64_t i = 10; i < 13; ++i)
    cl.submit(for_tenant(i, "other", 200));
  auto s = cl.stats();
  CHECK(s.inflight == 4);
  CHECK(s.queued == 2);
  for (std::uint64_t i = 10; i < 13; ++i)
    cl.cancel(i);
  cl.cancel(0);
  // capped's queued requests run once its one in flight has ended.
  REQUIRE(cl.run_until_terminals(8));
  for (std::uint64_t i = 1; i < 3; ++i) {
    REQUIRE(cl.log[i].done);
    CHECK(cl.log[i].done->tokens.size() == 200);
  }
}

TEST_CASE("tenants: under vtc a light tenant is served between a heavy tenant's queued requests, under fcfs after them", "[cluster][tenants]") {
  // Timeline with one request in flight: heavy 0 is placed at once, heavy 1..11 and light
  // 100..102 queue. vtc: each time heavy's counter passes light's, light goes next.
  const auto vtc = light_ranks(scheduling_policy::vtc);
  CHECK(*std::max_element(vtc.begin(), vtc.end()) <= 7);
  const auto fcfs = light_ranks(scheduling_policy::fcfs);
  CHECK(*std::min_element(fcfs.begin(), fcfs.end()) == 12);
}

TEST_CASE("deadlines: a request predicted to miss its deadline or first-token target is refused at once", "[cluster][deadline]") {
  router_config rc;
  rc.max_inflight_per_worker = 2;
  cluster c(rc, {test::fake_worker(2, std::chrono::microseconds(2000))});
  client cl(c.sys, c.router);
  // A backlog: 2 in flight, 24 queued; each request 100 tokens at about 2 ms a step.
  for (std::uint64_t i = 0; i < 26; ++i)
    cl.submit(for_tenant(i, "", 100));
  // The estimate needs measurements: finished requests and saturated windows.
  REQUIRE(cl.run_until_terminals(6));
  auto late = for_tenant(500, "", 100);
  late.draft.timeout_ms = 50;
  cl.submit(late);
  auto eager = for_tenant(501, "", 100);
  eager.draft.ttft_ms = 20;
  cl.submit(eager);
  auto patient = for_tenant(502, "", 4);
  patient.draft.timeout_ms = 600'000;
  cl.submit(patient);
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(500) && k.log.count(501); }));
  REQUIRE(cl.log[500].error);
  CHECK(cl.log[500].error->code == serve_errc::deadline_unmeetable);
  CHECK_THAT(cl.log[500].error->message, Contains("predicted to finish in"));
  CHECK_THAT(cl.log[500].error->message, Contains("after its deadline_ms of 50 ms"));
  REQUIRE(cl.log[501].error);
  CHECK(cl.log[501].error->code == serve_errc::deadline_unmeetable);
  CHECK_THAT(cl.log[501].error->message, Contains("ttft_ms target of 20 ms"));
  CHECK(cl.log[500].tokens.empty());
  for (std::uint64_t i = 0; i < 26; ++i)
    cl.cancel(i);
  REQUIRE(cl.run_until_terminals(26 + 3));
  REQUIRE(cl.log[502].done);  // a meetable deadline is admitted
}

TEST_CASE("deadlines: without deadline admission the same request queues and times out", "[cluster][deadline]") {
  router_config rc;
  rc.max_inflight_per_worker = 2;
  rc.deadline_admission = false;
  cluster c(rc, {test::fake_worker(2, std::chrono::microseconds(2000))});
  client cl(c.sys, c.router);
  for (std::uint64_t i = 0; i < 26; ++i)
    cl.submit(for_tenant(i, "", 100));
  REQUIRE(cl.run_until_terminals(6));
  auto late = for_tenant(500, "", 100);
  late.draft.timeout_ms = 50;
  cl.submit(late);
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(500) != 0; }));
  REQUIRE(cl.log[500].error);
  CHECK(cl.log[500].error->code == serve_errc::timeout);
  for (std::uint64_t i = 0; i < 26; ++i)
    cl.cancel(i);
  REQUIRE(cl.run_until_terminals(27));
}

TEST_CASE("deadlines: a queued request whose turn comes too late is dropped before it starts, not timed out after", "[cluster][deadline]") {
  router_config rc;
  rc.max_inflight_per_worker = 2;
  cluster c(rc, {test::fake_worker(2, std::chrono::microseconds(2000))});
  client cl(c.sys, c.router);
  // Sent before anything is measured, so admission takes them all; each takes about 210 ms and
  // two run at a time, so the later ones cannot finish within the second.
  const std::uint64_t n = 26;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto r = for_tenant(i, "", 100);
    r.draft.timeout_ms = 1000;
    cl.submit(r);
  }
  REQUIRE(cl.run_until_terminals(n));
  std::size_t done = 0, dropped = 0, timed_out = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto& l = cl.log[i];
    CHECK(l.terminals == 1);
    if (l.done) {
      ++done;
    } else if (l.error->code == serve_errc::deadline_unmeetable) {
      ++dropped;
      CHECK_THAT(l.error->message, Contains("dropped before it starts"));
      CHECK(l.tokens.empty());  // it used no capacity
    } else {
      CHECK(l.error->code == serve_errc::timeout);
      ++timed_out;
    }
  }
  CHECK(done >= 2);
  CHECK(dropped >= 1);
  CHECK(done + dropped + timed_out == n);
}

TEST_CASE("tenants: a request moved off a killed worker does not keep its tenant's in-flight slot", "[cluster][tenants]") {
  router_config rc;
  tenant_limits one;
  one.max_inflight = 1;
  rc.tenants.tenants["t"] = one;
  cluster c(rc, {test::fake_worker(), test::fake_worker()});
  client cl(c.sys, c.router);
  cl.submit(for_tenant(1, "t", 200));
  cl.submit(for_tenant(2, "t", 4));  // waits: t has one in flight
  // Request 1's first token: it is running on worker 1 (the first of two idle workers).
  REQUIRE(cl.run_until([](const client& k) { return k.log.count(1) && !k.log.at(1).tokens.empty(); }));
  caf::anon_send_exit(c.workers[0], caf::exit_reason::kill);
  // 1 resumes on worker 2; when it ends, t's one slot is free and 2 runs (it does not wait for
  // a slot its tenant lost with the dead worker).
  REQUIRE(cl.run_until_terminals(2, std::chrono::seconds(30)));
  REQUIRE(cl.log[1].done);
  CHECK(cl.log[1].done->resumed == 1);
  CHECK(cl.log[2].done);
  CHECK(cl.log[1].done_rank == 0);
  CHECK(cl.stats().inflight == 0);
}
