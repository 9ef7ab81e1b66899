// The serving loop's request lifecycle with a fake engine: exactly one terminal result per
// request, cancellation in every state, deadlines, draining, and no block leaks.
#include <catch2/catch.hpp>

#include <random>

#include "tests/unit/worker/loop_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using lf::test::collector;
using lf::test::fake_engine;
using lf::test::req;

namespace {

const lf::text::tokenizer& tok() { return lf::test::repo_tokenizer(); }

serving_config small_config(std::uint32_t blocks = 64) {
  serving_config c;
  c.num_blocks = blocks;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 32;
  return c;
}

} // namespace

TEST_CASE("every request ends exactly once and streams its text", "[serving_loop]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), small_config());
  for (int i = 0; i < 20; ++i)
    lf::test::submit(loop, req({100 + i, 200, 300 + i}, 5 + i % 7), col.make(i));
  REQUIRE(col.wait_for(20));
  loop.stop(true);
  for (int i = 0; i < 20; ++i) {
    auto r = col.result(i);
    INFO("request " << i);
    CHECK(col.terminals(i) == 1);
    CHECK(r.outcome == request_outcome::finished);
    CHECK(r.finish_reason == "length");
    CHECK(r.tokens.size() == static_cast<std::size_t>(5 + i % 7));
    CHECK(col.streamed(i) == r.text);
    CHECK(r.usage.prompt_tokens == 3);
    CHECK(r.timings.total_ms >= r.timings.ttft_ms);
  }
  auto l = loop.load();
  CHECK(l.free_blocks == l.total_blocks);
  CHECK(l.finished == 20);
}

TEST_CASE("a request that can never fit the KV pool is refused", "[serving_loop]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), small_config(8));  // 8 blocks of 4 tokens = 32 tokens in all
  lf::test::submit(loop, req(std::vector<std::int32_t>(30, 5), 10), col.make(0));
  REQUIRE(col.wait_for(1, std::chrono::seconds(10)));
  CHECK(col.result(0).error == lf::serve_errc::prompt_too_long);
}

TEST_CASE("deadlines end requests with timeout", "[serving_loop]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), small_config());
  lf::test::submit(loop, req({1, 2, 3}, 50), col.make(0),
                   std::chrono::steady_clock::now() - std::chrono::milliseconds(1));
  REQUIRE(col.wait_for(1, std::chrono::seconds(10)));
  CHECK(col.result(0).error == lf::serve_errc::timeout);
  CHECK(loop.load().free_blocks == loop.load().total_blocks);
}

TEST_CASE("1000 random requests with random cancels leak no blocks", "[serving_loop]") {
  fake_engine eng;
  collector col;
  auto cfg = small_config(48);  // small pool: preemption happens
  serving_loop loop(eng, tok(), cfg);
  std::mt19937 rng(7);
  std::vector<request_id> ids;
  const int n = 1000;
  for (int i = 0; i < n; ++i) {
    std::vector<std::int32_t> prompt(1 + rng() % 24);
    for (auto& t : prompt)
      t = static_cast<std::int32_t>(rng() % 1000);
    ids.push_back(lf::test::submit(loop, req(prompt, 1 + static_cast<int>(rng() % 20)), col.make(i)));
    if (rng() % 5 == 0)
      loop.cancel(ids[rng() % ids.size()]);
  }
  REQUIRE(col.wait_for(n, std::chrono::seconds(120)));
  loop.stop(true);
  int cancelled = 0, finished = 0;
  for (int i = 0; i < n; ++i) {
    REQUIRE(col.terminals(i) == 1);
    auto r = col.result(i);
    cancelled += r.outcome == request_outcome::cancelled;
    finished += r.outcome == request_outcome::finished;
    if (r.outcome == request_outcome::finished)
      CHECK(col.streamed(i) == r.text);
  }
  CHECK(cancelled + finished == n);
  CHECK(cancelled > 0);
  auto l = loop.load();
  CHECK(l.free_blocks == l.total_blocks);
  CHECK(l.running == 0);
  CHECK(l.waiting == 0);
}

TEST_CASE("cancel in every state frees the request's blocks", "[serving_loop]") {
  fake_engine eng(50257, std::chrono::milliseconds(2));  // 200 steps take 400 ms at least
  collector col;
  auto cfg = small_config(64);
  cfg.sched.max_seqs = 1;  // one runs, the rest wait
  serving_loop loop(eng, tok(), cfg);
  auto a = lf::test::submit(loop, req({1, 2, 3}, 200), col.make(0));  // decoding for a while
  auto b = lf::test::submit(loop, req({4, 5, 6}, 10), col.make(1));   // waiting behind it
  // Wait until `a` has streamed, then cancel both.
  REQUIRE(col.wait_tokens(0, 3));
  CHECK(loop.cancel(b));
  CHECK(loop.cancel(a));
  REQUIRE(col.wait_for(2, std::chrono::seconds(10)));
  CHECK(col.result(0).outcome == request_outcome::cancelled);
  CHECK(col.result(1).outcome == request_outcome::cancelled);
  CHECK(col.result(1).tokens.empty());
  CHECK_FALSE(loop.cancel(request_id{999}));
  loop.stop(true);
  CHECK(loop.load().free_blocks == loop.load().total_blocks);
}

TEST_CASE("stop without drain cancels in-flight requests, later submits are refused", "[serving_loop]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), small_config());
  for (int i = 0; i < 5; ++i)
    lf::test::submit(loop, req({1, 2, 3}, 200), col.make(i));
  loop.stop(false);
  REQUIRE(col.wait_for(5, std::chrono::seconds(10)));
  for (int i = 0; i < 5; ++i)
    CHECK(col.terminals(i) == 1);
  lf::test::submit(loop, req({1}, 2), col.make(9));
  REQUIRE(col.wait_for(6, std::chrono::seconds(5)));
  CHECK(col.result(9).error == lf::serve_errc::shutting_down);
}

namespace {

/// Runs the same 13-token prompt for each tenant in turn on one loop with prefix-cache
/// isolation `iso`; returns each request's usage.cached_tokens.
std::vector<std::uint32_t> cached_by_turn(lf::cache::prefix_isolation iso, const std::vector<std::string>& tenants) {
  fake_engine eng;
  collector col;
  auto cfg = small_config();
  cfg.sched.isolation = iso;
  serving_loop loop(eng, tok(), cfg);
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    auto d = req({11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, 2);
    d.tenant = tenants[i];
    lf::test::submit(loop, std::move(d), col.make(static_cast<int>(i)));
    REQUIRE(col.wait_for(i + 1));
    out.push_back(static_cast<std::uint32_t>(col.result(static_cast<int>(i)).usage.cached_tokens));
  }
  loop.stop(true);
  return out;
}

} // namespace

TEST_CASE("prefix-cache isolation: tenants do not hit each other's prompts, each hits its own",
          "[serving_loop][isolation]") {
  const std::vector<std::string> turns = {"acme", "globex", "", "acme", "globex", ""};
  CHECK(cached_by_turn(lf::cache::prefix_isolation::tenant, turns)
        == std::vector<std::uint32_t>{0, 0, 0, 12, 12, 12});
  CHECK(cached_by_turn(lf::cache::prefix_isolation::shared, turns)
        == std::vector<std::uint32_t>{0, 12, 12, 12, 12, 12});
}
