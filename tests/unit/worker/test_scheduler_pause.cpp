// Pausing a sequence for want of credits (scheduler::pause / resume): it leaves the batch and
// the queue, holds no blocks (its full blocks wait in the prefix cache), still expires, may be
// finished; resumed, it goes first and recomputes only its last partial block.
#include <catch2/catch.hpp>

#include "tests/unit/worker/scheduler_harness.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;

TEST_CASE("a paused running sequence frees its slot and blocks and resumes at the head", "[scheduler][pause]") {
  harness h{scheduler_config{2, 64}, 64};
  for (std::uint64_t i = 0; i < 3; ++i)
    h.add(i, iota_tokens(8, static_cast<std::int32_t>(100 * i)));
  CHECK(show(h.step()) == "0@0+8* 1@0+8*");
  CHECK(show(h.step()) == "0@8+1* 1@8+1*");  // 0 now has 10 tokens, 9 computed
  REQUIRE(h.s.pause(sid(0)));
  CHECK_FALSE(h.s.pause(sid(0)));  // once
  CHECK(h.s.paused(sid(0)));
  CHECK(h.s.contains(sid(0)));
  CHECK_FALSE(h.bm.contains(sid(0)));  // no blocks held
  auto l = h.s.get_load();
  CHECK(l.paused == 1);
  CHECK(l.running == 1);
  CHECK(l.waiting == 1);
  // Its slot goes to the next waiting sequence; 0 is never planned while paused.
  CHECK(show(h.step()) == "1@9+1* 2@0+8*");
  CHECK(show(h.step()) == "1@10+1* 2@8+1*");
  REQUIRE(h.s.resume(sid(0)));
  CHECK_FALSE(h.s.resume(sid(0)));
  CHECK(show(h.s.waiting()) == "0");
  REQUIRE(h.s.finish(sid(1)));
  // Back first; its two full blocks come from the prefix cache: only [8, 10) is computed.
  CHECK(show(h.step()) == "2@9+1* 0@8+2*");
  CHECK(h.s.num_generated(sid(0)) == 3);
  CHECK(h.s.get_load().paused == 0);
}

TEST_CASE("a paused sequence may be finished, expires at its deadline and a waiting one can pause", "[scheduler][pause]") {
  harness h{scheduler_config{4, 64}, 64};
  h.add(0, iota_tokens(4), 16, lf::cache::base_model, at_ms(100));
  h.add(1, iota_tokens(4, 50));
  h.add(2, iota_tokens(4, 90));
  CHECK(show(h.step()) == "0@0+4* 1@0+4* 2@0+4*");
  REQUIRE(h.s.pause(sid(0)));
  REQUIRE(h.s.pause(sid(1)));
  h.add(3, iota_tokens(4, 300));
  REQUIRE(h.s.pause(sid(3)));  // waiting: leaves the queue
  CHECK(h.s.waiting().empty());
  CHECK(h.s.get_load().paused == 3);
  REQUIRE(h.s.finish(sid(1)));
  CHECK(h.s.get_load().paused == 2);
  auto plan = h.step(at_ms(100));
  CHECK(show(plan.expired) == "0");
  CHECK(show(plan) == "2@4+1*");
  CHECK(h.s.get_load().paused == 1);
  REQUIRE(h.s.resume(sid(3)));
  CHECK(show(h.step(at_ms(101))) == "2@5+1* 3@0+4*");
  CHECK(h.bm.get_stats().in_use > 0);
}
