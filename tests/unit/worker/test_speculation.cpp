// Speculative decoding's pure parts: the n-gram proposer, the adaptive proposal length, the
// automatic rule's cost model, and the scheduler's proposed positions (budget, max_tokens, pool,
// accepted prefix committed, rejected K/V rolled back).
#include <catch2/catch.hpp>

#include "tests/unit/worker/scheduler_harness.hpp"
#include "worker/speculation.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;
using tokens = std::vector<std::int32_t>;

TEST_CASE("n-gram lookup proposes what followed the most recent earlier occurrence of the suffix",
          "[speculation]") {
  // ... 1 2 3 [9 9] 1 2 3 [7 8] 1 2 3: the most recent occurrence of "1 2 3" is followed by 7 8.
  const tokens t = {1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 1, 2, 3};
  CHECK(propose_ngram(t, 2) == tokens{7, 8});
  CHECK(propose_ngram(t, 5) == tokens{7, 8, 1, 2, 3});
  // Past the end the match continues as an overlapping copy: period 5 (7 8 1 2 3).
  CHECK(propose_ngram(t, 7) == tokens{7, 8, 1, 2, 3, 7, 8});
  CHECK(propose_ngram(t, 0).empty());
  // The longest suffix wins: "5 1 2" occurs once, followed by 4; "1 2" alone later is followed by 6.
  const tokens u = {5, 1, 2, 4, 0, 1, 2, 6, 0, 5, 1, 2};
  CHECK(propose_ngram(u, 1) == tokens{4});
  ngram_settings two;
  two.max_ngram = 2;
  CHECK(propose_ngram(u, 1, two) == tokens{6});
  // Nothing matches: nothing proposed; a single-token suffix only with min_ngram 1.
  CHECK(propose_ngram({1, 2, 3, 4}, 3).empty());
  const tokens v = {4, 7, 1, 4};
  CHECK(propose_ngram(v, 2).empty());
  ngram_settings one;
  one.min_ngram = 1;
  CHECK(propose_ngram(v, 2, one) == tokens{7, 1});
  // A loop proposes its own continuation, for as long as asked.
  CHECK(propose_ngram({3, 4, 3, 4, 3, 4}, 5) == tokens{3, 4, 3, 4, 3});
  CHECK(propose_ngram({9, 9, 9}, 3) == tokens{9, 9, 9});
  // The window bounds the search.
  ngram_settings narrow;
  narrow.window = 6;
  const tokens w = {8, 9, 5, 0, 0, 0, 0, 0, 8, 9};
  CHECK(propose_ngram(w, 1) == tokens{5});
  CHECK(propose_ngram(w, 1, narrow).empty());
  CHECK(propose_ngram({}, 4).empty());
  CHECK(propose_ngram({1}, 4).empty());
}

TEST_CASE("the proposal length grows while everything is accepted and shrinks otherwise", "[speculation]") {
  draft_length d(6);
  CHECK(d.next() == 6);
  d.update(6, 2);
  CHECK(d.next() == 5);
  for (int i = 0; i < 10; ++i)
    d.update(d.next(), 0);
  CHECK(d.next() == 1);
  CHECK(d.acceptance() < 0.1);
  d.update(1, 1);
  CHECK(d.next() == 3);
  d.update(3, 3);
  d.update(5, 5);
  CHECK(d.next() == 6);  // the limit
  CHECK(draft_length(0).next() == 1);
  CHECK(parse_speculation_mode("auto") == speculation_mode::automatic);
  CHECK(parse_speculation_mode("on") == speculation_mode::on);
  CHECK(parse_speculation_mode("off") == speculation_mode::off);
  CHECK_FALSE(parse_speculation_mode("maybe"));
  CHECK(to_string(speculation_mode::automatic) == "auto");
}

TEST_CASE("the automatic rule speculates where the step is bandwidth-bound and not where it is compute-bound",
          "[speculation]") {
  step_cost_model m;
  CHECK_FALSE(m.fit());
  // Without a fit: the fallback row count.
  CHECK(m.pays(1, 1, 1.0, 4, 8));
  CHECK_FALSE(m.pays(32, 32, 8.0, 64, 8));
  // A step costs 20 ms + 0.5 ms per token (small batches read weights; large ones compute).
  for (int i = 0; i < 200; ++i) {
    const auto n = static_cast<std::uint32_t>(1 + (i * 7) % 64);
    m.observe(n, 20.0 + 0.5 * n);
  }
  auto f = m.fit();
  REQUIRE(f);
  CHECK(f->first == Approx(20.0).epsilon(0.01));
  CHECK(f->second == Approx(0.5).epsilon(0.01));
  // Batch 1, 4 proposals, 2 expected accepted: 3 tokens for 22.5 ms against 1 for 20.5 ms.
  CHECK(m.pays(1, 1, 2.0, 4));
  // Batch 32, 4 proposals each at acceptance 0.3: 32 + 38 tokens for 100 ms against 32 for 36 ms.
  CHECK_FALSE(m.pays(32, 32, 38.4, 128));
  CHECK_FALSE(m.pays(1, 1, 0.0, 4));  // nothing expected: no
  CHECK_FALSE(m.pays(1, 1, 2.0, 0));  // nothing proposed: nothing to decide
}

TEST_CASE("a decode with proposals computes 1 + draft positions, complete() keeps the accepted prefix",
          "[speculation][scheduler]") {
  harness h{scheduler_config{4, 16}, 64};
  h.add(0, iota_tokens(6), 20);
  auto p = h.s.schedule(t0);
  REQUIRE(show(p) == "0@0+6*");
  h.s.complete(p, {std::optional<std::int32_t>(50)});
  // Decoding: 7 tokens, 6 computed. Proposes 3.
  p = h.s.schedule(t0, {}, [](lf::cache::seq_id) { return 3u; });
  REQUIRE(p.chunks.size() == 1);
  CHECK(p.chunks[0].start == 6);
  CHECK(p.chunks[0].count == 4);
  CHECK(p.chunks[0].draft == 3);
  CHECK(p.num_tokens == 4);
  CHECK(h.bm.num_slots(sid(0)) >= 10);
  // Accepts 2 of 3 (51, 52), then samples 60: positions 6..8 computed, the 4th rolled back.
  h.s.complete(p, {std::optional<std::int32_t>(60)}, {{51, 52}});
  CHECK(h.s.tokens(sid(0)) == tokens{0, 1, 2, 3, 4, 5, 50, 51, 52, 60});
  CHECK(h.bm.num_computed(sid(0)) == 9);
  CHECK(h.s.num_generated(sid(0)) == 4);
  // The next decode starts where the accepted ones ended, overwriting the rejected slot.
  p = h.s.schedule(t0);
  CHECK(show(p) == "0@9+1*");
  // Wrong lists are refused, recording nothing.
  CHECK_THROWS_AS(h.s.complete(p, {std::optional<std::int32_t>(1)}, {{1}}), std::invalid_argument);
  CHECK_THROWS_AS(h.s.complete(p, {std::optional<std::int32_t>(1)}, {{}, {}}), std::invalid_argument);
  CHECK(h.bm.num_computed(sid(0)) == 9);
  h.s.complete(p, {std::optional<std::int32_t>(61)}, {{}});
  CHECK(h.bm.num_computed(sid(0)) == 10);
}

TEST_CASE("proposals get only the spare budget, stop short of max_tokens and never preempt",
          "[speculation][scheduler]") {
  SECTION("budget: every decode first") {
    harness h{scheduler_config{4, 6}, 64};
    for (std::uint64_t i = 0; i < 3; ++i)
      h.add(i, iota_tokens(2, static_cast<std::int32_t>(10 * i)), 20);
    auto p = h.s.schedule(t0);
    h.s.complete(p, {std::optional<std::int32_t>(1), std::optional<std::int32_t>(2), std::optional<std::int32_t>(3)});
    p = h.s.schedule(t0, {}, [](lf::cache::seq_id) { return 5u; });
    REQUIRE(p.chunks.size() == 3);
    CHECK(p.chunks[0].draft == 3);  // 6 - 3 decodes = 3 spare, the oldest takes them
    CHECK(p.chunks[1].draft == 0);
    CHECK(p.chunks[2].draft == 0);
    CHECK(p.num_tokens == 6);
  }
  SECTION("max_tokens: 1 + draft tokens at most come out") {
    harness h{scheduler_config{4, 16}, 64};
    h.add(0, iota_tokens(3), 4);
    auto p = h.s.schedule(t0);
    h.s.complete(p, {std::optional<std::int32_t>(7)});
    p = h.s.schedule(t0, {}, [](lf::cache::seq_id) { return 8u; });
    CHECK(p.chunks.at(0).draft == 2);  // 1 generated of 4: 3 more, 1 + 2
  }
  SECTION("the pool: proposals never take a block a decode needs") {
    // 4 blocks of 4: sequence 0 holds 2 (5 tokens), sequence 1 holds 1 (4 tokens), 1 is free.
    harness h{scheduler_config{4, 16}, 4};
    h.add(0, iota_tokens(5), 6);
    h.add(1, iota_tokens(4, 100), 6);
    auto p = h.s.schedule(t0);
    h.s.complete(p, {std::optional<std::int32_t>(1), std::optional<std::int32_t>(2)});
    // Sequence 0 (6 tokens) could grow into the free block with 3 proposals, but sequence 1
    // (5 tokens) needs it for its next position: no proposals, no preemption.
    p = h.s.schedule(t0, {}, [](lf::cache::seq_id) { return 3u; });
    CHECK(p.preempted.empty());
    REQUIRE(p.chunks.size() == 2);
    CHECK(p.chunks[0].draft == 0);
    // Sequence 1's proposals fit the block its own token takes: no block more.
    CHECK(p.chunks[1].draft == 3);
    CHECK(h.bm.num_free_blocks() == 0);
  }
}
