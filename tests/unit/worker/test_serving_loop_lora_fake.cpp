// The serving loop's adapter handling with a fake engine and fake adapter loads: a cold adapter
// does not hold up anyone else, many requests for an adapter being loaded proceed after one load,
// a failed load ends exactly the requests that need it, references pin adapters while requests
// run, and a request naming an adapter is never served by the base model.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "cache/adapter_manager.hpp"
#include "tests/unit/worker/loop_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using lf::cache::adapter_state;
using lf::serve_errc;
using namespace std::chrono_literals;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_serving_loop_lora_fake {

namespace {

const lf::text::tokenizer& tok() {
  static auto t = lf::text::tokenizer::from_dir(std::string(LF_SOURCE_DIR) + "/models/tokenizer");
  return t;
}

struct fake_weights final : lf::cache::adapter_payload {
  std::size_t bytes() const noexcept override { return 100; }
};

/// Loads instantly, except names in `gated` (they wait until opened) and names starting with
/// "broken" (they fail). Counts loads.
struct gated_loader {
  std::mutex m;
  std::condition_variable cv;
  std::set<std::string> gated;
  std::map<std::string, int> loads;

  lf::cache::adapter_load_fn fn() {
    return [this](const std::string& name) -> std::shared_ptr<const lf::cache::adapter_payload> {
      std::unique_lock<std::mutex> lk(m);
      ++loads[name];
      cv.wait_for(lk, 60s, [&] { return gated.count(name) == 0; });
      if (name.rfind("broken", 0) == 0)
        throw lf::cache::adapter_load_error(serve_errc::unknown_adapter,
                                            "adapter \"" + name + "\": adapter_config.json: bad");
      return std::make_shared<fake_weights>();
    };
  }
  void open(const std::string& name) {
    {
      std::lock_guard<std::mutex> g(m);
      gated.erase(name);
    }
    cv.notify_all();
  }
  int count(const std::string& name) {
    std::lock_guard<std::mutex> g(m);
    return loads[name];
  }
};

lf::request_draft req(std::vector<std::int32_t> prompt, int max_tokens, std::string adapter = {}) {
  lf::request_draft r;
  r.prompt = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.adapter = std::move(adapter);
  return r;
}

serving_config config() {
  serving_config c;
  c.num_blocks = 64;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 64;
  return c;
}

std::unique_ptr<lf::cache::adapter_manager> manager(gated_loader& l, std::uint32_t max_adapters = 8,
                                                    unsigned threads = 2) {
  lf::cache::adapter_cache_config c;
  c.max_adapters = max_adapters;
  return std::make_unique<lf::cache::adapter_manager>(c, l.fn(), nullptr, threads);
}

} // namespace

TEST_CASE("a cold adapter does not hold up other requests", "[serving_loop][lora]") {
  gated_loader loader;
  loader.gated = {"slow"};
  auto mgr = manager(loader);
  lf::test::fake_engine engine(50257, 200us);
  lf::test::collector col;
  serving_loop loop(engine, tok(), config(), mgr.get());
  for (int i = 0; i < 6; ++i)  // many requests for the adapter being loaded
    lf::test::submit(loop, req({1, 2, 3}, 4, "slow"), col.make(i));
  lf::test::submit(loop, req({4, 5}, 6), col.make(10));         // base model
  lf::test::submit(loop, req({6, 7}, 6, "fast"), col.make(11));  // another adapter, loads at once
  REQUIRE(col.wait_for(2, 60s));
  CHECK(col.result(10).outcome == request_outcome::finished);
  CHECK(col.result(11).outcome == request_outcome::finished);
  CHECK(col.ended() == 2);  // the "slow" ones still wait
  CHECK(col.tokens(0) == 0);
  auto l = loop.load();
  CHECK(l.waiting == 6);
  loader.open("slow");
  REQUIRE(col.wait_for(8, 60s));
  for (int i = 0; i < 6; ++i) {
    INFO("request " << i);
    CHECK(col.result(i).outcome == request_outcome::finished);
    CHECK(col.result(i).tokens.size() == 4);
  }
  CHECK(loader.count("slow") == 1);
  loop.stop(true);
  auto s = loop.load().adapters;
  CHECK(s.loads == 2);
  CHECK(s.loaded == 2);
  // Every request gave its reference back.
  CHECK(mgr->info(mgr->acquire("slow").id).refs == 1);
}

TEST_CASE("a failed adapter load fails exactly the requests that need it", "[serving_loop][lora]") {
  gated_loader loader;
  loader.gated = {"broken"};
  auto mgr = manager(loader);
  lf::test::fake_engine engine;
  lf::test::collector col;
  serving_loop loop(engine, tok(), config(), mgr.get());
  for (int i = 0; i < 3; ++i)
    lf::test::submit(loop, req({1, 2, 3}, 4, "broken"), col.make(i));
  lf::test::submit(loop, req({4, 5}, 3), col.make(10));
  REQUIRE(col.wait_tokens(10, 3));
  loader.open("broken");
  REQUIRE(col.wait_for(4, 60s));
  for (int i = 0; i < 3; ++i) {
    auto r = col.result(i);
    INFO("request " << i << ": " << r.message);
    CHECK(r.outcome == request_outcome::failed);
    CHECK(r.error == serve_errc::unknown_adapter);
    CHECK_THAT(r.message, Catch::Contains("adapter_config.json: bad"));
    CHECK(r.tokens.empty());  // never served by the base model
    CHECK(col.terminals(i) == 1);
  }
  CHECK(col.result(10).outcome == request_outcome::finished);
  // Within the retry window a new request fails at once, with no new load.
  lf::test::submit(loop, req({1}, 2, "broken"), col.make(20));
  REQUIRE(col.wait_for(5, 60s));
  CHECK(col.result(20).error == serve_errc::unknown_adapter);
  CHECK(loader.count("broken") == 1);
  loop.stop(true);
  CHECK(loop.load().adapters.failures == 1);
}

TEST_CASE("the adapter manager's name check refuses, a worker without adapters refuses them",
          "[serving_loop][lora]") {
  gated_loader loader;
  lf::cache::adapter_cache_config c;
  // Well-formed names passed the edge; the manager still checks them against its filesystem.
  auto mgr = std::make_unique<lf::cache::adapter_manager>(c, loader.fn(), [](const std::string& n) {
    return n.rfind("secret", 0) != 0 ? std::string() : "adapter id refused: outside the root";
  });
  lf::test::fake_engine engine;
  lf::test::collector col;
  {
    serving_loop loop(engine, tok(), config(), mgr.get());
    lf::test::submit(loop, req({1, 2}, 2, "secret/escape"), col.make(0));
    REQUIRE(col.wait_for(1, 60s));
    CHECK(col.result(0).error == serve_errc::invalid_request);
    CHECK(col.result(0).message == "adapter id refused: outside the root");
  }
  serving_loop bare(engine, tok(), config());
  lf::test::submit(bare, req({1, 2}, 2, "anything"), col.make(1));
  REQUIRE(col.wait_for(2, 60s));
  CHECK(col.result(1).error == serve_errc::unknown_adapter);
  CHECK_THAT(col.result(1).message, Catch::Contains("serves no LoRA adapters"));
  CHECK(col.result(1).tokens.empty());
}

TEST_CASE("a running request pins its adapter, the next one loads after it ends",
          "[serving_loop][lora]") {
  gated_loader loader;
  auto mgr = manager(loader, 1);  // room for one adapter
  lf::test::fake_engine engine(50257, 500us);
  lf::test::collector col;
  serving_loop loop(engine, tok(), config(), mgr.get());
  lf::test::submit(loop, req({1, 2, 3}, 40, "a"), col.make(0));
  REQUIRE(col.wait_tokens(0, 1));
  lf::test::submit(loop, req({4, 5, 6}, 5, "b"), col.make(1));
  REQUIRE(col.wait_tokens(0, 10));
  // "a" is running, so "b" cannot evict it: it waits for room.
  auto during = loop.load().adapters;
  CHECK(during.queued == 1);
  CHECK(during.loaded == 1);
  CHECK(col.tokens(1) == 0);
  REQUIRE(col.wait_for(2, 60s));
  CHECK(col.result(0).outcome == request_outcome::finished);
  CHECK(col.result(1).outcome == request_outcome::finished);
  loop.stop(true);
  auto s = loop.load().adapters;
  CHECK(s.loads == 2);
  CHECK(s.evictions == 1);
  CHECK(mgr->resident_names() == std::vector<std::string>{"b"});
}

} // namespace test_serving_loop_lora_fake
