// The serving loop's step batches (step_sink) over a fake engine: one batch per step with one
// entry per request that sampled, in the step's order; a request's terminal entry is its last;
// a cancel between steps ends a request in the next batch and nothing of it follows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "tests/unit/worker/loop_fixture.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using lf::test::fake_engine;
using lf::test::req;
using lf::test::recording_sink;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_serving_loop_batch {

namespace {

serving_config small_config() {
  serving_config c;
  c.num_blocks = 128;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 64;
  return c;
}

request_callbacks into(const std::shared_ptr<recording_sink>& sink, std::uint64_t tag) {
  request_callbacks cb;
  cb.sink = sink;
  cb.tag = tag;
  return cb;
}

/// What every batch sequence must satisfy: per request, tokens with contiguous indices from
/// `first`, then exactly one terminal entry and nothing after it; a request at most once per
/// batch, except a token followed by its terminal.
void check_streams(const std::vector<step_batch>& batches, std::size_t requests, std::uint32_t first = 0) {
  std::map<std::uint64_t, std::uint32_t> next;
  std::set<std::uint64_t> ended;
  for (const auto& b : batches) {
    std::set<std::uint64_t> tokened;
    for (const auto& e : b.entries) {
      INFO("request " << e.tag);
      CHECK(ended.count(e.tag) == 0);  // nothing after a terminal
      if (e.terminal()) {
        ended.insert(e.tag);
        continue;
      }
      CHECK(tokened.insert(e.tag).second);  // one token per request per step
      auto [it, added] = next.try_emplace(e.tag, first);
      CHECK(e.index == it->second);
      ++it->second;
    }
  }
  CHECK(ended.size() == requests);
}

} // namespace

TEST_CASE("a step with N live requests gives its sink one batch of N entries, in order", "[serving_loop][batch]") {
  // Requests 0..5 each take 3 prompt tokens and 20 output tokens. Timeline with all six running
  // (one decode each per step): batch = {0: t_k, 1: t_k, 2: t_k, 3: t_k, 4: t_k, 5: t_k}.
  constexpr int n = 6, out = 20;
  fake_engine eng(50257, std::chrono::microseconds(500));
  auto sink = std::make_shared<recording_sink>();
  serving_loop loop(eng, lf::test::repo_tokenizer(), small_config());
  std::vector<request_id> ids;
  for (int i = 0; i < n; ++i)
    ids.push_back(lf::test::submit(loop, req({100 + i, 200, 300 + i}, out), into(sink, i)));
  REQUIRE(sink->wait_ended(n));
  loop.stop(true);
  const auto batches = sink->batches();
  CHECK(sink->empty_batches() == 0);
  check_streams(batches, n);
  // One batch per step at most: the sink heard from the loop no more often than the engine ran.
  CHECK(batches.size() <= eng.steps());
  std::size_t full = 0, entries = 0;
  for (const auto& b : batches) {
    entries += b.entries.size();
    std::vector<std::uint64_t> tags;
    for (const auto& e : b.entries)
      if (!e.terminal())
        tags.push_back(e.tag);
    if (tags.size() != n)
      continue;
    ++full;
    CHECK(std::is_sorted(tags.begin(), tags.end()));  // the step's order: admission order
    for (const auto& e : b.entries)
      CHECK(e.id == ids[e.tag]);
  }
  CHECK(entries == n * out + n);       // every token and every terminal, once
  CHECK(full >= out - 2);              // all six decode together for most of their output
  CHECK(batches.size() < n * out / 2);  // far fewer deliveries than tokens
}

TEST_CASE("a request's terminal entry is its last, in the batch of its last token", "[serving_loop][batch]") {
  fake_engine eng;
  auto sink = std::make_shared<recording_sink>();
  serving_loop loop(eng, lf::test::repo_tokenizer(), small_config());
  for (int i = 0; i < 4; ++i)
    lf::test::submit(loop, req({10 + i, 20, 30}, 3 + 2 * i), into(sink, i));
  REQUIRE(sink->wait_ended(4));
  loop.stop(true);
  const auto batches = sink->batches();
  check_streams(batches, 4);
  for (const auto& b : batches)
    for (std::size_t k = 0; k < b.entries.size(); ++k) {
      const auto& e = b.entries[k];
      if (!e.terminal())
        continue;
      INFO("request " << e.tag);
      REQUIRE(e.result->outcome == request_outcome::finished);
      CHECK(e.result->finish_reason == "length");
      CHECK(e.result->tokens.size() == 3 + 2 * e.tag);
      // Its last token came earlier in the same batch (finished by max_tokens in that step).
      const auto last = std::find_if(b.entries.begin(), b.entries.begin() + k,
                                     [&](const step_entry& x) { return x.tag == e.tag; });
      REQUIRE(last != b.entries.begin() + k);
      CHECK(last->index == e.result->tokens.size() - 1);
    }
}

TEST_CASE("a cancel between steps ends the request in the next batch and nothing follows", "[serving_loop][batch]") {
  fake_engine eng(50257, std::chrono::milliseconds(2));
  auto sink = std::make_shared<recording_sink>();
  serving_loop loop(eng, lf::test::repo_tokenizer(), small_config());
  const auto victim = lf::test::submit(loop, req({1, 2, 3}, 200), into(sink, 0));
  lf::test::submit(loop, req({4, 5, 6}, 30), into(sink, 1));
  REQUIRE(sink->wait_tokens(0, 5));
  REQUIRE(loop.cancel(victim));
  REQUIRE(sink->wait_ended(2));
  loop.stop(true);
  const auto batches = sink->batches();
  check_streams(batches, 2);
  std::optional<request_result> cancelled;
  std::size_t after = 0;
  for (const auto& b : batches)
    for (const auto& e : b.entries) {
      if (e.tag != 0)
        continue;
      if (cancelled)
        ++after;
      if (e.terminal())
        cancelled = e.result;
    }
  REQUIRE(cancelled);
  CHECK(cancelled->outcome == request_outcome::cancelled);
  CHECK(cancelled->tokens.size() < 200);
  CHECK(after == 0);
  CHECK(loop.load().free_blocks == loop.load().total_blocks);
}

TEST_CASE("step entries carry what the per-request callbacks are told", "[serving_loop][batch]") {
  fake_engine eng;
  auto sink = std::make_shared<recording_sink>();
  lf::test::collector col;
  serving_loop loop(eng, lf::test::repo_tokenizer(), small_config());
  auto cb = col.make(0);
  cb.sink = sink;
  cb.tag = 7;
  lf::test::submit(loop, req({464, 3290, 318}, 12), std::move(cb));
  REQUIRE(sink->wait_ended(1));
  REQUIRE(col.wait_for(1));
  loop.stop(true);
  std::vector<std::pair<std::int32_t, std::string>> seen;
  std::optional<request_result> res;
  for (const auto& b : sink->batches())
    for (const auto& e : b.entries) {
      CHECK(e.tag == 7);
      if (e.terminal())
        res = e.result;
      else
        seen.emplace_back(e.token, e.text);
    }
  CHECK(seen == col.events(0));
  REQUIRE(res);
  CHECK(res->text == col.result(0).text);
  CHECK(res->tokens == col.result(0).tokens);
}

TEST_CASE("a resumed request's entries are numbered from its resumed tokens", "[serving_loop][batch]") {
  fake_engine eng;
  auto sink = std::make_shared<recording_sink>();
  serving_loop loop(eng, lf::test::repo_tokenizer(), small_config());
  loop.submit(lf::test::validated(req({1, 2, 3}, 10)), std::nullopt, into(sink, 0), {40, 41, 42});
  REQUIRE(sink->wait_ended(1));
  loop.stop(true);
  const auto batches = sink->batches();
  check_streams(batches, 1, 3);
  REQUIRE_FALSE(batches.empty());
  CHECK(batches.front().entries.front().index == 3);
}

TEST_CASE("a request refused by a stopped loop reaches its sink as one terminal entry", "[serving_loop][batch]") {
  fake_engine eng;
  auto sink = std::make_shared<recording_sink>();
  serving_loop loop(eng, lf::test::repo_tokenizer(), small_config());
  loop.stop(true);
  const auto id = lf::test::submit(loop, req({1, 2, 3}, 10), into(sink, 5));
  const auto batches = sink->batches();
  REQUIRE(batches.size() == 1);
  REQUIRE(batches[0].entries.size() == 1);
  const auto& e = batches[0].entries[0];
  CHECK(e.id == id);
  CHECK(e.tag == 5);
  REQUIRE(e.terminal());
  CHECK(e.result->error == lf::serve_errc::shutting_down);
}

} // namespace test_serving_loop_batch
