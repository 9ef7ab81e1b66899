// The scheduler's admission order across tenants: vtc (virtual token counters) against fcfs,
// preempted sequences first either way, weights, and the cold-adapter skip.
#include <catch2/catch.hpp>

#include <map>

#include "tests/unit/worker/scheduler_harness.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;
using lf::cache::adapter_id;
using lf::cache::base_model;

namespace {

/// One sequence at a time (max_seqs 1); heavy queues 5 requests, then light 2. Each request:
/// 4 prompt tokens and 2 outputs (2 steps). Returns the order they finished in.
std::string order_under(lf::scheduling_policy policy) {
  scheduler_config cfg{1, 64};
  cfg.policy = policy;
  harness h{cfg, 64};
  for (std::uint64_t i = 1; i <= 5; ++i)
    h.add(i, iota_tokens(4, static_cast<std::int32_t>(10 * i)), 2, base_model, std::nullopt, "heavy");
  h.add(10, iota_tokens(4, 500), 2, base_model, std::nullopt, "light");
  h.add(11, iota_tokens(4, 600), 2, base_model, std::nullopt, "light");
  while (!h.s.idle())
    h.step();
  return show(h.finished);
}

} // namespace

TEST_CASE("vtc admits the tenant with the least service first, fcfs by arrival", "[scheduler][tenants]") {
  // Charges: a request costs 4 prompt + 2 x 2 output = 8 (heavy was backlogged first, so it wins
  // ties). Timeline:  heavy 1 (heavy 8) | light 10 (light 8) | heavy 2 (16) | light 11 (16) | 3 4 5
  CHECK(order_under(lf::scheduling_policy::vtc) == "1 10 2 11 3 4 5");
  CHECK(order_under(lf::scheduling_policy::fcfs) == "1 2 3 4 5 10 11");
}

TEST_CASE("vtc: a preempted sequence is admitted before any tenant's turn", "[scheduler][tenants]") {
  // As in "the newest running sequence is preempted ...": 6 blocks of 4 tokens.
  harness h{scheduler_config{4, 64}, 6};
  h.add(0, iota_tokens(8), 6, base_model, std::nullopt, "a");
  h.add(1, iota_tokens(8, 100), 12, base_model, std::nullopt, "b");
  CHECK(show(h.step()) == "0@0+8* 1@0+8*");
  // c arrives with nobody waiting: lifted to b's counter (the last tenant to leave the queue),
  // 8, and b's decodes take b past it.
  h.add(2, iota_tokens(4, 200), 4, base_model, std::nullopt, "c");
  for (int k = 0; k < 4; ++k)
    h.step();
  auto plan = h.step();
  CHECK(show(plan.preempted) == "1");
  CHECK(h.s.counters().counter("c") < h.s.counters().counter("b"));
  // c's counter is lower, yet b's preempted sequence goes first: it was admitted already.
  CHECK(show(h.step()) == "1@8+5* 2@0+4*");
}

TEST_CASE("vtc: every computed token is charged to its tenant, weighted", "[scheduler][tenants]") {
  harness h{scheduler_config{4, 64}, 64};
  lf::worker::seq_spec spec;
  spec.id = sid(1);
  spec.prompt = iota_tokens(6);
  spec.max_tokens = 3;
  spec.tenant = "gold";
  spec.weight = 2;
  REQUIRE_FALSE(h.s.add(spec, t0));
  h.add(2, iota_tokens(6, 100), 3, base_model, std::nullopt, "std");
  while (!h.s.idle())
    h.step();
  // 6 prompt tokens + 2 decode steps (the first output comes with the prefill) at 2 each.
  CHECK(h.s.counters().counter("std") == 6 + 2 * 2);
  CHECK(h.s.counters().counter("gold") == (6 + 2 * 2) / 2.0);
  spec.id = sid(3);
  spec.weight = 0;
  auto err = h.s.add(spec, t0);
  REQUIRE(err);
  CHECK_THAT(*err, Catch::Contains("weight"));
}

TEST_CASE("vtc: a cold adapter does not hold up its tenant's turn for others", "[scheduler][tenants]") {
  scheduler_config cfg{1, 64};
  harness h{cfg, 64};
  const adapter_id cold{7};
  h.add(1, iota_tokens(4), 2, cold, std::nullopt, "a");
  h.add(2, iota_tokens(4, 100), 2, base_model, std::nullopt, "b");
  auto ready = [&](adapter_id a) { return a != cold; };
  // a has the smaller counter (backlogged first) but its only request waits for its adapter.
  CHECK(show(h.step(t0, ready)) == "2@0+4*");
  CHECK(show(h.s.waiting()) == "1");
}

TEST_CASE("vtc with credits: a resumed sequence goes first, a paused one is not waiting for its tenant", "[scheduler][tenants][pause]") {
  harness h{scheduler_config{1, 64}, 64};
  h.add(1, iota_tokens(4), 8, base_model, std::nullopt, "a");
  h.add(2, iota_tokens(4, 100), 8, base_model, std::nullopt, "b");
  h.add(3, iota_tokens(4, 200), 8, base_model, std::nullopt, "b");
  CHECK(show(h.step()) == "1@0+4*");
  for (int k = 0; k < 3; ++k)
    h.step();  // a: 4 + 3 x 2 = 10
  REQUIRE(h.s.pause(sid(1)));  // its client stopped reading
  CHECK(show(h.step()) == "2@0+4*");
  REQUIRE(h.s.resume(sid(1)));
  REQUIRE(h.s.finish(sid(2)));
  // b has had 4, a 10: b's turn by the counters, but 1 was admitted before and goes first.
  CHECK(h.s.counters().counter("b") < h.s.counters().counter("a"));
  CHECK(show(h.step()) == "1@4+4*");  // its first block from the prefix cache

  h.add(4, iota_tokens(4, 300), 8, base_model, std::nullopt, "c");
  CHECK(h.s.counters().is_backlogged("c"));
  REQUIRE(h.s.pause(sid(4)));  // waiting, then paused: c has nothing waiting
  CHECK_FALSE(h.s.counters().is_backlogged("c"));
  REQUIRE(h.s.resume(sid(4)));
  CHECK(h.s.counters().is_backlogged("c"));
}
