// The cache_aware placement (router/placement.hpp) and the priced one's prefix credit, over a
// fake index (router/prefix_index.hpp fed by made-up event batches) and a simulated clock.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <numeric>
#include <vector>

#include "cache/prefix_events.hpp"
#include "router/placement.hpp"
#include "router/placement_book.hpp"
#include "router/prefix_index.hpp"

using namespace lf::router;
using lf::actors::worker_id;

namespace {

constexpr std::uint32_t block = 16;

std::vector<std::int32_t> tokens(std::size_t n, std::int32_t first) {
  std::vector<std::int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<std::uint64_t> hashes(const std::vector<std::int32_t>& t) {
  return lf::cache::public_block_hashes(t, block, lf::cache::no_salt, 0);
}

/// Four idle workers in a book, and an index that knows them (each has sent an empty snapshot).
struct fleet {
  placement_book book;
  prefix_index ix;
  std::map<worker_id, std::uint64_t> seq;
  cost_clock::time_point now = cost_clock::time_point{} + std::chrono::seconds(100);

  explicit fleet(placement_options o, std::uint32_t capacity = 64) : book(o, capacity) {
    for (std::uint32_t i = 1; i <= 4; ++i) {
      book.add(worker_id{i}, 64, {});
      ix.add(worker_id{i}, 4096);
      stored(worker_id{i}, {}, true);
    }
  }

  /// What worker `w` would announce after computing `prompt` (or a snapshot of it).
  void stored(worker_id w, std::vector<std::uint64_t> hs, bool snapshot = false) {
    lf::cache::prefix_event_batch b;
    b.seq = ++seq[w];
    b.snapshot = snapshot;
    b.stored = std::move(hs);
    REQUIRE(ix.apply(w, b) == index_outcome::applied);
  }

  /// Places a request of `prompt` (max 32 tokens out) as the router does (cached tokens and the
  /// last cached block's hash per worker; the prompt's blocks on the chosen worker's books) and
  /// returns where it went. The ticket stays in `tickets` (the request stays in flight).
  worker_id place(const std::vector<std::int32_t>& prompt) {
    const auto hs = hashes(prompt);
    std::map<worker_id, std::uint32_t> c;
    std::map<worker_id, std::uint64_t> keys;
    for (auto [w, n] : ix.longest_prefixes(hs))
      if (n > 0) {
        c[w] = n * block;
        keys[w] = hs[n - 1];
      }
    auto w = book.choose("", static_cast<std::uint32_t>(prompt.size()), 0, c, keys);
    REQUIRE(w);
    auto& t = tickets.emplace_back();
    t.cost = prompt.size() + 32;
    const auto hit = c.count(*w) ? c.at(*w) : 0;
    book.place(*w, t, prompt.size(), 32, 0, now, hit, hs);
    now += std::chrono::milliseconds(5);
    return *w;
  }

  std::deque<placement_ticket> tickets;
};

placement_options policy(placement_policy p) {
  placement_options o;
  o.policy = p;
  return o;
}

} // namespace

TEST_CASE("cache_aware is a known policy name", "[placement][cache_aware]") {
  CHECK(parse_placement_policy("cache_aware") == placement_policy::cache_aware);
  CHECK(to_string(placement_policy::cache_aware) == "cache_aware");
}

TEST_CASE("a follow-up turn goes to the worker holding its history", "[placement][cache_aware]") {
  const auto history = tokens(512, 1000);
  auto turn2 = history;
  for (auto t : tokens(40, 7))
    turn2.push_back(t);
  for (auto p : {placement_policy::cache_aware, placement_policy::priced}) {
    fleet f(policy(p));
    f.stored(worker_id{3}, hashes(history));
    CHECK(f.place(turn2) == worker_id{3});
  }
  // least_loaded knows nothing of caches: the idle worker with the smallest id.
  fleet f(policy(placement_policy::least_loaded));
  f.stored(worker_id{3}, hashes(history));
  CHECK(f.place(turn2) == worker_id{1});
}

TEST_CASE("the prefix credit does not outweigh a long queue", "[placement][cache_aware]") {
  const auto history = tokens(64, 1000);  // a short history: 64 tokens of credit
  auto turn2 = history;
  turn2.push_back(5);
  fleet f(policy(placement_policy::cache_aware));
  f.stored(worker_id{2}, hashes(history));
  // Worker 2 has a 2000-token prompt ahead of it; the credit is worth 64 tokens.
  placement_ticket big;
  big.cost = 2032;
  f.book.place(worker_id{2}, big, 2000, 32, 0, f.now);
  CHECK(f.place(turn2) != worker_id{2});
}

TEST_CASE("a hot prefix stays spread over the workers under the load guard", "[placement][cache_aware]") {
  // One system prompt shared by every request; each request adds its own 32 tokens. A worker
  // that computed a prompt holds its blocks from then on (the events arrive at once here).
  const auto system = tokens(512, 1000);
  auto run = [&](placement_options o) {
    fleet f(o);
    f.stored(worker_id{1}, hashes(system));
    std::map<worker_id, int> per;
    for (int i = 0; i < 40; ++i) {
      auto prompt = system;
      for (auto t : tokens(32, 100000 + 32 * i))
        prompt.push_back(t);
      const auto w = f.place(prompt);
      ++per[w];
      f.stored(w, hashes(prompt));
    }
    return per;
  };
  placement_options o = policy(placement_policy::cache_aware);
  o.balance_rel = 1.0;  // the absolute bound alone, so the spread is easy to state
  auto guarded = run(o);
  REQUIRE(guarded.size() == 4);  // every worker took some
  int lo = 1000, hi = 0;
  for (auto [w, n] : guarded) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  CHECK(hi - lo <= static_cast<int>(o.balance_abs) + 1);
  // Without the guard the holder takes a pile first (its credit beats everyone's idle pool).
  o.balance_abs = 1000;
  auto unguarded = run(o);
  CHECK(unguarded[worker_id{1}] > guarded[worker_id{1}] + 4);
}

namespace {

/// A worker whose in-flight requests all share the request's cached prefix (a hot prefix).
worker_view hot_view(std::uint32_t id, std::uint32_t inflight, std::uint64_t cached) {
  worker_view v;
  v.id = worker_id{id};
  v.inflight = inflight;
  v.sharing = cached > 0 ? inflight : 0;
  v.capacity = 8;
  v.cached_prefix_tokens = cached;
  v.speed = {1.0, 1.0};
  return v;
}

} // namespace

TEST_CASE("the guard measures against the least busy worker with room", "[placement][cache_aware]") {
  placement_options o = policy(placement_policy::cache_aware);
  o.balance_abs = 2;
  o.balance_rel = 1.5;
  placer p(o);
  const auto view = hot_view;
  placement_request r;
  r.prompt_tokens = 1000;
  // Worker 1 holds everything but has 3 more requests than worker 2 (3 > 0 + 2, 3 > 1.5 * 0).
  CHECK(p.choose({view(1, 3, 992), view(2, 0, 0)}, r) == worker_id{2});
  // Two more than the least: still within the guard, and its credit wins.
  CHECK(p.choose({view(1, 2, 992), view(2, 0, 0)}, r) == worker_id{1});
  // A full worker does not set the bar: worker 2 is full, so worker 1 is the least busy.
  CHECK(p.choose({view(1, 5, 992), view(2, 8, 0), view(3, 7, 0)}, r) == worker_id{1});
  // Everyone full: nobody.
  CHECK_FALSE(p.choose({view(1, 8, 992), view(2, 8, 0)}, r));
}

TEST_CASE("the guard counts only the requests that share the cached prefix", "[placement][cache_aware]") {
  placer p(policy(placement_policy::cache_aware));  // balance_abs 2, balance_rel 1.5
  placement_request r;
  r.prompt_tokens = 1000;
  // Worker 1 holds 992 tokens of this prompt (a conversation's history) and has 5 requests in
  // flight, none of which shares it (other conversations): 5 > 0 + 2 would have passed it over
  // by counts; the estimate (8 tokens to compute + 5 rows against 1000 tokens) keeps it.
  auto busy = hot_view(1, 5, 992);
  busy.sharing = 0;
  CHECK(p.choose({busy, hot_view(2, 0, 0)}, r) == worker_id{1});
  // The same worker whose 5 requests all share that prefix (a hot one): passed over.
  busy.sharing = 5;
  CHECK(p.choose({busy, hot_view(2, 0, 0)}, r) == worker_id{2});
  // Sharing within the bound (2 more than the least busy worker's 0): kept.
  busy.sharing = 2;
  CHECK(p.choose({busy, hot_view(2, 0, 0)}, r) == worker_id{1});
  // The first guard (balance_scope "all") counted all 5 and passed it over.
  auto all = policy(placement_policy::cache_aware);
  all.balance_on_prefix = false;
  busy.sharing = 0;
  CHECK(placer(all).choose({busy, hot_view(2, 0, 0)}, r) == worker_id{2});
  // A worker with nothing of it cached is never passed over by the guard (there is no prefix to
  // share there): 3 rows against an idle worker with 5000 prompt tokens ahead, by the estimate.
  auto cold = hot_view(1, 3, 0);
  cold.sharing = 3;
  auto far = hot_view(2, 0, 0);
  far.prompt_ahead = 5000;
  CHECK(p.choose({cold, far}, r) == worker_id{1});
}

TEST_CASE("a follow-up stays with its history while its worker is busy with other conversations",
          "[placement][cache_aware]") {
  // Worker 3 computed a conversation's history (512 tokens); 4 other conversations' first turns
  // (unrelated prompts, 64 tokens each) are then placed there and still in flight, the other
  // workers idle. The follow-up (history + 40 tokens) shares nothing with them: it stays.
  const auto history = tokens(512, 1000);
  auto turn2 = history;
  for (auto t : tokens(40, 7))
    turn2.push_back(t);
  fleet f(policy(placement_policy::cache_aware));
  f.stored(worker_id{3}, hashes(history));
  for (int i = 0; i < 4; ++i) {
    const auto other = tokens(64, 50000 + 100 * i);
    placement_ticket t;
    t.cost = 96;
    f.book.place(worker_id{3}, t, 64, 32, 0, f.now, 0, hashes(other));
  }
  REQUIRE(f.book.find(worker_id{3})->inflight == 4);
  CHECK(f.place(turn2) == worker_id{3});
  // The first guard, on all requests in flight (4 > 0 + 2): the follow-up went to an idle worker.
  auto all = policy(placement_policy::cache_aware);
  all.balance_on_prefix = false;
  fleet g(all);
  g.stored(worker_id{3}, hashes(history));
  for (int i = 0; i < 4; ++i) {
    placement_ticket t;
    g.book.place(worker_id{3}, t, 64, 32, 0, g.now, 0, hashes(tokens(64, 50000 + 100 * i)));
  }
  CHECK(g.place(turn2) != worker_id{3});
}

TEST_CASE("a request's blocks leave its worker's books with it", "[placement][cache_aware]") {
  placement_book book(policy(placement_policy::cache_aware));
  book.add(worker_id{1}, 8, {});
  const auto a = hashes(tokens(64, 1000));  // 4 blocks
  auto b = a;
  b.push_back(77);  // shares a's 4 blocks, then one of its own
  placement_ticket ta, tb;
  book.place(worker_id{1}, ta, 64, 8, 0, cost_clock::now(), 0, a);
  book.place(worker_id{1}, tb, 80, 8, 0, cost_clock::now(), 0, b);
  const auto& held = book.find(worker_id{1})->inflight_blocks;
  CHECK(held.size() == 5);
  CHECK(held.at(a[3]) == 2);
  CHECK(held.at(77) == 1);
  // The guard's view: sharing a's last block there = 2 requests.
  book.unplace(worker_id{1}, ta, cost_clock::now());
  CHECK(held.at(a[3]) == 1);
  CHECK(ta.blocks.empty());
  book.unplace(worker_id{1}, tb, cost_clock::now());
  CHECK(book.find(worker_id{1})->inflight_blocks.empty());
}

TEST_CASE("a placement on a holder counts only the uncached prompt as work ahead", "[placement][cache_aware]") {
  placement_book book(policy(placement_policy::cache_aware));
  book.add(worker_id{1}, 8, {});
  placement_ticket t;
  t.cost = 600;
  book.place(worker_id{1}, t, 512, 88, 0, cost_clock::now(), 480);
  CHECK(book.find(worker_id{1})->prompt_ahead == 32);
  book.unplace(worker_id{1}, t, cost_clock::now());
  CHECK(book.find(worker_id{1})->prompt_ahead == 0);
}
