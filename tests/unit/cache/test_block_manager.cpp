// Deterministic unit tests of the KV block manager: allocation, growth, prefix reuse, the
// last-token rule, LRU eviction, failure without side effects, stats and collision safety.

#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "cache/block_manager.hpp"

using namespace lf::cache;

namespace {

using tokens = std::vector<std::int32_t>;

/// n tokens first, first + 1, ...
tokens iota_tokens(std::size_t n, std::int32_t first) {
  tokens t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

tokens concat(tokens a, const tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

block_manager make(std::uint32_t num_blocks, std::uint32_t block_size, bool prefix = true) {
  return block_manager{block_manager_config{num_blocks, block_size, prefix, nullptr}};
}

/// allocate + commit the whole prompt, as a finished prefill would.
std::uint32_t prefill(block_manager& bm, seq_id s, const tokens& prompt, adapter_id a = base_model) {
  auto cached = bm.allocate(s, prompt, a);
  REQUIRE(cached.has_value());
  bm.commit_tokens(s, prompt, static_cast<std::uint32_t>(prompt.size()));
  bm.check_invariants();
  return *cached;
}

bool same_stats(const block_manager::stats& a, const block_manager::stats& b) {
  return a.total == b.total && a.free == b.free && a.cached == b.cached && a.in_use == b.in_use
         && a.indexed == b.indexed && a.prefix_query_tokens == b.prefix_query_tokens
         && a.prefix_hit_tokens == b.prefix_hit_tokens && a.evictions == b.evictions;
}

std::uint64_t always_zero(std::uint64_t, adapter_id, const std::int32_t*, std::uint32_t) {
  return 0; // every key collides
}

} // namespace

TEST_CASE("allocate and free return blocks to the pool", "[cache]") {
  auto bm = make(8, 4);
  CHECK_THROWS_AS(make(0, 4), std::invalid_argument);
  auto cached = bm.allocate(seq_id{1}, iota_tokens(10, 0), base_model);
  REQUIRE(cached == 0u);
  const auto& table = bm.block_table(seq_id{1});
  REQUIRE(table.size() == 3);
  CHECK(std::set<block_id>(table.begin(), table.end()).size() == 3);
  CHECK(bm.num_slots(seq_id{1}) == 10);
  CHECK(bm.num_computed(seq_id{1}) == 0);
  CHECK(bm.num_free_blocks() == 5);
  CHECK(bm.get_stats().in_use == 3);
  bm.check_invariants();

  CHECK_THROWS_AS(bm.allocate(seq_id{1}, iota_tokens(3, 0), base_model), std::logic_error);
  CHECK_THROWS_AS(bm.allocate(seq_id{2}, tokens{}, base_model), std::invalid_argument);

  CHECK(bm.free(seq_id{1}));
  CHECK_FALSE(bm.free(seq_id{1}));
  CHECK_FALSE(bm.contains(seq_id{1}));
  CHECK_THROWS_AS(bm.block_table(seq_id{1}), std::out_of_range);
  auto s = bm.get_stats();
  CHECK(s.free == 8); // nothing was committed, so nothing got cached
  CHECK(s.cached == 0);
  CHECK(s.in_use == 0);
  bm.check_invariants();
}

TEST_CASE("block tables grow across block boundaries", "[cache]") {
  auto bm = make(8, 4);
  const seq_id s{7};
  REQUIRE(bm.allocate(s, iota_tokens(4, 0), base_model) == 0u);
  CHECK(bm.block_table(s).size() == 1);
  CHECK(bm.blocks_to_grow(s, 5) == 1);
  CHECK(bm.blocks_to_grow(s, 4) == 0);
  REQUIRE(bm.append_slots(s, 1)); // position 4 opens block 2
  CHECK(bm.block_table(s).size() == 2);
  REQUIRE(bm.append_slots(s, 3)); // positions 5..7 fit
  CHECK(bm.block_table(s).size() == 2);
  CHECK(bm.num_slots(s) == 8);
  REQUIRE(bm.ensure_slots(s, 6)); // already there: no-op
  CHECK(bm.num_slots(s) == 8);
  REQUIRE(bm.ensure_slots(s, 9));
  CHECK(bm.block_table(s).size() == 3);
  bm.check_invariants();

  const auto& table = bm.block_table(s);
  for (std::uint32_t p = 0; p < 9; ++p)
    CHECK(bm.slot_of(s, p) == std::uint64_t{table[p / 4].value()} * 4 + p % 4);
  CHECK_THROWS_AS(bm.slot_of(s, 9), std::out_of_range);

  // The pool has 8 blocks: 3 used, so 5 more (20 tokens) fit and a 6th does not.
  CHECK_FALSE(bm.ensure_slots(s, 12 + 20 + 1));
  CHECK(bm.block_table(s).size() == 3);
  CHECK(bm.ensure_slots(s, 12 + 20));
  CHECK(bm.num_free_blocks() == 0);
  bm.check_invariants();
}

TEST_CASE("a shared 40-token prompt reuses two 16-token blocks, not across adapters", "[cache]") {
  auto bm = make(16, 16);
  const auto prompt = iota_tokens(40, 100);
  CHECK(prefill(bm, seq_id{1}, prompt) == 0);
  CHECK(bm.get_stats().indexed == 2); // the partial third block stays private

  auto p = bm.probe(prompt, base_model);
  CHECK(p.hit_blocks == 2);
  CHECK(p.hit_tokens == 32);
  CHECK(p.blocks_needed == 1); // hits are referenced by seq 1: only the tail block is new
  REQUIRE(bm.allocate(seq_id{2}, prompt, base_model) == 32u);
  const auto& a = bm.block_table(seq_id{1});
  const auto& b = bm.block_table(seq_id{2});
  CHECK(a[0] == b[0]);
  CHECK(a[1] == b[1]);
  CHECK(a[2] != b[2]);
  CHECK(bm.ref_count(a[0]) == 2);
  CHECK(bm.ref_count(a[2]) == 1);
  CHECK(bm.num_computed(seq_id{2}) == 32);
  bm.check_invariants();

  REQUIRE(bm.allocate(seq_id{3}, prompt, adapter_id{5}) == 0u);
  for (auto blk : bm.block_table(seq_id{3}))
    CHECK(bm.ref_count(blk) == 1);
  bm.check_invariants();

  // Once everyone is gone the blocks stay cached: hits now cost free blocks.
  for (std::uint64_t s = 1; s <= 3; ++s)
    bm.free(seq_id{s});
  p = bm.probe(prompt, base_model);
  CHECK(p.hit_tokens == 32);
  CHECK(p.blocks_needed == 3);
  REQUIRE(bm.allocate(seq_id{4}, prompt, base_model) == 32u);
  bm.check_invariants();
}

TEST_CASE("the last prompt token is always computed", "[cache]") {
  auto bm = make(16, 16);
  const auto prompt = iota_tokens(32, 0);
  prefill(bm, seq_id{1}, prompt);
  CHECK(bm.get_stats().indexed == 2);
  // Exactly two full cached blocks: only one may be reused, the second holds the last token.
  CHECK(bm.allocate(seq_id{2}, prompt, base_model) == 16u);
  CHECK(bm.probe(concat(prompt, {7}), base_model).hit_tokens == 32);
  CHECK(bm.probe(iota_tokens(17, 0), base_model).hit_tokens == 16);
  CHECK(bm.probe(iota_tokens(16, 0), base_model).hit_tokens == 0);
  CHECK(bm.probe(iota_tokens(1, 0), base_model).hit_tokens == 0);

  // The recomputed second block is indexed as a twin of identical content; both stay exact.
  bm.commit_tokens(seq_id{2}, prompt, 32);
  CHECK(bm.get_stats().indexed == 3);
  bm.check_invariants();
  // Seq 2 decodes a third block under its twin, then leaves. A walk through seq 1's copy of the
  // second block (preferred: it is referenced) still finds the third: twins share a content id.
  const auto longer = concat(prompt, iota_tokens(16, 500));
  REQUIRE(bm.ensure_slots(seq_id{2}, 48));
  bm.commit_tokens(seq_id{2}, longer, 48);
  bm.free(seq_id{2});
  CHECK(bm.probe(concat(longer, {1}), base_model).hit_tokens == 48);
  bm.free(seq_id{1});
  REQUIRE(bm.allocate(seq_id{3}, concat(longer, {1}), base_model) == 48u);
  bm.check_invariants();
}

TEST_CASE("full blocks are published as decoding fills them", "[cache]") {
  auto bm = make(8, 4);
  auto seq = iota_tokens(3, 50);
  REQUIRE(bm.allocate(seq_id{1}, seq, base_model) == 0u);
  bm.commit_tokens(seq_id{1}, seq, 3);
  CHECK(bm.get_stats().indexed == 0);
  seq.push_back(53); // sampled; its K/V is written by the next step
  CHECK_THROWS_AS(bm.commit_tokens(seq_id{1}, seq, 4), std::logic_error); // no slot yet
  REQUIRE(bm.append_slots(seq_id{1}, 1));
  seq.push_back(54); // a token past num_computed is ignored
  bm.commit_tokens(seq_id{1}, seq, 4);
  CHECK(bm.get_stats().indexed == 1);
  CHECK(bm.is_indexed(bm.block_table(seq_id{1})[0]));
  CHECK_THROWS_AS(bm.commit_tokens(seq_id{1}, seq, 3), std::logic_error); // backwards
  CHECK_THROWS_AS(bm.commit_tokens(seq_id{1}, tokens{1}, 4), std::invalid_argument);
  bm.check_invariants();
  CHECK(bm.probe(iota_tokens(5, 50), base_model).hit_tokens == 4);
}

TEST_CASE("unreferenced cached blocks are evicted least recently used first", "[cache]") {
  auto bm = make(3, 2);
  // Three one-block sequences, each leaving one cached block behind.
  std::vector<block_id> blk;
  for (std::int32_t i = 0; i < 3; ++i) {
    prefill(bm, seq_id{std::uint64_t(i)}, {10 * i, 10 * i + 1});
    blk.push_back(bm.block_table(seq_id{std::uint64_t(i)})[0]);
  }
  for (std::uint64_t s = 0; s < 3; ++s)
    bm.free(seq_id{s}); // LRU: blk0, blk1, blk2
  CHECK(bm.get_stats().cached == 3);

  // Seq 3 reuses blk0 and needs one new block: blk1 (the LRU one; blk0 is taken) is evicted.
  REQUIRE(bm.allocate(seq_id{3}, {0, 1, 5}, base_model) == 2u);
  CHECK(bm.block_table(seq_id{3})[0] == blk[0]);
  CHECK(bm.block_table(seq_id{3})[1] == blk[1]);
  CHECK_FALSE(bm.is_indexed(blk[1]));
  CHECK(bm.is_indexed(blk[2]));
  CHECK(bm.get_stats().evictions == 1);
  bm.check_invariants();

  // Released blk0 is now the most recently used; the private block goes back to the free list.
  bm.free(seq_id{3});
  CHECK(bm.get_stats().free == 1);
  CHECK(bm.get_stats().cached == 2);
  // Two new blocks: the free one first, then the LRU cached one (blk2), never blk0.
  REQUIRE(bm.allocate(seq_id{4}, {90, 91, 92}, base_model) == 0u);
  CHECK(bm.is_indexed(blk[0]));
  CHECK_FALSE(bm.is_indexed(blk[2]));
  CHECK(bm.get_stats().evictions == 2);
  CHECK(bm.probe({0, 1, 9}, base_model).hit_tokens == 2);
  CHECK(bm.probe({20, 21, 9}, base_model).hit_tokens == 0);
  bm.check_invariants();
}

TEST_CASE("a sequence's tail is evicted before its head", "[cache]") {
  auto bm = make(4, 2);
  prefill(bm, seq_id{1}, {1, 2, 3, 4, 5}); // [1,2] [3,4] indexed, [5] private
  const auto table = bm.block_table(seq_id{1});
  bm.free(seq_id{1}); // LRU: [3,4] then [1,2]; [5] and the 4th block free
  CHECK(bm.get_stats().cached == 2);
  // Three new blocks: both free ones, then one eviction, which must hit the tail.
  REQUIRE(bm.allocate(seq_id{2}, {9, 9, 9, 9, 9}, base_model) == 0u);
  CHECK(bm.is_indexed(table[0]));
  CHECK_FALSE(bm.is_indexed(table[1]));
  CHECK(bm.probe({1, 2, 3, 4, 5}, base_model).hit_tokens == 2);
  bm.check_invariants();
}

TEST_CASE("allocate fails without side effects when the pool is short", "[cache]") {
  auto bm = make(4, 4);
  const auto shared = iota_tokens(8, 0);
  prefill(bm, seq_id{1}, concat(shared, {1})); // 3 blocks, 2 indexed and referenced
  const auto before = bm.get_stats();
  const auto table_before = bm.block_table(seq_id{1});
  // Reuses the 2 referenced blocks but needs 2 more for its 6-token tail: only 1 is free.
  const auto prompt = concat(shared, iota_tokens(6, 40));
  CHECK(bm.blocks_needed(prompt, base_model) == 2);
  CHECK_FALSE(bm.allocate(seq_id{2}, prompt, base_model).has_value());
  CHECK_FALSE(bm.contains(seq_id{2}));
  CHECK(same_stats(before, bm.get_stats()));
  CHECK(bm.block_table(seq_id{1}) == table_before);
  for (auto blk : table_before)
    CHECK(bm.ref_count(blk) == 1);
  CHECK_FALSE(bm.ensure_slots(seq_id{1}, 9 + 8));
  CHECK(same_stats(before, bm.get_stats()));
  bm.check_invariants();
  CHECK(bm.allocate(seq_id{2}, concat(shared, {3}), base_model) == 8u);
}

TEST_CASE("referenced cached blocks are never evicted", "[cache]") {
  auto bm = make(5, 2);
  prefill(bm, seq_id{1}, {1, 2, 3, 4, 5}); // [1,2] [3,4] indexed, [5] private
  bm.free(seq_id{1});                      // both indexed blocks now cached (evictable)
  // Seq 2 takes them back out of the LRU through a prefix hit.
  REQUIRE(bm.allocate(seq_id{2}, {1, 2, 3, 4, 6}, base_model) == 4u);
  const auto held = bm.block_table(seq_id{2});
  prefill(bm, seq_id{3}, {7, 7, 7});
  bm.free(seq_id{3}); // [7,7] cached, its tail block free
  CHECK(bm.num_free_blocks() == 2);

  // Three blocks: not possible, seq 2's cached blocks are referenced.
  CHECK_FALSE(bm.allocate(seq_id{4}, iota_tokens(5, 60), base_model).has_value());
  // Two blocks: the free one and the unreferenced cached one.
  REQUIRE(bm.allocate(seq_id{4}, iota_tokens(4, 60), base_model) == 0u);
  CHECK(bm.get_stats().evictions == 1);
  for (auto blk : bm.block_table(seq_id{4}))
    for (auto mine : held)
      CHECK(blk != mine);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(bm.is_indexed(held[i]));
    CHECK(bm.ref_count(held[i]) == 1);
  }
  CHECK(bm.num_free_blocks() == 0);
  CHECK_FALSE(bm.allocate(seq_id{5}, {1}, base_model).has_value());
  CHECK(bm.probe({1, 2, 3, 4, 0}, base_model).hit_tokens == 4);
  bm.check_invariants();
}

TEST_CASE("stats count blocks by state and the prefix hit rate", "[cache]") {
  auto bm = make(16, 16);
  CHECK(bm.get_stats().hit_rate() == 0.0);
  const auto prompt = iota_tokens(40, 0);
  prefill(bm, seq_id{1}, prompt);
  REQUIRE(bm.allocate(seq_id{2}, prompt, base_model) == 32u);
  auto s = bm.get_stats();
  CHECK(s.total == 16);
  CHECK(s.in_use == 4);
  CHECK(s.free == 12);
  CHECK(s.cached == 0);
  CHECK(s.indexed == 2);
  CHECK(s.prefix_query_tokens == 80);
  CHECK(s.prefix_hit_tokens == 32);
  CHECK(s.hit_rate() == Approx(0.4));
  bm.free(seq_id{1});
  bm.free(seq_id{2});
  s = bm.get_stats();
  CHECK(s.in_use == 0);
  CHECK(s.cached == 2);
  CHECK(s.free + s.cached == s.total);
}

TEST_CASE("hash collisions never cause a wrong reuse", "[cache]") {
  block_manager bm{block_manager_config{32, 4, true, &always_zero}};
  const tokens a{1, 1, 1, 1}, b{2, 2, 2, 2}, x{5, 6, 7, 8}, z{5, 6, 7, 9};
  prefill(bm, seq_id{1}, concat(concat(a, x), {0}));
  // Same second block under a different first block: nothing matches.
  CHECK(bm.probe(concat(concat(b, x), {0}), base_model).hit_tokens == 0);
  // Same first block, second differs in one token: only the first matches.
  CHECK(bm.probe(concat(concat(a, z), {0}), base_model).hit_tokens == 4);
  CHECK(bm.probe(concat(concat(a, x), {0}), adapter_id{1}).hit_tokens == 0);
  // A block that exists only under another parent: the first block matches, the second not.
  const tokens w{5, 5, 5, 5};
  prefill(bm, seq_id{9}, concat(concat(b, w), {0}));
  CHECK(bm.probe(concat(concat(a, w), {0}), base_model).hit_tokens == 4);
  bm.free(seq_id{9});
  prefill(bm, seq_id{2}, concat(concat(b, x), {0}));
  prefill(bm, seq_id{3}, concat(concat(a, x), {3}), adapter_id{1});
  CHECK(bm.get_stats().indexed == 7);
  CHECK(bm.probe(concat(concat(b, x), {4}), base_model).hit_tokens == 8);
  CHECK(bm.probe(concat(concat(a, x), {4}), adapter_id{1}).hit_tokens == 8);
  REQUIRE(bm.allocate(seq_id{4}, concat(concat(b, x), {4}), base_model) == 8u);
  CHECK(bm.block_table(seq_id{4})[1] == bm.block_table(seq_id{2})[1]);
  bm.check_invariants();
}

TEST_CASE("with the prefix cache disabled nothing is indexed or reused", "[cache]") {
  auto bm = make(8, 4, false);
  const auto prompt = iota_tokens(9, 0);
  prefill(bm, seq_id{1}, prompt);
  CHECK(bm.get_stats().indexed == 0);
  CHECK(bm.allocate(seq_id{2}, prompt, base_model) == 0u);
  bm.free(seq_id{1});
  bm.free(seq_id{2});
  CHECK(bm.get_stats().free == 8);
  bm.check_invariants();
}
