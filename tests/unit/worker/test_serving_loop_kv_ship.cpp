// Moving a request with its K/V (what a drain does): the old serving loop's cancel(id, ship_kv)
// ends the request as `moved` with the K/V of its computed whole blocks; the new loop's submit
// imports them into its prefix cache and computes only the rest. On the tiny GPT-2 and the
// serving engine: the new worker streams exactly the undisturbed run's events from where the old
// one stopped, and its admission found the shipped blocks (usage.cached_tokens); a blob that does
// not fit (another model, other tokens, a cut size) is refused and the request is recomputed,
// still exactly.
#include "tests/support/catch_aten.hpp"

#include <atomic>
#include <memory>
#include <thread>

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
namespace test_serving_loop_kv_ship {

namespace {

lf::test::model_fixture& fx() { return lf::test::model_fx(); }

/// One worker: model, K/V store, runner, adapters, loop.
struct worker_under_test {
  serving_config cfg;
  std::unique_ptr<lf::cache::adapter_manager> mgr;
  cpu_model model;
  lf::kernels::kv_cache kv;
  cpu_runner runner;
  serving_loop loop;

  worker_under_test(const std::string& dir, compute_dtype dt, lf::kernels::kv_type kt)
    : cfg(config()), mgr(make_cpu_lora_manager(fx().root, fx().mc, {})),
      model(load_cpu_weights(dir, dt), 2),
      kv({fx().mc.n_layer, fx().mc.n_head, fx().mc.head_dim(), static_cast<int>(cfg.block_size), cfg.num_blocks, kt}),
      runner(model, kv, mgr->lookup()), loop(runner, fx().tok, cfg, mgr.get()) {}

  static serving_config config() {
    serving_config c;
    c.num_blocks = 256;
    c.block_size = 4;
    c.sched.max_seqs = 16;
    c.sched.max_batched_tokens = 64;
    c.eos_id = fx().tok.eos_id();
    return c;
  }
};

/// Long enough to be moved mid-stream: greedy and seeded, base model and adapter.
std::vector<lf::request_draft> requests() {
  const std::vector<std::string> texts = {"Once upon a time there was a fox", "To be, or not to be",
                                          "It was the best of times, it was the worst", "Call me Ishmael."};
  std::vector<lf::request_draft> out;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    lf::request_draft d;
    d.prompt = fx().tok.encode(texts[i]);
    d.adapter = i % 2 == 1 ? "one" : "";
    // Named tenants' blocks are salted (prefix-cache isolation): the import must salt them the
    // same way, or admission would not find them (usage.cached_tokens, below).
    d.tenant = i == 0 ? "" : i == 3 ? "globex" : "acme";
    d.params.max_tokens = 48;
    d.params.ignore_eos = true;
    if (i >= 2) {
      d.params.temperature = 0.8f;
      d.params.top_p = 0.9f;
      d.params.seed = 77 + i;
    } else {
      d.params.temperature = 0;
    }
    out.push_back(std::move(d));
  }
  return out;
}

/// Runs `reqs` undisturbed on `w`.
lf::test::collector& undisturbed(worker_under_test& w, const std::vector<lf::request_draft>& reqs,
                                 lf::test::collector& col) {
  for (std::size_t i = 0; i < reqs.size(); ++i)
    lf::test::submit(w.loop, reqs[i], col.make(static_cast<int>(i)));
  REQUIRE(col.wait_for(reqs.size(), std::chrono::seconds(120)));
  return col;
}

/// Moves each request from `from` to `to` after at least `after` tokens; `edit` may spoil the
/// blob on the way. Checks the moved streams against `want`; returns the blobs' total tokens.
std::size_t move_all(worker_under_test& from, worker_under_test& to, const std::vector<lf::request_draft>& reqs,
                     lf::test::collector& want, int after, const std::function<void(kv_blob&)>& edit = {}) {
  lf::test::collector old_side, new_side;
  // The loop thread itself asks for the move once `after` tokens are out (the test thread could
  // be too late for a fast model): at most a step's token more follows before it goes.
  struct mover {
    std::atomic<std::uint64_t> id{0};
    std::atomic<bool> asked{false};
  };
  std::vector<std::shared_ptr<mover>> movers;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    auto m = std::make_shared<mover>();
    auto cb = old_side.make(static_cast<int>(i));
    cb.on_token = [inner = cb.on_token, m, &loop = from.loop, after, n = 0](std::int32_t t,
                                                                             std::string_view text) mutable {
      inner(t, text);
      if (++n >= after && !m->asked.exchange(true)) {
        // The test thread stores the id as submit returns; under load the loop can get here
        // first (and, without this wait, finish the request before it is ever moved).
        while (m->id == 0)
          std::this_thread::yield();
        loop.cancel(request_id{m->id}, true);
      }
    };
    m->id = lf::test::submit(from.loop, reqs[i], std::move(cb)).value();
    movers.push_back(m);
  }
  REQUIRE(old_side.wait_for(reqs.size(), std::chrono::seconds(120)));
  std::size_t shipped = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const int k = static_cast<int>(i);
    auto r = old_side.result(k);
    REQUIRE(r.moved);
    REQUIRE(r.outcome == request_outcome::cancelled);
    std::vector<std::int32_t> resume;
    for (auto& [t, text] : old_side.events(k))
      resume.push_back(t);
    // Whole blocks of what the old worker computed: at most prompt + streamed - 1 positions.
    CHECK(r.kv.tokens.size() % from.cfg.block_size == 0);
    CHECK(r.kv.tokens.size() + 1 <= reqs[i].prompt.size() + resume.size());
    CHECK(r.kv.tokens.size() + from.cfg.block_size + 1 > reqs[i].prompt.size() + resume.size());
    shipped += r.kv.tokens.size();
    if (edit)
      edit(r.kv);
    to.loop.submit(lf::test::validated(reqs[i]), std::nullopt, new_side.make(k), resume, r.kv);
  }
  REQUIRE(new_side.wait_for(reqs.size(), std::chrono::seconds(120)));
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const int k = static_cast<int>(i);
    const auto moved_at = old_side.events(k).size();
    INFO("request " << i << " moved after " << moved_at << " tokens");
    const auto got = new_side.result(k);
    REQUIRE(got.outcome == request_outcome::finished);
    CHECK(got.tokens == want.result(k).tokens);
    CHECK(got.text == want.result(k).text);
    auto events = want.events(k);
    events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(moved_at));
    CHECK(new_side.events(k) == events);
    CHECK(new_side.terminals(k) == 1);
    if (!edit)  // admission found every shipped block in the prefix cache
      CHECK(got.usage.cached_tokens >= old_side.result(k).kv.tokens.size());
  }
  return shipped;
}

void check_shipping(compute_dtype dt, lf::kernels::kv_type kt) {
  worker_under_test a(fx().dir, dt, kt), b(fx().dir, dt, kt), ref(fx().dir, dt, kt);
  const auto reqs = requests();
  lf::test::collector want;
  undisturbed(ref, reqs, want);
  for (int after : {1, 9, 30}) {
    const auto before = b.loop.load();
    const auto shipped = move_all(a, b, reqs, want, after);
    const auto l = b.loop.load();
    INFO("moved after " << after << " tokens");
    CHECK(shipped > 0);
    CHECK(l.kv_refused == before.kv_refused);
    CHECK(l.kv_imported_tokens > before.kv_imported_tokens);
    CHECK(a.loop.load().kv_exported_tokens >= shipped);
  }
  a.loop.stop(true);
  b.loop.stop(true);
  CHECK(a.loop.load().free_blocks == a.loop.load().total_blocks);
  CHECK(b.loop.load().free_blocks == b.loop.load().total_blocks);
}

} // namespace

TEST_CASE("a moved request brings its K/V and continues exactly: int8 weights, bf16 K/V",
          "[serving_loop][model][kv_ship]") {
  check_shipping(compute_dtype::int8, lf::kernels::kv_type::bf16);
}

TEST_CASE("a moved request brings its K/V and continues exactly: f32 weights, int8 K/V (scales travel)",
          "[serving_loop][model][kv_ship]") {
  check_shipping(compute_dtype::f32, lf::kernels::kv_type::int8);
}

TEST_CASE("K/V that does not fit is refused and the request is recomputed, still exactly",
          "[serving_loop][model][kv_ship]") {
  const auto dt = compute_dtype::int8;
  const auto kt = lf::kernels::kv_type::bf16;
  worker_under_test a(fx().dir, dt, kt), b(fx().dir, dt, kt), ref(fx().dir, dt, kt);
  worker_under_test stranger(fx().other, dt, kt), f32_store(fx().dir, dt, lf::kernels::kv_type::f32);
  CHECK(a.runner.kv_format() == b.runner.kv_format());
  CHECK(a.runner.kv_format() != stranger.runner.kv_format());   // another model
  CHECK(a.runner.kv_format() != f32_store.runner.kv_format());  // another store type
  const auto reqs = requests();
  lf::test::collector want;
  undisturbed(ref, reqs, want);
  std::uint64_t refused = 0;
  auto expect_refusals = [&](const char* what, const std::function<void(kv_blob&)>& edit) {
    INFO(what);
    move_all(a, b, reqs, want, 12, edit);
    refused += reqs.size();
    CHECK(b.loop.load().kv_refused == refused);
  };
  expect_refusals("another model", [&](kv_blob& kv) { kv.format = stranger.runner.kv_format(); });
  expect_refusals("other tokens", [](kv_blob& kv) { kv.tokens[1] ^= 1; });
  expect_refusals("a cut size", [](kv_blob& kv) { kv.bytes.pop_back(); });
  expect_refusals("not whole blocks", [](kv_blob& kv) { kv.tokens.pop_back(); });
  CHECK(b.loop.load().kv_imported_tokens == 0);
}

TEST_CASE("a cancel without ship_kv is a plain cancellation", "[serving_loop][model][kv_ship]") {
  worker_under_test a(fx().dir, compute_dtype::int8, lf::kernels::kv_type::bf16);
  lf::test::collector col;
  std::atomic<std::uint64_t> id{0};
  auto cb = col.make(0);
  cb.on_token = [inner = cb.on_token, &id, &loop = a.loop](std::int32_t t, std::string_view text) {
    inner(t, text);
    if (id != 0)
      loop.cancel(request_id{id});  // from the loop thread: before the request can finish
  };
  id = lf::test::submit(a.loop, requests()[0], std::move(cb)).value();
  REQUIRE(col.wait_for(1));
  CHECK_FALSE(col.result(0).moved);
  CHECK(col.result(0).kv.empty());
  CHECK(col.result(0).error == lf::serve_errc::cancelled);
  CHECK(a.loop.load().kv_exported_tokens == 0);
}

} // namespace test_serving_loop_kv_ship
