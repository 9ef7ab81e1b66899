// The adapter manager with fake payloads: loads run on the loader thread, many concurrent
// requests for an adapter being loaded share one load, failures carry their error code, refused
// names are never registered, and evicted weights stay alive for whoever still holds them.

#include <catch2/catch.hpp>

#include <map>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cache/adapter_manager.hpp"

using namespace lf::cache;
using lf::serve_errc;
using namespace std::chrono_literals;

namespace {

struct fake_payload final : adapter_payload {
  explicit fake_payload(std::string n, std::size_t b) : name(std::move(n)), size(b) {}
  std::size_t bytes() const noexcept override { return size; }
  std::string name;
  std::size_t size;
};

/// A load function that blocks while the gate is closed and counts loads per name.
struct fake_loader {
  std::mutex m;
  std::condition_variable cv;
  bool open = true;
  std::map<std::string, int> loads;
  std::size_t bytes = 100;

  adapter_load_fn fn() {
    return [this](const std::string& name) -> std::shared_ptr<const adapter_payload> {
      std::unique_lock<std::mutex> lk(m);
      ++loads[name];
      cv.wait_for(lk, 30s, [&] { return open; });
      if (name.rfind("missing", 0) == 0)
        throw adapter_load_error(serve_errc::unknown_adapter, "adapter \"" + name + "\" not found");
      if (name == "corrupt")
        throw std::runtime_error("adapter_model.safetensors: header is not valid JSON");
      return std::make_shared<fake_payload>(name, bytes);
    };
  }
  void set_open(bool o) {
    {
      std::lock_guard<std::mutex> g(m);
      open = o;
    }
    cv.notify_all();
  }
  int count(const std::string& name) {
    std::lock_guard<std::mutex> g(m);
    return loads[name];
  }
};

adapter_cache_config config(std::size_t budget = 1000) {
  adapter_cache_config c;
  c.budget_bytes = budget;
  return c;
}

} // namespace

TEST_CASE("concurrent requests for an adapter being loaded share one load", "[adapter_manager]") {
  fake_loader loader;
  loader.set_open(false);
  adapter_manager mgr(config(), loader.fn());
  std::mutex wake_m;
  std::condition_variable wake_cv;
  int wakeups = 0;
  mgr.set_listener([&] {
    std::lock_guard<std::mutex> g(wake_m);
    ++wakeups;
    wake_cv.notify_all();
  });
  std::vector<std::thread> clients;
  std::vector<adapter_acquire> got(8);
  for (int i = 0; i < 8; ++i)
    clients.emplace_back([&, i] { got[static_cast<std::size_t>(i)] = mgr.acquire("shared"); });
  for (auto& t : clients)
    t.join();
  const auto id = got[0].id;
  for (auto& g : got) {
    CHECK(g.id == id);
    CHECK(g.state == adapter_state::loading);
  }
  CHECK(mgr.get(id) == nullptr);
  CHECK(mgr.wait_settled(id, 20ms) == adapter_state::loading);  // gate still closed
  loader.set_open(true);
  REQUIRE(mgr.wait_settled(id, 30s) == adapter_state::ready);
  CHECK(loader.count("shared") == 1);
  auto w = std::dynamic_pointer_cast<const fake_payload>(mgr.get(id));
  REQUIRE(w);
  CHECK(w->name == "shared");
  CHECK(mgr.info(id).refs == 8);
  CHECK(mgr.settled_count() == 1);
  auto s = mgr.stats();
  CHECK(s.loads == 1);
  CHECK(s.misses == 8);
  CHECK(mgr.resident_names() == std::vector<std::string>{"shared"});
  for (int i = 0; i < 8; ++i)
    mgr.release(id);
  CHECK(mgr.info(id).refs == 0);
  CHECK(mgr.ready(id));  // unreferenced adapters stay cached until room is needed
  {
    // The listener runs on the loader thread after waiters of the state have been woken.
    std::unique_lock<std::mutex> lk(wake_m);
    CHECK(wake_cv.wait_for(lk, 30s, [&] { return wakeups > 0; }));
    CHECK(wakeups == 1);
  }
  mgr.set_listener({});
}

TEST_CASE("failed loads carry their error code and message", "[adapter_manager]") {
  fake_loader loader;
  adapter_manager mgr(config(), loader.fn());
  auto missing = mgr.acquire("missing-one");
  auto corrupt = mgr.acquire("corrupt");
  REQUIRE(mgr.wait_settled(missing.id, 30s) == adapter_state::failed);
  REQUIRE(mgr.wait_settled(corrupt.id, 30s) == adapter_state::failed);
  auto mi = mgr.info(missing.id);
  CHECK(mi.error == serve_errc::unknown_adapter);
  CHECK(mi.message == "adapter \"missing-one\" not found");
  auto ci = mgr.info(corrupt.id);
  CHECK(ci.error == serve_errc::unknown_adapter);
  CHECK_THAT(ci.message, Catch::Contains("not valid JSON"));
  // Within the retry window a new request fails at once, without another load.
  auto again = mgr.acquire("corrupt");
  CHECK(again.state == adapter_state::failed);
  CHECK_THAT(again.message, Catch::Contains("not valid JSON"));
  CHECK(loader.count("corrupt") == 1);
  CHECK(mgr.stats().failures == 2);
  mgr.release(missing.id);
  mgr.release(corrupt.id);
}

TEST_CASE("names the check refuses are not registered", "[adapter_manager]") {
  fake_loader loader;
  adapter_manager mgr(config(), loader.fn(), [](const std::string& n) {
    return n.find("..") != std::string::npos ? "adapter id \"" + n + "\" refused" : std::string();
  });
  auto r = mgr.acquire("../etc");
  CHECK(r.state == adapter_state::failed);
  CHECK(r.error == serve_errc::invalid_request);
  CHECK(r.id == base_model);
  CHECK(r.message == "adapter id \"../etc\" refused");
  CHECK(loader.count("../etc") == 0);
  CHECK(mgr.stats().misses == 0);
}

TEST_CASE("evicted weights stay alive while someone holds them", "[adapter_manager]") {
  fake_loader loader;
  adapter_manager mgr(config(150), loader.fn());
  auto a = mgr.acquire("a");
  REQUIRE(mgr.wait_settled(a.id, 30s) == adapter_state::ready);
  auto held = mgr.get(a.id);
  std::weak_ptr<const adapter_payload> watch = held;
  mgr.release(a.id);
  auto b = mgr.acquire("b");
  REQUIRE(mgr.wait_settled(b.id, 30s) == adapter_state::ready);
  CHECK(mgr.state(a.id) == adapter_state::absent);  // evicted: 200 > 150
  CHECK(mgr.get(a.id) == nullptr);
  CHECK(mgr.stats().evictions == 1);
  CHECK_FALSE(watch.expired());  // the step that still uses it keeps it
  held.reset();
  CHECK(watch.expired());
  mgr.release(b.id);
}

TEST_CASE("an over-budget cache loads queued adapters as references go", "[adapter_manager]") {
  fake_loader loader;
  adapter_manager mgr(config(150), loader.fn());
  auto a = mgr.acquire("a");
  REQUIRE(mgr.wait_settled(a.id, 30s) == adapter_state::ready);
  auto b = mgr.acquire("b");  // a is referenced: b loads anyway (soft budget) ...
  REQUIRE(mgr.wait_settled(b.id, 30s) == adapter_state::ready);
  auto c = mgr.acquire("c");  // ... but no further load starts while over budget
  CHECK(c.state == adapter_state::queued);
  mgr.release(a.id);           // a goes, 100 <= 150: c starts
  REQUIRE(mgr.wait_settled(c.id, 30s) == adapter_state::ready);
  CHECK(mgr.state(a.id) == adapter_state::absent);
  mgr.release(b.id);
  mgr.release(c.id);
}

TEST_CASE("load records count each adapter's loads and failures and time the last load", "[adapter_manager]") {
  fake_loader loader;
  loader.bytes = 300;
  adapter_manager mgr(config(), loader.fn());
  CHECK(mgr.load_records().empty());
  auto a = mgr.acquire("alpha");
  auto bad = mgr.acquire("missing-beta");
  REQUIRE(mgr.wait_settled(a.id, 30s) == adapter_state::ready);
  REQUIRE(mgr.wait_settled(bad.id, 30s) == adapter_state::failed);
  const auto recs = mgr.load_records();
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].name == "alpha");  // by name
  CHECK(recs[0].loads == 1);
  CHECK(recs[0].failures == 0);
  CHECK(recs[0].bytes == 300);
  CHECK(recs[0].last_load_ms >= 0);
  CHECK(recs[1].name == "missing-beta");
  CHECK(recs[1].loads == 0);
  CHECK(recs[1].failures == 1);
  mgr.release(a.id);
  mgr.release(bad.id);
}

TEST_CASE("prefetch loads an adapter nobody holds and retire frees it", "[adapter_manager]") {
  fake_loader loader;
  adapter_manager mgr(config(), loader.fn());
  CHECK(mgr.prefetch("warm"));
  auto id = mgr.acquire("warm").id;  // a request arrives: the prefetched load is shared
  REQUIRE(mgr.wait_settled(id, 30s) == adapter_state::ready);
  CHECK(loader.count("warm") == 1);
  mgr.retire("warm");
  CHECK(mgr.ready(id));  // the request still holds it
  auto held = mgr.get(id);
  std::weak_ptr<const adapter_payload> watch = held;
  held.reset();
  mgr.release(id);
  CHECK(mgr.state(id) == adapter_state::absent);
  CHECK(watch.expired());  // its memory is gone with its last request
}

TEST_CASE("prefetch never evicts: with every slot taken it declines", "[adapter_manager]") {
  fake_loader loader;
  auto cfg = config();
  cfg.max_adapters = 2;
  adapter_manager mgr(cfg, loader.fn());
  auto a = mgr.acquire("a");
  auto b = mgr.acquire("b");
  REQUIRE(mgr.wait_settled(a.id, 30s) == adapter_state::ready);
  REQUIRE(mgr.wait_settled(b.id, 30s) == adapter_state::ready);
  mgr.release(a.id);  // unreferenced, but resident: a prefetch must not push it out
  CHECK(mgr.free_slots() == 0);
  CHECK_FALSE(mgr.prefetch("c"));
  CHECK(loader.count("c") == 0);
  CHECK(mgr.ready(a.id));
  CHECK(mgr.prefetch("a"));  // resident already: nothing to load
  CHECK(loader.count("a") == 1);
  mgr.release(b.id);
}
