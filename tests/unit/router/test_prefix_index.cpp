// The router's global prefix index (router/prefix_index.hpp): insert, evict, gaps, resync,
// worker loss, the bound, and the longest cached prefix per worker.
#include <catch2/catch.hpp>

#include <vector>

#include "router/prefix_index.hpp"

using namespace lf::router;
using lf::actors::worker_id;
using lf::cache::prefix_event_batch;

namespace {

prefix_event_batch snap(std::uint64_t seq, std::vector<std::uint64_t> hashes) {
  prefix_event_batch b;
  b.seq = seq;
  b.snapshot = true;
  b.stored = std::move(hashes);
  return b;
}

prefix_event_batch delta(std::uint64_t seq, std::vector<std::uint64_t> stored, std::vector<std::uint64_t> removed = {}) {
  prefix_event_batch b;
  b.seq = seq;
  b.stored = std::move(stored);
  b.removed = std::move(removed);
  return b;
}

const worker_id w1{1}, w2{2}, w3{3};

} // namespace

TEST_CASE("a worker's events count only after its snapshot", "[prefix_index]") {
  prefix_index ix;
  ix.add(w1, 100);
  CHECK(ix.apply(w1, delta(1, {10})) == index_outcome::ignored);  // awaiting a snapshot
  CHECK_FALSE(ix.holds(w1, 10));
  CHECK(ix.apply(w1, snap(2, {10, 11})) == index_outcome::applied);
  CHECK(ix.apply(w1, delta(3, {12}, {10})) == index_outcome::applied);
  CHECK_FALSE(ix.holds(w1, 10));
  CHECK(ix.holds(w1, 11));
  CHECK(ix.holds(w1, 12));
  CHECK(ix.entries() == 2);
  CHECK(ix.stats(w1).next_seq == 4);
  CHECK(ix.apply(w1, delta(3, {99})) == index_outcome::ignored);  // an old number
  CHECK(ix.apply(worker_id{9}, snap(1, {1})) == index_outcome::ignored);  // unknown worker
}

TEST_CASE("a gap in the numbers drops the worker's entries until a snapshot", "[prefix_index]") {
  prefix_index ix;
  ix.add(w1, 100);
  ix.add(w2, 100);
  REQUIRE(ix.apply(w1, snap(1, {10, 11})) == index_outcome::applied);
  REQUIRE(ix.apply(w2, snap(1, {10})) == index_outcome::applied);
  CHECK(ix.apply(w1, delta(3, {12})) == index_outcome::gap);  // 2 went missing
  CHECK_FALSE(ix.holds(w1, 10));
  CHECK(ix.holds(w2, 10));  // others keep theirs
  CHECK(ix.stats(w1).gaps == 1);
  CHECK(ix.apply(w1, delta(4, {13})) == index_outcome::ignored);
  CHECK(ix.apply(w1, snap(5, {10, 11, 12, 13})) == index_outcome::applied);
  CHECK(ix.stats(w1).blocks == 4);
  CHECK(ix.apply(w1, delta(6, {}, {13})) == index_outcome::applied);
  CHECK(ix.stats(w1).blocks == 3);
}

TEST_CASE("a lost worker's entries go at once, and a rejoin starts over", "[prefix_index]") {
  prefix_index ix;
  ix.add(w1, 100);
  ix.add(w2, 100);
  ix.apply(w1, snap(1, {10, 11}));
  ix.apply(w2, snap(1, {10, 11}));
  ix.remove(w1);
  CHECK_FALSE(ix.holds(w1, 10));
  CHECK(ix.entries() == 2);
  auto got = ix.longest_prefixes({10, 11});
  CHECK(got.size() == 1);
  CHECK(got.at(w2) == 2);
  // w2 rejoins (registers again): what it had is forgotten until its snapshot.
  ix.add(w2, 100);
  CHECK(ix.entries() == 0);
  CHECK(ix.longest_prefixes({10, 11}).empty());
  ix.apply(w2, snap(1, {10}));
  CHECK(ix.longest_prefixes({10, 11}).at(w2) == 1);
  // resync (a partition healed): dropped and awaiting a snapshot again.
  ix.resync(w2);
  CHECK(ix.entries() == 0);
  CHECK(ix.apply(w2, delta(2, {11})) == index_outcome::ignored);
}

TEST_CASE("the longest prefix is counted per worker from the first block", "[prefix_index]") {
  prefix_index ix;
  ix.add(w1, 100);
  ix.add(w2, 100);
  ix.add(w3, 100);
  ix.apply(w1, snap(1, {1, 2, 3, 4}));
  ix.apply(w2, snap(1, {1, 2, 9}));
  ix.apply(w3, snap(1, {2, 3, 4}));  // no first block: no prefix at all
  auto got = ix.longest_prefixes({1, 2, 3, 4, 5});
  CHECK(got.size() == 2);
  CHECK(got.at(w1) == 4);
  CHECK(got.at(w2) == 2);
  CHECK(ix.longest_prefixes({7, 1, 2}).empty());
  CHECK(ix.longest_prefixes({}).empty());
  // A hole in w1's chain (its second block evicted) ends its prefix there.
  ix.apply(w1, delta(2, {}, {2}));
  got = ix.longest_prefixes({1, 2, 3, 4});
  CHECK(got.at(w1) == 1);
  CHECK(got.at(w2) == 2);
}

TEST_CASE("a worker's entries are bounded by its pool", "[prefix_index]") {
  prefix_index ix;
  ix.add(w1, 3);
  ix.apply(w1, snap(1, {1, 2, 3, 4, 5}));
  CHECK(ix.stats(w1).blocks == 3);
  CHECK(ix.stats(w1).dropped == 2);
  ix.apply(w1, delta(2, {6}, {1}));
  CHECK(ix.stats(w1).blocks == 3);
  CHECK(ix.holds(w1, 6));
  CHECK(ix.entries() == 3);
}
