// The serving loop on a real (tiny) GPT-2: continuous batching over the paged cache, under heavy
// preemption, and the static comparison modes all give each request what it gets alone.
#include "tests/support/catch_aten.hpp"

#include <map>
#include <set>

#include "tests/support/tiny_engine.hpp"
#include "tests/unit/worker/loop_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/reference/generator.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/weights.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using namespace lf::engine;

namespace {

lf::test::tiny_engine& fx() { return lf::test::tiny(); }

const std::vector<std::string> texts = {
  "Once upon a time", "The quick brown fox jumps over the lazy dog", "Hi",
  "To be, or not to be, that is the question", "In the beginning God created the heaven and the earth",
  "Four score and seven years ago", "It was the best of times, it was the worst of times", "Call me Ishmael."};

std::vector<std::int32_t> alone(const std::vector<std::int32_t>& prompt, int n) {
  lf::request_draft d{prompt, {}, {}, 0};
  d.params.temperature = 0;
  d.params.max_tokens = n;
  d.params.ignore_eos = true;
  return generate(fx().model, fx().tok, {{lf::test::validated(std::move(d))}}).outputs[0].tokens;
}

/// Runs every text through a loop with `cfg` and checks each output against generating it alone.
void check_against_alone(serving_config cfg) {
  const auto& mc = fx().model.config();
  // Every mode runs the serving engine (f32 weights and K/V: the same greedy tokens as the ATen
  // reference, which `alone` runs).
  cpu_model model(load_cpu_weights(fx().dir, compute_dtype::f32), 2);
  lf::kernels::kv_cache kv({mc.n_layer, mc.n_head, mc.head_dim(), static_cast<int>(cfg.block_size),
                            cfg.num_blocks, lf::kernels::kv_type::f32});
  cpu_runner runner(model, kv);
  lf::test::collector col;
  auto sink = std::make_shared<lf::test::recording_sink>();
  serving_loop loop(runner, fx().tok, cfg);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    lf::request_draft r;
    r.prompt = fx().tok.encode(texts[i]);
    r.params.temperature = 0;
    r.params.max_tokens = 10 + static_cast<int>(i) * 3;
    r.params.ignore_eos = true;
    auto cb = col.make(static_cast<int>(i));
    cb.sink = sink;
    cb.tag = i;
    lf::test::submit(loop, r, std::move(cb));
  }
  REQUIRE(col.wait_for(texts.size(), std::chrono::seconds(120)));
  REQUIRE(sink->wait_ended(texts.size()));
  // The sink's batches (one per step; a static batch's: one per generator step) carry what the
  // callbacks were told: per request at most one token a batch, indices 0, 1, ..., the terminal last.
  std::map<std::uint64_t, std::vector<std::int32_t>> tokens;
  std::map<std::uint64_t, int> terminals, late;
  for (const auto& b : sink->batches()) {
    std::set<std::uint64_t> seen;
    for (const auto& e : b.entries) {
      late[e.tag] += terminals[e.tag] > 0;
      if (e.terminal()) {
        ++terminals[e.tag];
        continue;
      }
      CHECK(seen.insert(e.tag).second);
      CHECK(e.index == tokens[e.tag].size());
      tokens[e.tag].push_back(e.token);
    }
  }
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto res = col.result(static_cast<int>(i));
    INFO("mode " << to_string(cfg.mode) << ", request " << i << ": " << res.message);
    REQUIRE(res.outcome == request_outcome::finished);
    CHECK(res.tokens == alone(fx().tok.encode(texts[i]), 10 + static_cast<int>(i) * 3));
    CHECK(col.streamed(static_cast<int>(i)) == res.text);
    CHECK(tokens[i] == res.tokens);
    CHECK(terminals[i] == 1);
    CHECK(late[i] == 0);
  }
  auto l = loop.load();
  CHECK(l.free_blocks == l.total_blocks);
  if (cfg.num_blocks <= 24 && cfg.mode == batching_mode::continuous)
    CHECK(l.preemptions > 0);
}

serving_config base_config() {
  serving_config c;
  c.num_blocks = 128;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 16;  // long prompts are prefilled in chunks
  return c;
}

} // namespace

TEST_CASE("continuous batching gives every request what it gets alone", "[serving_loop][model]") {
  check_against_alone(base_config());
}

TEST_CASE("heavy preemption changes no greedy output", "[serving_loop][model]") {
  auto c = base_config();
  c.num_blocks = 20;  // 80 token slots for 8 requests of up to 44 tokens
  check_against_alone(c);
}

TEST_CASE("static batching, with and without the KV cache, gives the same outputs", "[serving_loop][model]") {
  auto c = base_config();
  c.mode = batching_mode::static_batch;
  c.static_batch = 3;
  check_against_alone(c);
  c.mode = batching_mode::static_no_cache;
  check_against_alone(c);
}
