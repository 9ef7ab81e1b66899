// The worker side of the prefix-cache events (cache/prefix_events.hpp): the block manager tells
// its log what enters and leaves the index, in public hashes the router computes from a prompt.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "cache/block_manager.hpp"
#include "cache/cache_salt.hpp"
#include "cache/prefix_events.hpp"

using namespace lf::cache;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_prefix_events {

namespace {

using tokens = std::vector<std::int32_t>;
using clock_type = prefix_event_log::clock;

tokens iota_tokens(std::size_t n, std::int32_t first) {
  tokens t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

/// allocate + commit the whole prompt, then free it (its full blocks stay cached).
void prefill(block_manager& bm, std::uint64_t s, const tokens& prompt, adapter_id a = base_model,
             cache_salt salt = no_salt) {
  REQUIRE(bm.allocate(seq_id{s}, prompt, a, salt).has_value());
  bm.commit_tokens(seq_id{s}, prompt, static_cast<std::uint32_t>(prompt.size()));
  bm.free(seq_id{s});
}

std::vector<std::uint64_t> sorted(std::vector<std::uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

prefix_event_options no_rate_bound() {
  prefix_event_options o;
  o.min_interval = std::chrono::milliseconds(0);
  return o;
}

} // namespace

TEST_CASE("indexed blocks are announced in the public hashes the router computes from the prompt",
          "[prefix_events]") {
  block_manager bm({16, 4, true, nullptr});
  prefix_event_log log(no_rate_bound());
  bm.attach_events(&log);
  const auto prompt = iota_tokens(14, 100);  // 3 full blocks of 4, and 2 tokens
  prefill(bm, 1, prompt);
  auto b = log.take(clock_type::now());
  CHECK(b.seq == 1);
  CHECK_FALSE(b.snapshot);
  CHECK(b.removed.empty());
  CHECK(sorted(b.stored) == sorted(public_block_hashes(prompt, 4, no_salt, 0)));
  CHECK(log.size() == 3);
  // Nothing new: nothing due, and take() says so with seq 0.
  CHECK_FALSE(log.due(clock_type::now()));
  CHECK(log.take(clock_type::now()).seq == 0);
}

TEST_CASE("the salt and the adapter key enter the public hashes", "[prefix_events]") {
  block_manager bm({32, 4, true, nullptr});
  prefix_event_log log(no_rate_bound());
  bm.attach_events(&log);
  const auto prompt = iota_tokens(8, 7);
  const auto salt = tenant_salt("acme");
  const auto tag = adapter_tag("sql@2");
  bm.name_adapter(adapter_id{3}, tag);
  prefill(bm, 1, prompt, adapter_id{3}, salt);
  auto b = log.take(clock_type::now());
  CHECK(sorted(b.stored) == sorted(public_block_hashes(prompt, 4, salt, tag)));
  const auto plain = public_block_hashes(prompt, 4, no_salt, 0);
  CHECK(std::find(b.stored.begin(), b.stored.end(), plain[0]) == b.stored.end());
  CHECK(public_block_hashes(prompt, 4, salt, 0) != public_block_hashes(prompt, 4, salt, tag));
  CHECK(public_block_hashes(prompt, 4, no_salt, adapter_tag("sql@1")) != public_block_hashes(prompt, 4, no_salt, tag));
}

TEST_CASE("an evicted block is withdrawn", "[prefix_events]") {
  block_manager bm({4, 4, true, nullptr});
  prefix_event_log log(no_rate_bound());
  bm.attach_events(&log);
  const auto first = iota_tokens(9, 0);  // 2 full blocks
  prefill(bm, 1, first);
  const auto stored = log.take(clock_type::now()).stored;
  REQUIRE(stored.size() == 2);
  // A 16-token prompt of other tokens needs the whole pool: both cached blocks are evicted.
  const auto other = iota_tokens(16, 500);
  REQUIRE(bm.allocate(seq_id{2}, other, base_model, no_salt).has_value());
  auto b = log.take(clock_type::now());
  CHECK(b.seq == 2);
  CHECK(sorted(b.removed) == sorted(stored));
  CHECK(log.size() == 0);
}

TEST_CASE("copies of one hash are counted, and opposite changes within a batch cancel", "[prefix_events]") {
  prefix_event_log log(no_rate_bound());
  log.stored(11);
  log.stored(11);  // a second copy (the last-token rule's duplicate)
  CHECK(log.take(clock_type::now()).stored == std::vector<std::uint64_t>{11});
  log.removed(11);
  CHECK_FALSE(log.due(clock_type::now()));  // one copy is left
  log.removed(11);
  CHECK(log.take(clock_type::now()).removed == std::vector<std::uint64_t>{11});
  log.removed(99);  // never stored: ignored
  CHECK_FALSE(log.due(clock_type::now()));
  // Stored and evicted before a batch went out: the receiver never needs to hear of it.
  log.stored(5);
  log.removed(5);
  CHECK_FALSE(log.due(clock_type::now()));
  // Evicted and stored again: the receiver's view does not change either.
  log.stored(6);
  REQUIRE(log.take(clock_type::now()).stored.size() == 1);
  log.removed(6);
  log.stored(6);
  CHECK_FALSE(log.due(clock_type::now()));
  CHECK(log.size() == 1);
}

TEST_CASE("a log past its bound, or asked, sends a numbered snapshot instead", "[prefix_events]") {
  prefix_event_options o = no_rate_bound();
  o.max_pending = 4;
  prefix_event_log log(o);
  for (std::uint64_t h = 1; h <= 6; ++h)
    log.stored(h);
  CHECK(log.pending() == 0);  // dropped for the snapshot
  auto b = log.take(clock_type::now());
  CHECK(b.seq == 1);
  CHECK(b.snapshot);
  CHECK(sorted(b.stored) == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6});
  log.removed(3);
  log.want_snapshot();
  auto s = log.take(clock_type::now());
  CHECK(s.seq == 2);
  CHECK(s.snapshot);
  CHECK(s.removed.empty());
  CHECK(sorted(s.stored) == std::vector<std::uint64_t>{1, 2, 4, 5, 6});
}

TEST_CASE("batches go out at most once per min_interval", "[prefix_events]") {
  prefix_event_options o;
  o.min_interval = std::chrono::milliseconds(10);
  prefix_event_log log(o);
  const auto t0 = clock_type::time_point{} + std::chrono::seconds(1);
  log.stored(1);
  CHECK(log.take(t0).seq == 1);
  log.stored(2);
  CHECK_FALSE(log.due(t0 + std::chrono::milliseconds(9)));
  CHECK(log.take(t0 + std::chrono::milliseconds(9)).seq == 0);
  log.stored(3);
  auto b = log.take(t0 + std::chrono::milliseconds(10));
  CHECK(b.seq == 2);
  CHECK(sorted(b.stored) == std::vector<std::uint64_t>{2, 3});
}

TEST_CASE("attaching a log after blocks were indexed is refused", "[prefix_events]") {
  block_manager bm({8, 4, true, nullptr});
  prefill(bm, 1, iota_tokens(8, 0));
  prefix_event_log log;
  CHECK_THROWS_AS(bm.attach_events(&log), std::logic_error);
}

} // namespace test_prefix_events
