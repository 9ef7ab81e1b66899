// Speculative decoding on the real (tiny) GPT-2 and the serving engine: with n-gram proposals
// verified in the continuous batch, every request's events, tokens and text are exactly those of
// plain decoding (greedy and seeded sampling, with a LoRA adapter and without, penalties, stop
// strings, credits) in f32, bf16 and int8; a request resumed mid-speculation, on a worker that
// speculates or one that does not, continues exactly; no block leaks.
#include "tests/support/catch_aten.hpp"

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
namespace test_serving_loop_spec {

namespace {

lf::test::model_fixture& fx() { return lf::test::model_fx(); }

/// Prompts that repeat themselves (so n-gram lookup proposes), greedy and seeded, base and
/// adapter, a penalty, a stop string.
std::vector<lf::request_draft> requests() {
  const std::vector<std::string> texts = {
    "the cat sat on the mat. the cat sat on the mat. the cat sat on the",
    "one two three four one two three four one two three four one two",
    "To be, or not to be, that is the question. To be, or not to be, that",
    "abc abc abc abc abc abc abc abc abc abc",
    "Once upon a time there was a king. Once upon a time there was a"};
  std::vector<lf::request_draft> out;
  for (std::size_t i = 0; i < texts.size() * 2; ++i) {
    lf::request_draft d;
    d.prompt = fx().tok.encode(texts[i % texts.size()]);
    d.adapter = i % 3 == 1 ? "one" : "";
    // Long greedy runs: a random model's greedy text falls into loops the proposer predicts.
    d.params.max_tokens = i < texts.size() ? 120 + static_cast<int>(i % 3) * 16 : 24 + static_cast<int>(i % 3) * 8;
    d.params.ignore_eos = i % 4 == 0;
    if (i >= texts.size()) {
      d.params.temperature = 0.6f + 0.2f * static_cast<float>(i % 3);
      d.params.top_p = i % 2 == 0 ? 1.0f : 0.9f;
      d.params.top_k = i % 3 == 0 ? 40 : 0;
      d.params.seed = 77 + i;
    } else {
      d.params.temperature = 0;
    }
    if (i == 2 || i == 7)
      d.params.repetition_penalty = 1.2f;
    if (i == 3)
      d.params.stop = {"abc abc abc abc abc abc abc abc"};
    out.push_back(std::move(d));
  }
  return out;
}

struct engine_set {
  std::unique_ptr<lf::cache::adapter_manager> mgr;
  cpu_model model;
  lf::kernels::kv_cache kv;
  cpu_runner runner;
  engine_set(compute_dtype dt, lf::kernels::kv_type kt, const serving_config& cfg)
    : mgr(make_cpu_lora_manager(fx().root, fx().mc, {})), model(load_cpu_weights(fx().dir, dt), 2),
      kv({fx().mc.n_layer, fx().mc.n_head, fx().mc.head_dim(), static_cast<int>(cfg.block_size), cfg.num_blocks, kt}),
      runner(model, kv, mgr->lookup()) {}
};

/// The draft model: the same tiny GPT-2 in int8 (so it agrees with an f32 or bf16 target on
/// most greedy tokens, not all), base model only, over its own pool.
struct draft_set {
  cpu_model model;
  lf::kernels::kv_cache kv;
  cpu_runner runner;
  explicit draft_set(std::uint32_t blocks)
    : model(load_cpu_weights(fx().dir, compute_dtype::int8), 2),
      kv({fx().mc.n_layer, fx().mc.n_head, fx().mc.head_dim(), 4, blocks, lf::kernels::kv_type::bf16}),
      runner(model, kv) {}
};

serving_config loop_config(speculation_mode mode) {
  serving_config cfg;
  cfg.num_blocks = 256;
  cfg.block_size = 4;
  cfg.sched.max_seqs = 16;
  cfg.sched.max_batched_tokens = 64;
  cfg.eos_id = fx().tok.eos_id();
  cfg.speculation = mode;
  cfg.speculative_tokens = 5;
  cfg.ngram.min_ngram = 1;
  return cfg;
}

/// Runs `reqs` on a fresh loop (all at once) and returns the collector and the loop's report.
/// `draft_blocks` > 0: with the draft model over a pool of that many blocks.
std::pair<std::unique_ptr<lf::test::collector>, load_report> run_all(compute_dtype dt, lf::kernels::kv_type kt,
                                                                      speculation_mode mode,
                                                                      const std::vector<lf::request_draft>& reqs,
                                                                      std::uint32_t draft_blocks = 0) {
  auto cfg = loop_config(mode);
  std::unique_ptr<draft_set> draft;
  if (draft_blocks > 0) {
    draft = std::make_unique<draft_set>(draft_blocks);
    cfg.method = speculation_method::draft;
    cfg.draft_blocks = draft_blocks;
    cfg.draft_block_size = 4;
    cfg.draft_context = static_cast<std::uint32_t>(fx().mc.n_positions);
  }
  engine_set e(dt, kt, cfg);
  serving_loop loop(e.runner, fx().tok, cfg, e.mgr.get(), draft ? &draft->runner : nullptr);
  auto c = std::make_unique<lf::test::collector>();
  for (std::size_t i = 0; i < reqs.size(); ++i)
    lf::test::submit(loop, reqs[i], c->make(static_cast<int>(i)));
  REQUIRE(c->wait_for(reqs.size(), std::chrono::seconds(180)));
  loop.stop(true);
  auto l = loop.load();
  CHECK(l.free_blocks == l.total_blocks);
  CHECK(l.draft_free_blocks == l.draft_total_blocks);  // every request's draft blocks freed at its end
  CHECK(l.draft_total_blocks == draft_blocks);
  return {std::move(c), l};
}

void check_identity(compute_dtype dt, lf::kernels::kv_type kt, std::uint32_t draft_blocks = 0) {
  const auto reqs = requests();
  auto [plain, plain_load] = run_all(dt, kt, speculation_mode::off, reqs);
  auto [spec, spec_load] = run_all(dt, kt, speculation_mode::on, reqs, draft_blocks);
  CHECK(plain_load.speculation.proposed == 0);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto k = static_cast<int>(i);
    INFO("request " << i << " (" << (reqs[i].params.temperature == 0 ? "greedy" : "sampled") << ", adapter '"
                    << reqs[i].adapter << "')");
    const auto want = plain->result(k);
    const auto got = spec->result(k);
    REQUIRE(got.outcome == request_outcome::finished);
    CHECK(got.finish_reason == want.finish_reason);
    CHECK(got.tokens == want.tokens);
    CHECK(got.text == want.text);
    CHECK(spec->events(k) == plain->events(k));
    CHECK(spec->terminals(k) == 1);
  }
  // The proposals were verified, some accepted and some rejected: the paths all ran.
  const auto& s = spec_load.speculation;
  INFO("proposed " << s.proposed << ", accepted " << s.accepted << ", rows " << s.rows);
  CHECK(s.proposed > 0);
  CHECK(s.accepted > 0);
  CHECK(s.accepted < s.proposed);
  CHECK(s.emitted == s.accepted + s.rows);
  if (draft_blocks > 0) {
    INFO("draft rows " << s.draft_rows << ", draft tokens " << s.draft_proposed << ", refused " << s.draft_refused);
    CHECK(s.draft_proposed > 0);
    CHECK(s.draft_ms > 0);
  }
}

/// Resubmits each of `reqs` to `loop` with the first `at` tokens `first` gave it, for every `at`
/// that `points(n)` names within its n tokens (at most n); `again` gets them as keys 0, 1, ...
/// Returns the (request, at) pair of each key.
std::vector<std::pair<std::size_t, std::size_t>> resubmit_cut(
    serving_loop& loop, const std::vector<lf::request_draft>& reqs, lf::test::collector& first,
    lf::test::collector& again, const std::function<std::vector<std::size_t>(std::size_t)>& points) {
  std::vector<std::pair<std::size_t, std::size_t>> cuts;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto n = first.result(static_cast<int>(i)).tokens.size();
    for (auto at : points(n))
      if (at <= n)
        cuts.emplace_back(i, at);
  }
  for (std::size_t k = 0; k < cuts.size(); ++k) {
    auto toks = first.result(static_cast<int>(cuts[k].first)).tokens;
    toks.resize(cuts[k].second);
    loop.submit(lf::test::validated(reqs[cuts[k].first]), std::nullopt, again.make(static_cast<int>(k)),
                std::move(toks));
  }
  return cuts;
}

} // namespace

TEST_CASE("speculative decoding changes no output: f32 weights and K/V", "[serving_loop][model][speculation]") {
  check_identity(compute_dtype::f32, lf::kernels::kv_type::f32);
}

TEST_CASE("speculative decoding changes no output: bf16 weights and K/V", "[serving_loop][model][speculation]") {
  check_identity(compute_dtype::bf16, lf::kernels::kv_type::bf16);
}

TEST_CASE("speculative decoding changes no output: int8 weights, bf16 K/V (the serving default)",
          "[serving_loop][model][speculation]") {
  check_identity(compute_dtype::int8, lf::kernels::kv_type::bf16);
}

TEST_CASE("speculative decoding changes no output: int8 K/V", "[serving_loop][model][speculation]") {
  check_identity(compute_dtype::int8, lf::kernels::kv_type::int8);
}

TEST_CASE("a request's own speculative field turns speculation on or off whatever the worker's policy",
          "[serving_loop][model][speculation]") {
  auto reqs = requests();
  for (auto& r : reqs)
    r.speculative = 3;
  auto [on, on_load] = run_all(compute_dtype::f32, lf::kernels::kv_type::f32, speculation_mode::off, reqs);
  CHECK(on_load.speculation.proposed > 0);
  for (auto& r : reqs)
    r.speculative = 0;
  auto [off, off_load] = run_all(compute_dtype::f32, lf::kernels::kv_type::f32, speculation_mode::on, reqs);
  CHECK(off_load.speculation.proposed == 0);
  for (std::size_t i = 0; i < reqs.size(); ++i)
    CHECK(on->result(static_cast<int>(i)).tokens == off->result(static_cast<int>(i)).tokens);
}

TEST_CASE("a request resumed mid-speculation continues exactly, on a worker that speculates or not",
          "[serving_loop][model][speculation][resume]") {
  const auto reqs = requests();
  auto [first, first_load] = run_all(compute_dtype::f32, lf::kernels::kv_type::f32, speculation_mode::on, reqs);
  REQUIRE(first_load.speculation.accepted > 0);
  for (auto mode : {speculation_mode::on, speculation_mode::off}) {
    const auto cfg = loop_config(mode);
    engine_set e(compute_dtype::f32, lf::kernels::kv_type::f32, cfg);
    serving_loop loop(e.runner, fx().tok, cfg, e.mgr.get());
    lf::test::collector again;
    const auto cuts = resubmit_cut(loop, reqs, *first, again, [](std::size_t n) {
      return std::vector<std::size_t>{1, n / 3, n / 2 + 1, n > 0 ? n - 1 : 0};
    });
    REQUIRE(again.wait_for(cuts.size(), std::chrono::seconds(180)));
    for (std::size_t k = 0; k < cuts.size(); ++k) {
      const auto i = static_cast<int>(cuts[k].first);
      INFO("request " << i << " resumed after " << cuts[k].second << " tokens on a worker with speculation "
                      << to_string(mode));
      const auto want = first->result(i);
      const auto got = again.result(static_cast<int>(k));
      REQUIRE(got.outcome == request_outcome::finished);
      CHECK(got.tokens == want.tokens);
      CHECK(got.text == want.text);
      auto events = first->events(i);
      events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(std::min(cuts[k].second, events.size())));
      CHECK(again.events(static_cast<int>(k)) == events);
    }
    loop.stop(true);
    CHECK(loop.load().free_blocks == loop.load().total_blocks);
  }
}

TEST_CASE("credits bound what speculation emits: a request pauses exactly at its allowance",
          "[serving_loop][model][speculation][credit]") {
  const auto reqs = requests();
  auto [plain, plain_load] = run_all(compute_dtype::f32, lf::kernels::kv_type::f32, speculation_mode::off, reqs);
  const auto cfg = loop_config(speculation_mode::on);
  engine_set e(compute_dtype::f32, lf::kernels::kv_type::f32, cfg);
  serving_loop loop(e.runner, fx().tok, cfg, e.mgr.get());
  lf::test::collector c;
  std::vector<request_id> ids;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    ids.push_back(loop.submit(lf::test::validated(reqs[i]), std::nullopt, c.make(static_cast<int>(i)), {}, {}, 5));
  for (std::size_t i = 0; i < reqs.size(); ++i)
    REQUIRE(c.wait_tokens(static_cast<int>(i), std::min<int>(5, static_cast<int>(plain->result(static_cast<int>(i)).tokens.size()))));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (std::size_t i = 0; i < reqs.size(); ++i)
    CHECK(c.tokens(static_cast<int>(i)) <= 5);  // never past the allowance
  for (auto id : ids)
    loop.credit(id, 0xffffffffu);
  REQUIRE(c.wait_for(reqs.size(), std::chrono::seconds(180)));
  for (std::size_t i = 0; i < reqs.size(); ++i)
    CHECK(c.result(static_cast<int>(i)).tokens == plain->result(static_cast<int>(i)).tokens);
  loop.stop(true);
}

TEST_CASE("a draft model's proposals change no output: f32 weights and K/V", "[serving_loop][model][speculation][draft]") {
  check_identity(compute_dtype::f32, lf::kernels::kv_type::f32, 512);
}

TEST_CASE("a draft model's proposals change no output: bf16 weights and K/V", "[serving_loop][model][speculation][draft]") {
  check_identity(compute_dtype::bf16, lf::kernels::kv_type::bf16, 512);
}

TEST_CASE("a draft model's proposals change no output: int8 weights, bf16 K/V", "[serving_loop][model][speculation][draft]") {
  check_identity(compute_dtype::int8, lf::kernels::kv_type::bf16, 512);
}

TEST_CASE("a draft model's proposals change no output: int8 K/V", "[serving_loop][model][speculation][draft]") {
  check_identity(compute_dtype::int8, lf::kernels::kv_type::int8, 512);
}

TEST_CASE("a draft pool too small for every row: the rest fall back to n-gram lookup, output unchanged",
          "[serving_loop][model][speculation][draft]") {
  const auto reqs = requests();
  auto [plain, plain_load] = run_all(compute_dtype::f32, lf::kernels::kv_type::f32, speculation_mode::off, reqs);
  auto [spec, spec_load] = run_all(compute_dtype::f32, lf::kernels::kv_type::f32, speculation_mode::on, reqs, 40);
  CHECK(spec_load.speculation.draft_refused > 0);
  CHECK(spec_load.speculation.draft_proposed > 0);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    INFO("request " << i);
    CHECK(spec->result(static_cast<int>(i)).tokens == plain->result(static_cast<int>(i)).tokens);
    CHECK(spec->events(static_cast<int>(i)) == plain->events(static_cast<int>(i)));
  }
}

TEST_CASE("a request resumed mid-speculation with the draft model continues exactly",
          "[serving_loop][model][speculation][draft][resume]") {
  const auto reqs = requests();
  auto [first, first_load] = run_all(compute_dtype::int8, lf::kernels::kv_type::bf16, speculation_mode::off, reqs);
  auto cfg = loop_config(speculation_mode::on);
  lf::test::collector again;  // before the loop: it outlives every callback
  draft_set draft(512);
  cfg.method = speculation_method::draft;
  cfg.draft_blocks = 512;
  cfg.draft_block_size = 4;
  cfg.draft_context = static_cast<std::uint32_t>(fx().mc.n_positions);
  engine_set e(compute_dtype::int8, lf::kernels::kv_type::bf16, cfg);
  serving_loop loop(e.runner, fx().tok, cfg, e.mgr.get(), &draft.runner);
  const auto cuts = resubmit_cut(loop, reqs, *first, again,
                                 [](std::size_t n) { return std::vector<std::size_t>{1, n / 2 + 1}; });
  REQUIRE(again.wait_for(cuts.size(), std::chrono::seconds(180)));
  for (std::size_t k = 0; k < cuts.size(); ++k) {
    const auto i = static_cast<int>(cuts[k].first);
    INFO("request " << i << " resumed after " << cuts[k].second << " tokens");
    CHECK(again.result(static_cast<int>(k)).tokens == first->result(i).tokens);
    CHECK(again.result(static_cast<int>(k)).text == first->result(i).text);
  }
  loop.stop(true);
  CHECK(loop.load().speculation.draft_proposed > 0);
  CHECK(loop.load().free_blocks == loop.load().total_blocks);
  CHECK(loop.load().draft_free_blocks == 512);
}

} // namespace test_serving_loop_spec
