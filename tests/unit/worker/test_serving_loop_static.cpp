// The static modes as the serving loop's policies, with a fake engine: a batch runs until its
// last request has ended before the next one starts (synchronous batching), and without a KV
// cache every token is sampled after computing the whole sequence again.
#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "tests/unit/worker/loop_fixture.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using lf::test::fake_engine;
using lf::test::req;

namespace {

serving_config static_config(batching_mode mode, std::uint32_t batch) {
  serving_config c;
  c.num_blocks = 64;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 64;
  c.mode = mode;
  c.static_batch = batch;
  c.static_wait = std::chrono::milliseconds(0);
  return c;
}

/// What the loop streamed, in order: "A" for a token of request A, "A." for its end.
struct event_log {
  std::mutex m;
  std::vector<std::string> events;

  request_callbacks make(const std::string& name) {
    request_callbacks cb;
    cb.on_token = [this, name](std::int32_t, std::string_view) { add(name); };
    cb.on_done = [this, name](request_result) { add(name + "."); };
    return cb;
  }
  void add(std::string e) {
    std::lock_guard<std::mutex> g(m);
    events.push_back(std::move(e));
  }
  std::size_t index_of(const std::string& e) {
    std::lock_guard<std::mutex> g(m);
    return static_cast<std::size_t>(std::find(events.begin(), events.end(), e) - events.begin());
  }
  std::size_t size() {
    std::lock_guard<std::mutex> g(m);
    return events.size();
  }
};

bool wait_until(const std::function<bool()>& f) {
  for (int i = 0; i < 6000; ++i) {
    if (f())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

lf::request_draft greedy(std::vector<std::int32_t> prompt, int max_tokens) {
  auto d = req(std::move(prompt), max_tokens);
  d.params.ignore_eos = true;
  return d;
}

} // namespace

TEST_CASE("static batching starts the next batch only when the last one has ended", "[serving_loop]") {
  for (auto mode : {batching_mode::static_batch, batching_mode::static_no_cache}) {
    INFO("mode " << to_string(mode));
    fake_engine eng(50257, std::chrono::microseconds(2000));
    event_log log;
    serving_loop loop(eng, lf::test::repo_tokenizer(), static_config(mode, 2));
    lf::test::submit(loop, greedy({10, 11, 12}, 30), log.make("A"));
    lf::test::submit(loop, greedy({20, 21}, 2), log.make("B"));
    // B has ended; A runs on alone. C arrives now: it waits for A, though a slot is free.
    REQUIRE(wait_until([&] { return log.index_of("B.") < log.size(); }));
    lf::test::submit(loop, greedy({30}, 3), log.make("C"));
    REQUIRE(wait_until([&] { return log.index_of("C.") < log.size(); }));
    CHECK(log.index_of("A.") < log.index_of("C"));
    loop.stop(true);
    auto l = loop.load();
    CHECK(l.finished == 3);
    CHECK(l.free_blocks == l.total_blocks);
  }
}

TEST_CASE("continuous batching lets a new request join a running batch", "[serving_loop]") {
  fake_engine eng(50257, std::chrono::microseconds(2000));
  event_log log;
  serving_loop loop(eng, lf::test::repo_tokenizer(), static_config(batching_mode::continuous, 2));
  lf::test::submit(loop, greedy({10, 11, 12}, 60), log.make("A"));
  REQUIRE(wait_until([&] { return log.size() >= 2; }));
  lf::test::submit(loop, greedy({30}, 3), log.make("C"));
  REQUIRE(wait_until([&] { return log.index_of("C.") < log.size(); }));
  CHECK(log.index_of("C.") < log.index_of("A."));
  loop.stop(false);
}

TEST_CASE("without a KV cache every token recomputes the sequence, with the same tokens", "[serving_loop]") {
  // A 3-token prompt and 5 tokens: with the cache 3 + 4 positions are computed (the last token is
  // never fed back); without it 3 + 4 + 5 + 6 + 7.
  std::vector<std::vector<std::int32_t>> outputs;
  for (auto [mode, positions] : {std::pair{batching_mode::static_batch, 7}, std::pair{batching_mode::static_no_cache, 25}}) {
    INFO("mode " << to_string(mode));
    fake_engine eng;
    lf::test::collector col;
    serving_loop loop(eng, lf::test::repo_tokenizer(), static_config(mode, 1));
    lf::test::submit(loop, greedy({5, 6, 7}, 5), col.make(0));
    REQUIRE(col.wait_for(1));
    loop.stop(true);
    CHECK(eng.positions() == static_cast<std::uint64_t>(positions));
    CHECK(col.result(0).tokens.size() == 5);
    outputs.push_back(col.result(0).tokens);
  }
  CHECK(outputs[0] == outputs[1]);
}

TEST_CASE("without a KV cache the prefix cache is off, whatever the config says", "[serving_loop]") {
  fake_engine eng;
  lf::test::collector col;
  auto cfg = static_config(batching_mode::static_no_cache, 1);
  cfg.prefix_cache = true;
  serving_loop loop(eng, lf::test::repo_tokenizer(), cfg);
  // The same prompt twice, one after the other: a prefix cache would skip the second's prompt.
  lf::test::submit(loop, greedy({1, 2, 3, 4, 5, 6, 7, 8, 9}, 1), col.make(0));
  REQUIRE(col.wait_for(1));
  lf::test::submit(loop, greedy({1, 2, 3, 4, 5, 6, 7, 8, 9}, 1), col.make(1));
  REQUIRE(col.wait_for(2));
  loop.stop(true);
  CHECK(eng.positions() == 18);
  CHECK(col.result(1).usage.cached_tokens == 0);
}
