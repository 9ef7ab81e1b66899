// The adapter cache's bookkeeping: load on first use, one load for many requests, references
// that pin, LRU eviction under the byte budget and the count limit, queued loads, failures with a
// retry window, and the bounded name registry. Time is passed in; no threads.

#include <catch2/catch.hpp>

#include <stdexcept>

#include "cache/adapter_cache.hpp"

using namespace lf::cache;
using lf::serve_errc;

namespace {

const adapter_clock::time_point t0{};

adapter_cache make(std::size_t budget, std::uint32_t max_adapters = 16) {
  adapter_cache_config c;
  c.budget_bytes = budget;
  c.max_adapters = max_adapters;
  c.retry_after = std::chrono::seconds(5);
  return adapter_cache{c};
}

/// Acquires `name` and completes its load (if one started) with `bytes`.
adapter_id acquire_loaded(adapter_cache& c, const std::string& name, std::size_t bytes,
                          adapter_actions* load_actions = nullptr) {
  auto r = c.acquire(name, t0);
  REQUIRE(r.state != adapter_state::failed);
  if (r.state == adapter_state::loading) {
    REQUIRE(r.actions.start_loads == std::vector<adapter_id>{r.id});
    auto a = c.loaded(r.id, bytes, t0);
    if (load_actions)
      *load_actions = a;
  }
  return r.id;
}

} // namespace

TEST_CASE("an adapter loads once on first use and is then a hit", "[adapter_cache]") {
  auto c = make(1000);
  auto first = c.acquire("styles/kjv", t0);
  CHECK(first.id != base_model);
  CHECK(first.state == adapter_state::loading);
  CHECK(first.actions.start_loads == std::vector<adapter_id>{first.id});
  // A second request while it loads waits for the same load.
  auto second = c.acquire("styles/kjv", t0);
  CHECK(second.id == first.id);
  CHECK(second.state == adapter_state::loading);
  CHECK(second.actions.start_loads.empty());
  auto done = c.loaded(first.id, 100, t0);
  CHECK(done.settled == std::vector<adapter_id>{first.id});
  CHECK(c.state(first.id) == adapter_state::ready);
  auto third = c.acquire("styles/kjv", t0);
  CHECK(third.state == adapter_state::ready);
  CHECK(c.info(first.id).refs == 3);
  CHECK(c.find("styles/kjv") == first.id);
  CHECK(c.find("other") == base_model);
  auto s = c.stats();
  CHECK(s.loads == 1);
  CHECK(s.hits == 1);
  CHECK(s.misses == 2);
  CHECK(s.loaded == 1);
  CHECK(s.bytes == 100);
}

TEST_CASE("unreferenced adapters are evicted least recently used first", "[adapter_cache]") {
  auto c = make(250);
  auto a = acquire_loaded(c, "a", 100);
  auto b = acquire_loaded(c, "b", 100);
  c.release(a);
  c.release(b);
  // b used again, so a is the least recently used.
  c.release(acquire_loaded(c, "b", 100));
  adapter_actions acts;
  auto d = acquire_loaded(c, "d", 100, &acts);
  CHECK(acts.evict == std::vector<adapter_id>{a});
  CHECK(c.state(a) == adapter_state::absent);
  CHECK(c.state(b) == adapter_state::ready);
  CHECK(c.state(d) == adapter_state::ready);
  CHECK(c.stats().evictions == 1);
  CHECK(c.stats().bytes == 200);
  CHECK(c.resident() == std::vector<adapter_id>{d, b});
  // An evicted adapter comes back with a new load under the same id.
  auto again = c.acquire("a", t0);
  CHECK(again.id == a);
  CHECK(again.state == adapter_state::loading);
}

TEST_CASE("referenced adapters are never evicted, loads wait for room", "[adapter_cache]") {
  auto c = make(250);
  auto a = acquire_loaded(c, "a", 100);
  auto b = acquire_loaded(c, "b", 100);
  adapter_actions acts;
  auto x = acquire_loaded(c, "x", 100, &acts);  // fits the count, but 300 > 250 bytes
  CHECK(acts.evict.empty());
  CHECK(c.stats().bytes == 300);  // over budget: everything is referenced
  for (auto id : {a, b, x})
    CHECK(c.state(id) == adapter_state::ready);
  // No new load while over budget and nothing can go.
  auto d = c.acquire("d", t0);
  CHECK(d.state == adapter_state::queued);
  CHECK(d.actions.start_loads.empty());
  CHECK(c.stats().queued == 1);
  // Releasing b while a second request holds it changes nothing.
  c.acquire("b", t0);
  auto rel = c.release(b);
  CHECK(rel.evict.empty());
  CHECK(rel.start_loads.empty());
  CHECK(c.state(d.id) == adapter_state::queued);
}

TEST_CASE("queued loads start when a release frees a slot", "[adapter_cache]") {
  auto c = make(1000, 2);
  auto a = c.acquire("a", t0);
  auto b = c.acquire("b", t0);
  auto q = c.acquire("q", t0);
  CHECK(a.state == adapter_state::loading);
  CHECK(b.state == adapter_state::loading);
  CHECK(q.state == adapter_state::queued);  // loading adapters count against max_adapters
  c.loaded(a.id, 10, t0);
  auto after_b = c.loaded(b.id, 10, t0);
  CHECK(after_b.start_loads.empty());  // both referenced
  auto rel = c.release(a.id);
  CHECK(rel.evict == std::vector<adapter_id>{a.id});
  CHECK(rel.start_loads == std::vector<adapter_id>{q.id});
  CHECK(c.state(q.id) == adapter_state::loading);
  // A queued adapter whose last request left is dropped from the queue.
  auto r = c.acquire("r", t0);
  CHECK(r.state == adapter_state::queued);
  auto gone = c.release(r.id);
  CHECK(gone.start_loads.empty());
  CHECK(c.state(r.id) == adapter_state::absent);
  CHECK(c.stats().queued == 0);
}

TEST_CASE("over budget, the first release that frees enough starts the queued load",
          "[adapter_cache]") {
  auto c = make(250);
  auto a = acquire_loaded(c, "a", 100);
  acquire_loaded(c, "b", 100);
  acquire_loaded(c, "x", 100);  // 300 bytes, all referenced
  auto d = c.acquire("d", t0);
  REQUIRE(d.state == adapter_state::queued);
  auto rel = c.release(a);
  CHECK(rel.evict == std::vector<adapter_id>{a});
  CHECK(rel.start_loads == std::vector<adapter_id>{d.id});
  CHECK(c.state(d.id) == adapter_state::loading);
}

TEST_CASE("a failed load is remembered for retry_after, then retried", "[adapter_cache]") {
  auto c = make(1000);
  auto a = c.acquire("broken", t0);
  auto other = c.acquire("broken", t0);
  auto f = c.load_failed(a.id, serve_errc::unknown_adapter, "adapter_model.safetensors: bad", t0);
  CHECK(f.settled == std::vector<adapter_id>{a.id});
  CHECK(c.state(a.id) == adapter_state::failed);
  CHECK(c.info(a.id).refs == 2);  // the owner fails those requests and releases them
  c.release(a.id);
  c.release(other.id);
  auto soon = c.acquire("broken", t0 + std::chrono::seconds(1));
  CHECK(soon.state == adapter_state::failed);
  CHECK(soon.error == serve_errc::unknown_adapter);
  CHECK(soon.message == "adapter_model.safetensors: bad");
  CHECK(soon.actions.start_loads.empty());
  CHECK(c.info(a.id).refs == 0);  // a failed acquire takes no reference
  auto later = c.acquire("broken", t0 + std::chrono::seconds(6));
  CHECK(later.state == adapter_state::loading);
  CHECK(later.actions.start_loads == std::vector<adapter_id>{a.id});
  CHECK(c.stats().failures == 1);
}

TEST_CASE("an adapter larger than the whole budget fails", "[adapter_cache]") {
  auto c = make(1 << 20);
  auto a = c.acquire("huge", t0);
  auto done = c.loaded(a.id, 3 << 20, t0);
  CHECK(done.settled == std::vector<adapter_id>{a.id});
  CHECK(c.state(a.id) == adapter_state::failed);
  CHECK_THAT(c.info(a.id).message, Catch::Contains("needs 3.0 MiB")
                                     && Catch::Contains("budget of 1.0 MiB"));
  CHECK(c.stats().loaded == 0);
  CHECK(c.stats().bytes == 0);
}

TEST_CASE("misuse throws", "[adapter_cache]") {
  auto c = make(1000);
  CHECK_THROWS_AS(adapter_cache(adapter_cache_config{0, 1, {}, 1}), std::invalid_argument);
  auto a = c.acquire("a", t0);
  CHECK_THROWS_AS(c.release(adapter_id{99}), std::out_of_range);
  c.release(a.id);
  CHECK_THROWS_AS(c.release(a.id), std::logic_error);
  c.loaded(a.id, 1, t0);
  CHECK_THROWS_AS(c.loaded(a.id, 1, t0), std::logic_error);
  CHECK_THROWS_AS(c.load_failed(a.id, serve_errc::internal, "x", t0), std::logic_error);
}

TEST_CASE("a full registry forgets unreferenced names, never reusing ids", "[adapter_cache]") {
  adapter_cache_config cfg;
  cfg.max_names = 2;
  adapter_cache c{cfg};
  auto a = c.acquire("a", t0);
  auto b = c.acquire("b", t0);
  auto full = c.acquire("c", t0);
  CHECK(full.state == adapter_state::failed);
  CHECK(full.error == serve_errc::overloaded);
  c.load_failed(a.id, serve_errc::unknown_adapter, "missing", t0);
  c.release(a.id);
  auto fresh = c.acquire("c", t0);  // "a" (failed, unreferenced) is forgotten
  CHECK(fresh.state == adapter_state::loading);
  CHECK(fresh.id != a.id);
  CHECK(fresh.id != b.id);
  CHECK(c.find("a") == base_model);
  CHECK(c.find("b") == b.id);
}

TEST_CASE("a retired adapter is evicted when its last holder releases it", "[adapter_cache]") {
  auto c = make(1000);
  const auto old_version = acquire_loaded(c, "tone@1", 100);
  const auto other = acquire_loaded(c, "other", 100);
  c.release(other);
  auto r = c.retire("tone@1");
  CHECK(r.evict.empty());  // a request still holds it
  CHECK(c.state(old_version) == adapter_state::ready);
  auto a = c.release(old_version);
  CHECK(a.evict == std::vector<adapter_id>{old_version});
  CHECK(c.state(old_version) == adapter_state::absent);
  CHECK(c.state(other) == adapter_state::ready);  // not retired: stays for LRU
  CHECK(c.stats().bytes == 100);
}

TEST_CASE("retiring an unreferenced adapter evicts it at once and unknown names are ignored",
          "[adapter_cache]") {
  auto c = make(1000);
  const auto id = acquire_loaded(c, "gone", 100);
  c.release(id);
  CHECK(c.state(id) == adapter_state::ready);
  CHECK(c.retire("gone").evict == std::vector<adapter_id>{id});
  CHECK(c.stats().loaded == 0);
  CHECK(c.retire("never-seen").evict.empty());
}

TEST_CASE("a retired adapter whose load is in flight is dropped when the load ends unheld",
          "[adapter_cache]") {
  auto c = make(1000);
  auto r = c.acquire("late", t0);
  REQUIRE(r.state == adapter_state::loading);
  c.retire("late");
  c.release(r.id);  // its request was cancelled while loading
  auto a = c.loaded(r.id, 100, t0);
  CHECK(a.evict == std::vector<adapter_id>{r.id});
  CHECK(c.stats().loaded == 0);
  // A request placed before the withdrawal may still acquire it: it loads again, then goes.
  auto again = c.acquire("late", t0);
  CHECK(again.state == adapter_state::loading);
  c.loaded(again.id, 100, t0);
  CHECK(c.release(again.id).evict == std::vector<adapter_id>{again.id});
}
