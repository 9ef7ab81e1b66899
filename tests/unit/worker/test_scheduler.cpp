// Deterministic scheduler tests with a fake engine: admission under the token budget, the
// sequence limit and the pool; chunked prefill interleaved with decodes; preemption by
// recomputation; cancellation; deadlines; rejection; the cold-adapter skip rule.
//
// Plans are written "id@start+count", '*' marking a chunk that samples a token. Timelines give
// the positions each step computes, e.g. "Req 0: prefill 0-7 | 8-9 + sample | decode 10 | 11".
// Block size 4 throughout.

#include <catch2/catch.hpp>

#include "tests/unit/worker/scheduler_harness.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;
using lf::cache::adapter_id;
using lf::cache::base_model;

TEST_CASE("to_string names every phase", "[scheduler]") {
  CHECK(to_string(seq_phase::waiting) == "waiting");
  CHECK(to_string(seq_phase::prefilling) == "prefilling");
  CHECK(to_string(seq_phase::decoding) == "decoding");
}

TEST_CASE("invalid configs are rejected", "[scheduler]") {
  lf::cache::block_manager bm{lf::cache::block_manager_config{8, 4, true, nullptr}};
  CHECK_THROWS_AS(scheduler(scheduler_config{0, 8}, bm), std::invalid_argument);
  CHECK_THROWS_AS(scheduler(scheduler_config{4, 0}, bm), std::invalid_argument);
  CHECK_THROWS_AS(scheduler(scheduler_config{9, 8}, bm), std::invalid_argument);
  CHECK_NOTHROW(scheduler(scheduler_config{8, 8}, bm));
}

TEST_CASE("a long prompt is prefilled in chunks of the token budget, FCFS", "[scheduler]") {
  harness h{scheduler_config{4, 8}, 64};
  h.add(0, iota_tokens(10));
  h.add(1, iota_tokens(3, 100));
  h.add(2, iota_tokens(5, 200));
  // Budget 8 tokens per step.
  // Req 0: prefill 0-7 | 8-9 + sample | decode 10 | 11
  // Req 1: --          | 0-2 + sample | decode 3  | 4
  // Req 2: --          | 0-2          | 3-4 + sample | decode 5
  CHECK(show(h.step()) == "0@0+8");
  CHECK(h.s.phase(sid(0)) == seq_phase::prefilling);
  CHECK(show(h.s.waiting()) == "1 2");
  CHECK(show(h.step()) == "0@8+2* 1@0+3* 2@0+3");
  CHECK(h.s.phase(sid(0)) == seq_phase::decoding);
  CHECK(h.s.phase(sid(2)) == seq_phase::prefilling);
  auto plan = h.step();
  CHECK(show(plan) == "0@10+1* 1@3+1* 2@3+2*");
  CHECK(plan.num_tokens == 4);
  CHECK(show(h.step()) == "0@11+1* 1@4+1* 2@5+1*");
  CHECK(show(h.s.running()) == "0 1 2");
  CHECK(h.s.num_generated(sid(0)) == 3);
  CHECK(h.s.tokens(sid(0)) == reference_run(base_model, iota_tokens(10), 3));
}

TEST_CASE("chunked prefill interleaves with decodes and continues before admissions",
          "[scheduler]") {
  harness h{scheduler_config{4, 8}, 64};
  h.add(0, iota_tokens(3));
  h.add(1, iota_tokens(3, 100));
  CHECK(show(h.step()) == "0@0+3* 1@0+3*");
  h.add(2, iota_tokens(20, 200));
  h.add(3, iota_tokens(2, 300));
  // Req 0, 1: decode 3 | 4 | 5 | 6 | 7 (one token every step, never stalled by req 2)
  // Req 2:    0-5 | 6-11 | 12-17 | 18-19 + sample | decode 20
  // Req 3:    waits while req 2's prefill takes the rest of the budget | 0-1 + sample | 2
  CHECK(show(h.step()) == "0@3+1* 1@3+1* 2@0+6");
  CHECK(show(h.step()) == "0@4+1* 1@4+1* 2@6+6");
  CHECK(h.s.phase(sid(2)) == seq_phase::prefilling);
  CHECK(h.s.phase(sid(3)) == seq_phase::waiting);
  CHECK(show(h.step()) == "0@5+1* 1@5+1* 2@12+6");
  CHECK(show(h.step()) == "0@6+1* 1@6+1* 2@18+2* 3@0+2*");
  CHECK(show(h.step()) == "0@7+1* 1@7+1* 2@20+1* 3@2+1*");
}

TEST_CASE("max_seqs bounds the running sequences", "[scheduler]") {
  harness h{scheduler_config{2, 64}, 64};
  for (std::uint64_t i = 0; i < 3; ++i)
    h.add(i, iota_tokens(4, static_cast<std::int32_t>(100 * i)));
  CHECK(show(h.step()) == "0@0+4* 1@0+4*");
  CHECK(show(h.step()) == "0@4+1* 1@4+1*");
  CHECK(show(h.s.waiting()) == "2");
  REQUIRE(h.s.finish(sid(0)));
  CHECK(show(h.step()) == "1@5+1* 2@0+4*");
}

TEST_CASE("admission stops at the first request the pool cannot hold", "[scheduler]") {
  // 6 blocks of 4 tokens.
  harness h{scheduler_config{4, 64}, 6};
  h.add(0, iota_tokens(12), 4);      // 3 blocks
  h.add(1, iota_tokens(16, 100), 4); // 4 blocks: does not fit next to req 0
  h.add(2, iota_tokens(2, 200), 4);  // 1 block: would fit, but must not jump ahead of req 1
  CHECK(show(h.step()) == "0@0+12*");
  CHECK(show(h.s.waiting()) == "1 2");
  CHECK(h.s.get_load().free_blocks == 3);
  CHECK(show(h.step()) == "0@12+1*"); // opens req 0's 4th block
  CHECK(show(h.s.waiting()) == "1 2");
  REQUIRE(h.s.finish(sid(0)));
  CHECK(h.bm.get_stats().in_use == 0);
  CHECK(show(h.step()) == "1@0+16* 2@0+2*");
}

TEST_CASE("the newest running sequence is preempted and recomputed with its output",
          "[scheduler]") {
  // 6 blocks of 4 tokens: two 8-token prompts take 4, and their decodes the rest.
  harness h{scheduler_config{4, 64}, 6};
  h.add(0, iota_tokens(8), 6);
  h.add(1, iota_tokens(8, 100), 12);
  // Req 0: prefill 0-7 | decode 8 | 9 | 10 | 11 | 12 (takes req 1's block) -> 6 tokens, finished
  // Req 1: prefill 0-7 | decode 8 | 9 | 10 | 11 | preempted | prefix hit 0-7, recompute 8-12
  CHECK(show(h.step()) == "0@0+8* 1@0+8*");
  h.add(2, iota_tokens(4, 200), 4);
  for (std::uint32_t p = 8; p < 12; ++p)
    CHECK(show(h.step()) == "0@" + std::to_string(p) + "+1* 1@" + std::to_string(p) + "+1*");
  CHECK(show(h.s.waiting()) == "2"); // no block left for it
  CHECK(h.bm.num_free_blocks() == 0);
  CHECK(h.s.get_load().preemptions == 0);

  auto plan = h.step();
  CHECK(show(plan) == "0@12+1*");
  CHECK(show(plan.preempted) == "1");
  CHECK(show(h.finished) == "0");
  CHECK(h.s.phase(sid(1)) == seq_phase::waiting);
  CHECK(show(h.s.waiting()) == "1 2"); // back at the head, ahead of the older waiting req 2
  CHECK(h.s.num_preemptions(sid(1)) == 1);
  CHECK(h.s.get_load().preemptions == 1);
  CHECK(h.s.tokens(sid(1)).size() == 13);
  CHECK(h.s.num_generated(sid(1)) == 5);

  // Re-admitted with its 13 tokens as the prompt: blocks 0-3 and 4-7 are still cached (8-11 was
  // evicted for req 0), so only 8-12 are recomputed.
  const auto hits_before = h.bm.get_stats().prefix_hit_tokens;
  plan = h.step();
  CHECK(show(plan) == "1@8+5* 2@0+4*");
  CHECK(h.bm.get_stats().prefix_hit_tokens - hits_before == 8);
  CHECK(h.s.phase(sid(1)) == seq_phase::decoding);
  while (!h.s.idle())
    h.step();
  CHECK(show(h.finished) == "0 2 1");
  CHECK(h.bm.get_stats().in_use == 0);
}

TEST_CASE("several preemptions in one step keep the older victim ahead", "[scheduler]") {
  harness h{scheduler_config{4, 64}, 4};
  for (std::uint64_t i = 0; i < 4; ++i)
    h.add(i, iota_tokens(4, static_cast<std::int32_t>(100 * i)), 8);
  CHECK(show(h.step()) == "0@0+4* 1@0+4* 2@0+4* 3@0+4*");
  h.add(4, iota_tokens(4, 400), 8);
  // Req 0 and 1 each need a second block: req 3, then req 2 give theirs up.
  auto plan = h.step();
  CHECK(show(plan) == "0@4+1* 1@4+1*");
  CHECK(show(plan.preempted) == "3 2");
  CHECK(show(h.s.waiting()) == "2 3 4");
  CHECK(show(h.s.running()) == "0 1");
}

TEST_CASE("the newest sequence preempts itself when it alone needs a block", "[scheduler]") {
  // 3 blocks: req 0 has room up to 8 tokens, req 1's 5th token needs a block nobody can give
  // except req 1 itself.
  harness h{scheduler_config{4, 64}, 3};
  h.add(0, iota_tokens(6), 6);
  h.add(1, iota_tokens(4, 100), 4);
  CHECK(show(h.step()) == "0@0+6* 1@0+4*");
  auto plan = h.step();
  CHECK(show(plan) == "0@6+1*");
  CHECK(show(plan.preempted) == "1");
  CHECK(show(h.s.waiting()) == "1");
  CHECK(h.s.num_generated(sid(1)) == 1);
  while (!h.s.idle())
    h.step();
  CHECK(show(h.finished) == "0 1");
}

TEST_CASE("finish frees blocks at once in every phase", "[scheduler]") {
  harness h{scheduler_config{4, 8}, 16};
  h.add(0, iota_tokens(3));
  h.add(1, iota_tokens(12, 100));
  h.add(2, iota_tokens(4, 200));
  CHECK(show(h.step()) == "0@0+3* 1@0+5");
  CHECK(h.s.phase(sid(0)) == seq_phase::decoding);
  CHECK(h.s.phase(sid(1)) == seq_phase::prefilling);
  CHECK(h.s.phase(sid(2)) == seq_phase::waiting);
  CHECK(h.bm.get_stats().in_use == 4);

  CHECK(h.s.finish(sid(2)));
  CHECK_FALSE(h.s.finish(sid(2)));
  CHECK_FALSE(h.s.contains(sid(2)));
  CHECK(h.s.waiting().empty());
  CHECK(h.bm.get_stats().in_use == 4);

  CHECK(h.s.finish(sid(1)));
  CHECK_FALSE(h.bm.contains(sid(1)));
  CHECK(h.bm.get_stats().in_use == 1);
  CHECK(h.bm.get_stats().cached == 1); // its computed block 0-3 stays reusable

  CHECK(h.s.finish(sid(0)));
  const auto st = h.bm.get_stats();
  CHECK(st.in_use == 0);
  CHECK(st.free + st.cached == st.total);
  CHECK(h.s.idle());
  CHECK(h.s.schedule(t0).empty());
  CHECK_THROWS_AS(h.s.phase(sid(0)), std::out_of_range);
  CHECK_THROWS_AS(h.s.tokens(sid(0)), std::out_of_range);
}

TEST_CASE("deadlines expire waiting and running sequences", "[scheduler]") {
  harness h{scheduler_config{4, 8}, 16};
  h.add(0, iota_tokens(3), 16, base_model, at_ms(100));
  h.add(1, iota_tokens(20, 100));
  h.add(2, iota_tokens(4, 200), 16, base_model, at_ms(50));
  CHECK(show(h.step(t0)) == "0@0+3* 1@0+5");
  auto plan = h.step(at_ms(49));
  CHECK(plan.expired.empty());
  CHECK(show(plan) == "0@3+1* 1@5+7");
  plan = h.step(at_ms(50)); // deadline <= now: gone while still waiting
  CHECK(show(plan.expired) == "2");
  CHECK_FALSE(h.s.contains(sid(2)));
  CHECK(show(plan) == "0@4+1* 1@12+7");
  const auto in_use = h.bm.get_stats().in_use;
  plan = h.step(at_ms(100)); // req 0 expires mid-decode, its block returns now
  CHECK(show(plan.expired) == "0");
  CHECK(show(plan) == "1@19+1*");
  CHECK(h.bm.get_stats().in_use == in_use - 2);
  CHECK_FALSE(h.bm.contains(sid(0)));
  CHECK(show(h.s.running()) == "1");
  // A deadline already passed at add() expires at the next step.
  h.add(3, iota_tokens(2, 300), 4, base_model, at_ms(10));
  plan = h.s.schedule(at_ms(100));
  CHECK(show(plan.expired) == "3");
}

TEST_CASE("requests that can never run are rejected at add", "[scheduler]") {
  // A pool of 4 blocks of 4 tokens. (The context window was checked at the edge.)
  lf::cache::block_manager bm{lf::cache::block_manager_config{4, 4, true, nullptr}};
  scheduler s{scheduler_config{4, 8}, bm};
  auto add = [&](std::uint64_t id, std::size_t prompt, std::uint32_t max_tokens) {
    return s.add(seq_spec{sid(id), iota_tokens(prompt), base_model, max_tokens, {}}, t0);
  };
  auto err = add(1, 0, 4);
  REQUIRE(err);
  CHECK_THAT(*err, Catch::Contains("empty prompt"));
  err = add(1, 4, 0);
  REQUIRE(err);
  CHECK_THAT(*err, Catch::Contains("max_tokens"));
  CHECK_FALSE(add(1, 10, 2));
  err = add(1, 2, 2);
  REQUIRE(err);
  CHECK_THAT(*err, Catch::Contains("duplicate"));
  CHECK(show(s.waiting()) == "1");

  scheduler wide{scheduler_config{4, 8}, bm};
  err = wide.add(seq_spec{sid(7), iota_tokens(10), base_model, 7, {}}, t0);
  REQUIRE(err);
  CHECK_THAT(*err, Catch::Contains("needs 5 KV blocks but the pool has only 4"));
  CHECK_FALSE(wide.add(seq_spec{sid(7), iota_tokens(10), base_model, 6, {}}, t0));
  CHECK(wide.get_load().waiting == 1);
}

TEST_CASE("a cold adapter does not block the queue", "[scheduler]") {
  harness h{scheduler_config{4, 64}, 64};
  const adapter_id cold{7}, warm{8};
  h.add(0, iota_tokens(4), 16, cold);
  h.add(1, iota_tokens(4, 100));
  h.add(2, iota_tokens(4, 200), 16, warm);
  h.add(3, iota_tokens(4, 300), 16, cold);
  auto ready = [&](adapter_id a) { return a != cold; };
  CHECK(show(h.step(t0, ready)) == "1@0+4* 2@0+4*");
  CHECK(show(h.s.waiting()) == "0 3"); // kept their places
  CHECK(show(h.step(t0, ready)) == "1@4+1* 2@4+1*");
  // Once loaded, they are admitted in queue order.
  CHECK(show(h.step(t0)) == "1@5+1* 2@5+1* 0@0+4* 3@0+4*");
  CHECK(h.s.adapter(sid(3)) == cold);
}

TEST_CASE("the watermark keeps blocks for decodes unless nothing runs", "[scheduler]") {
  scheduler_config cfg{4, 64, 1024};
  cfg.watermark_blocks = 2;
  harness h{cfg, 8};
  h.add(0, iota_tokens(8), 8);       // 2 blocks: nothing runs, so the watermark is ignored
  h.add(1, iota_tokens(12, 100), 8); // 3 blocks, 3 free left >= 2
  h.add(2, iota_tokens(8, 200), 8);  // 2 blocks would leave 1 < 2
  CHECK(show(h.step()) == "0@0+8* 1@0+12*");
  CHECK(show(h.s.waiting()) == "2");

  harness alone{cfg, 4};
  alone.add(0, iota_tokens(12), 4); // leaves 1 block free, but it is alone
  CHECK(show(alone.step()) == "0@0+12*");
}

TEST_CASE("complete validates results and tolerates dropped plans", "[scheduler]") {
  harness h{scheduler_config{4, 8}, 16};
  h.add(0, iota_tokens(3));
  h.add(1, iota_tokens(12, 100));
  auto plan = h.s.schedule(t0);
  REQUIRE(show(plan) == "0@0+3* 1@0+5");
  using result = std::vector<std::optional<std::int32_t>>;
  CHECK_THROWS_AS(h.s.complete(plan, result{5}), std::invalid_argument);
  CHECK_THROWS_AS(h.s.complete(plan, result{std::nullopt, std::nullopt}), std::invalid_argument);
  CHECK_THROWS_AS(h.s.complete(plan, result{5, 6}), std::invalid_argument);
  CHECK(h.bm.num_computed(sid(0)) == 0);
  CHECK(h.bm.num_computed(sid(1)) == 0);

  // The step failed and the plan is dropped: the next plan computes the same positions.
  CHECK(show(h.s.schedule(t0)) == show(plan));
  h.s.complete(plan, h.eng.run(plan));
  CHECK(h.s.tokens(sid(0)).size() == 4);
  CHECK_THROWS_AS(h.s.complete(plan, result{5, std::nullopt}), std::logic_error); // stale

  // Req 0 is cancelled while its step runs: its result is ignored.
  plan = h.s.schedule(t0);
  REQUIRE(show(plan) == "0@3+1* 1@5+7*");
  const auto sampled = h.eng.run(plan);
  REQUIRE(h.s.finish(sid(0)));
  h.s.complete(plan, sampled);
  CHECK(h.s.phase(sid(1)) == seq_phase::decoding);
  h.bm.check_invariants();
}

TEST_CASE("a sequence at max_tokens must be finished before the next step", "[scheduler]") {
  harness h{scheduler_config{4, 8}, 16};
  h.add(0, iota_tokens(3), 1);
  auto plan = h.s.schedule(t0);
  h.s.complete(plan, h.eng.run(plan));
  CHECK(h.s.num_generated(sid(0)) == 1);
  CHECK_THROWS_AS(h.s.schedule(t0), std::logic_error);
  REQUIRE(h.s.finish(sid(0)));
  CHECK(h.s.schedule(t0).empty());
}

TEST_CASE("load reports queue sizes, pending tokens and free blocks", "[scheduler]") {
  harness h{scheduler_config{4, 8}, 16};
  h.add(0, iota_tokens(3));
  h.add(1, iota_tokens(12, 100));
  h.add(2, iota_tokens(5, 200));
  auto l = h.s.get_load();
  CHECK(l.waiting == 3);
  CHECK(l.running == 0);
  CHECK(l.waiting_tokens == 20);
  CHECK(l.running_tokens == 0);
  CHECK(l.free_blocks == 16);
  CHECK(h.s.prompt_size(sid(1)) == 12);
  CHECK(show(h.step()) == "0@0+3* 1@0+5");
  l = h.s.get_load();
  CHECK(l.waiting == 1);
  CHECK(l.running == 2);
  CHECK(l.waiting_tokens == 5 + 7); // req 2, and the rest of req 1's prefill
  CHECK(l.running_tokens == 4 + 12);
  CHECK(l.free_blocks == 12);
  CHECK(l.preemptions == 0);
}
