// Exact resumption on the real (tiny) GPT-2 and the serving engine: a request resumed after any
// number of its tokens (serving_loop::submit's `resume`, what the router sends a new worker when
// the old one is lost or drained) streams exactly the events, and ends with exactly the text and
// tokens, of the same request run undisturbed; greedy and seeded sampling, with a LoRA adapter
// and without, with stop strings, in a batch of another composition, in the default serving
// precision (int8 weights, bf16 K/V) and in f32.
#include "tests/support/catch_aten.hpp"

#include <set>

#include "tests/support/lora_fixture.hpp"
#include "tests/unit/worker/loop_fixture.hpp"
#include "tests/unit/worker/model_fixture.hpp"
#include "worker/engine/model/cpu_lora.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using namespace lf::engine;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_serving_loop_resume {

namespace {

lf::test::model_fixture& fx() { return lf::test::model_fx(); }

/// The requests: greedy and seeded, base and adapter, penalties, a stop string, end of text.
std::vector<lf::request_draft> requests() {
  const std::vector<std::string> texts = {"Once upon a time", "The quick brown fox jumps over the lazy dog",
                                          "Hi", "To be, or not to be, that is the question",
                                          "Call me Ishmael.", "It was the best of times"};
  std::vector<lf::request_draft> out;
  for (std::size_t i = 0; i < texts.size() * 2; ++i) {
    lf::request_draft d;
    d.prompt = fx().tok.encode(texts[i % texts.size()]);
    d.adapter = i % 3 == 1 ? "one" : "";
    d.params.max_tokens = 12 + static_cast<int>(i % 5) * 4;
    d.params.ignore_eos = i % 4 == 0;
    if (i % 2 == 1) {
      d.params.temperature = 0.7f + 0.1f * static_cast<float>(i % 4);
      d.params.top_p = i % 3 == 0 ? 1.0f : 0.9f;
      d.params.top_k = i % 5 == 0 ? 40 : 0;
      d.params.seed = 1000 + i;
    } else {
      d.params.temperature = 0;
    }
    if (i % 3 == 2)
      d.params.repetition_penalty = 1.3f;
    if (i % 4 == 3)
      d.params.stop = {"e"};  // a single letter: likely to end a sampled request early
    out.push_back(std::move(d));
  }
  return out;
}

void check_resumption(compute_dtype dt, lf::kernels::kv_type kt, batching_mode mode = batching_mode::continuous) {
  const auto& mc = fx().mc;
  serving_config cfg;
  cfg.mode = mode;
  cfg.static_batch = 16;
  cfg.static_wait = std::chrono::milliseconds(5);
  cfg.num_blocks = 256;
  cfg.block_size = 4;
  cfg.sched.max_seqs = 16;
  cfg.sched.max_batched_tokens = 32;  // prompt + resumed tokens are prefilled in chunks
  cfg.eos_id = fx().tok.eos_id();
  auto mgr = make_cpu_lora_manager(fx().root, mc, {});
  cpu_model model(load_cpu_weights(fx().dir, dt), 2);
  lf::kernels::kv_cache kv({mc.n_layer, mc.n_head, mc.head_dim(), static_cast<int>(cfg.block_size),
                            cfg.num_blocks, kt});
  cpu_runner runner(model, kv, mgr->lookup());
  serving_loop loop(runner, fx().tok, cfg, mgr.get());
  const auto reqs = requests();

  // Undisturbed, all at once.
  lf::test::collector first;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    lf::test::submit(loop, reqs[i], first.make(static_cast<int>(i)));
  REQUIRE(first.wait_for(reqs.size(), std::chrono::seconds(120)));

  // Resumed after 1, half, all but one and all of its tokens; in one batch of other requests.
  struct cut {
    std::size_t req, at;
  };
  std::vector<cut> cuts;
  std::set<std::string> reasons;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto n = first.result(static_cast<int>(i)).tokens.size();
    reasons.insert(first.result(static_cast<int>(i)).finish_reason);
    for (auto at : std::set<std::size_t>{1, n / 2, n > 0 ? n - 1 : 0, n})
      if (at <= n)
        cuts.push_back({i, at});
  }
  INFO("finish reasons of the undisturbed runs: " << reasons.size());
  lf::test::collector again;
  for (std::size_t k = 0; k < cuts.size(); ++k) {
    auto toks = first.result(static_cast<int>(cuts[k].req)).tokens;
    toks.resize(cuts[k].at);
    loop.submit(lf::test::validated(reqs[cuts[k].req]), std::nullopt, again.make(static_cast<int>(k)),
                std::move(toks));
  }
  REQUIRE(again.wait_for(cuts.size(), std::chrono::seconds(120)));
  for (std::size_t k = 0; k < cuts.size(); ++k) {
    const auto i = static_cast<int>(cuts[k].req);
    const auto want = first.result(i);
    const auto got = again.result(static_cast<int>(k));
    INFO("request " << i << " resumed after " << cuts[k].at << " of " << want.tokens.size() << " tokens ("
                    << want.finish_reason << "): " << got.message);
    REQUIRE(got.outcome == request_outcome::finished);
    CHECK(got.finish_reason == want.finish_reason);
    CHECK(got.tokens == want.tokens);
    CHECK(got.text == want.text);
    // The stream goes on where the other worker left it: the undisturbed events from index `at`.
    auto events = first.events(i);
    events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(std::min(cuts[k].at, events.size())));
    CHECK(again.events(static_cast<int>(k)) == events);
    CHECK(again.terminals(static_cast<int>(k)) == 1);
  }
  CHECK(reasons.size() >= 2);  // the set covers more than one way to end
  loop.stop(true);
  auto l = loop.load();
  CHECK(l.free_blocks == l.total_blocks);
}

} // namespace

TEST_CASE("a resumed request continues exactly: int8 weights, bf16 K/V (the serving default)",
          "[serving_loop][model][resume]") {
  check_resumption(compute_dtype::int8, lf::kernels::kv_type::bf16);
}

TEST_CASE("a resumed request continues exactly: f32 weights and K/V", "[serving_loop][model][resume]") {
  check_resumption(compute_dtype::f32, lf::kernels::kv_type::f32);
}

TEST_CASE("the static modes resume exactly too (a resumed request joins a batch like a new one)",
          "[serving_loop][model][resume]") {
  SECTION("static batching") { check_resumption(compute_dtype::f32, lf::kernels::kv_type::f32, batching_mode::static_batch); }
  SECTION("no KV cache") { check_resumption(compute_dtype::f32, lf::kernels::kv_type::f32, batching_mode::static_no_cache); }
}

} // namespace test_serving_loop_resume
