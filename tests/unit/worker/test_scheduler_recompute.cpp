// The scheduler without a KV cache (scheduler_config::recompute): every token is sampled after
// computing the whole sequence again from position 0, in rounds, and the outputs are those of a
// run with the cache.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "tests/unit/worker/scheduler_harness.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;

namespace {

scheduler_config recompute_config(std::uint32_t max_seqs, std::uint32_t budget) {
  scheduler_config c{max_seqs, budget};
  c.recompute = true;
  return c;
}

} // namespace

TEST_CASE("recompute needs a block manager without a prefix cache", "[scheduler]") {
  lf::cache::block_manager cached{lf::cache::block_manager_config{8, 4, true, nullptr}};
  CHECK_THROWS_AS(scheduler(recompute_config(4, 8), cached), std::invalid_argument);
  lf::cache::block_manager plain{lf::cache::block_manager_config{8, 4, false, nullptr}};
  CHECK_NOTHROW(scheduler(recompute_config(4, 8), plain));
}

TEST_CASE("without a KV cache every token recomputes its sequence from position 0", "[scheduler]") {
  harness h{recompute_config(4, 64), 64, 4, false};
  h.add(0, iota_tokens(5), 3);
  h.add(1, iota_tokens(2, 100), 3);
  // Round 1: the prompts. Then each round computes prompt + generated again, one more each time.
  CHECK(show(h.step()) == "0@0+5* 1@0+2*");
  CHECK(show(h.step()) == "0@0+6* 1@0+3*");
  CHECK(show(h.step()) == "0@0+7* 1@0+4*");
  CHECK(show(h.finished) == "0 1");
  CHECK(h.s.idle());
  CHECK(h.bm.num_free_blocks() == 64);
}

TEST_CASE("without a KV cache a round waits for its slowest prefill", "[scheduler]") {
  // Budget 8: sequence 0 (6 tokens) fits a step, sequence 1 (9 tokens) needs two. Sequence 0,
  // done with its round first, does not start the next one until 1 has sampled too.
  harness h{recompute_config(4, 8), 64, 4, false};
  h.add(0, iota_tokens(6), 2);
  h.add(1, iota_tokens(9, 100), 2);
  CHECK(show(h.step()) == "0@0+6* 1@0+2");
  CHECK(show(h.step()) == "1@2+7*");
  CHECK(show(h.step()) == "0@0+7* 1@0+1");
  CHECK(show(h.step()) == "1@1+8");
  CHECK(show(h.step()) == "1@9+1*");
  CHECK(show(h.finished) == "0 1");
}

TEST_CASE("without a KV cache the outputs are those with the cache, under any budget and pool",
          "[scheduler]") {
  for (std::uint32_t budget : {4u, 7u, 32u}) {
    for (std::uint32_t blocks : {12u, 64u}) {
      INFO("budget " << budget << ", blocks " << blocks);
      harness h{recompute_config(4, budget), blocks, 4, false};
      std::map<std::uint64_t, token_vec> want;
      for (std::uint64_t i = 0; i < 6; ++i) {
        auto prompt = iota_tokens(3 + 2 * i, static_cast<std::int32_t>(100 * i));
        want[i] = reference_run(lf::cache::base_model, prompt, 4);
        h.add(i, std::move(prompt), 4);
      }
      std::map<std::uint64_t, std::uint32_t> computed;  // positions computed per sequence
      for (int steps = 0; !h.s.idle(); ++steps) {
        REQUIRE(steps < 2000);
        for (const auto& c : h.step().chunks)
          computed[c.id.value()] += c.count;
        for (auto id : h.s.running()) {
          const auto& toks = h.s.tokens(id);
          const auto& w = want[id.value()];
          REQUIRE(toks.size() <= w.size());
          CHECK(std::equal(toks.begin(), toks.end(), w.begin()));
        }
      }
      REQUIRE(h.finished.size() == 6);
      for (std::uint64_t i = 0; i < 6; ++i) {
        // Each of its 4 samples followed a computation of everything before it: the sum over k of
        // prompt + k positions (more where a preemption cut a round short).
        const auto prompt = 3 + 2 * i;
        CHECK(computed[i] >= 4 * prompt + 0 + 1 + 2 + 3);
      }
      CHECK(h.bm.num_free_blocks() == blocks);
    }
  }
}
