// The router's tenant books (router/tenant_ledger.hpp) without an actor system: live and
// in-flight counts, the unstarted work, the VTC charges, and deadline admission on a meter
// warmed on a simulated clock.
#include <catch2/catch.hpp>

#include "router/tenant_ledger.hpp"

using namespace lf::router;
using namespace std::chrono_literals;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_tenant_ledger {

namespace {

const tenant_ledger::clock::time_point t0{};

tenant_ticket ticket(std::string tenant, std::uint32_t prompt, std::uint32_t max_tokens) {
  tenant_ticket t;
  t.tenant = std::move(tenant);
  t.prompt_tokens = prompt;
  t.max_tokens = max_tokens;
  return t;
}

/// Teaches `l` 1000 tokens/s while saturated and four requests of 10 ms per output token.
void warm(tenant_ledger& l) {
  l.load(t0, true);
  for (int k = 1; k <= 20; ++k) {  // two 250 ms windows of 25 ms ticks
    auto tk = ticket("", 0, 0);
    tk.started = true;
    lf::vtc scratch;
    for (int i = 0; i < 25; ++i)
      l.token(tk, scratch, t0 + k * 25ms);
  }
  for (int i = 0; i < 4; ++i)
    l.finished({10, 0, 8, 8, 5.0, 25.0, 95.0}, false);
}

} // namespace

TEST_CASE("tenant ledger: books follow a request's life", "[tenant_ledger]") {
  tenancy_options o;
  o.tenants["acme"].max_inflight = 1;
  tenant_ledger l(o);
  lf::vtc counters;
  auto a = ticket("acme", 10, 20);
  l.accepted(a);
  CHECK(a.expect == 30);  // no rates yet: the whole max_tokens is expected
  REQUIRE(l.book("acme") != nullptr);
  CHECK(l.book("acme")->live == 1);
  CHECK(l.unstarted() == 30);
  CHECK(l.has_room("acme"));

  l.placed(a, counters);
  CHECK_FALSE(l.has_room("acme"));  // at its in-flight limit
  CHECK(l.has_room("other"));
  CHECK(counters.counter("acme") > 0);  // its prompt is charged
  const auto charged = counters.counter("acme");
  l.unplaced(a);
  l.placed(a, counters);  // placed again after a move: the prompt is not charged twice
  CHECK(counters.counter("acme") == charged);

  l.token(a, counters, t0);
  CHECK(a.started);
  CHECK(l.unstarted() == 0);
  CHECK(counters.counter("acme") > charged);

  l.unplaced(a);
  l.forgotten(a);
  CHECK(l.book("acme") == nullptr);
  CHECK(l.tenants() == 0);
}

TEST_CASE("tenant ledger: an unstarted request leaves no residue", "[tenant_ledger]") {
  tenant_ledger l;
  auto a = ticket("", 10, 5), b = ticket("x", 3, 4);
  l.accepted(a);
  l.accepted(b);
  CHECK(l.unstarted() == 22);
  l.forgotten(a);
  CHECK(l.unstarted() == 7);
  CHECK(l.book("x")->unstarted == 7);
  l.forgotten(b);
  CHECK(l.unstarted() == 0);
}

TEST_CASE("tenant ledger: deadline admission", "[tenant_ledger]") {
  tenant_ledger cold;
  CHECK_FALSE(cold.deadline_refusal({"", 10, 8, 1, 0}, true));  // nothing measured: refuse nothing

  tenant_ledger l;
  warm(l);
  REQUIRE(l.meter().rates());
  // No deadline: never refused. A generous one: admitted. 8 tokens at 10 ms need ~100 ms.
  CHECK_FALSE(l.deadline_refusal({"", 10, 8, 0, 0}, false));
  CHECK_FALSE(l.deadline_refusal({"", 10, 8, 10000, 0}, false));
  auto why = l.deadline_refusal({"", 10, 8, 20, 0}, false);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("deadline_ms of 20 ms"));
  why = l.deadline_refusal({"", 10, 8, 0, 1}, false);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("ttft_ms target of 1 ms"));

  // Saturated with 5000 tokens not started ahead of it: 5 s of waiting at 1000 tokens/s.
  auto big = ticket("", 4000, 1000);
  l.accepted(big);
  CHECK_FALSE(l.deadline_refusal({"", 10, 8, 1000, 0}, false));
  CHECK(l.deadline_refusal({"", 10, 8, 1000, 0}, true));

  // Its turn came with 50 ms left: too late; with 10 s left: goes.
  auto q = ticket("", 10, 8);
  CHECK(l.too_late(q, t0 + 50ms, t0, t0));
  CHECK_FALSE(l.too_late(q, t0 + 10s, t0, t0));

  deadline_options off;
  off.admission = false;
  tenant_ledger lax({}, off);
  warm(lax);
  CHECK_FALSE(lax.deadline_refusal({"", 10, 8, 1, 1}, true));
  CHECK_FALSE(lax.too_late(q, t0, t0, t0));
}

} // namespace test_tenant_ledger
