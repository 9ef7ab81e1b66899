// The serving loop's adapter gate (worker/adapter_gate): readiness, single-adapter turns for
// continuous and static batches, and failed loads, over an adapter manager with fake payloads.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "worker/adapter_gate.hpp"

using namespace lf;
using namespace lf::worker;
using namespace std::chrono_literals;
using cache::adapter_id;
using cache::base_model;

namespace adapter_gate_test {

struct fake_weights final : cache::adapter_payload {
  std::size_t bytes() const noexcept override { return 10; }
};

/// A manager whose "broken*" adapters fail to load and every other one loads at once.
cache::adapter_manager manager_of_fakes() {
  cache::adapter_cache_config c;
  c.budget_bytes = 1000;
  return cache::adapter_manager(c, [](const std::string& name) -> std::shared_ptr<const cache::adapter_payload> {
    if (name.rfind("broken", 0) == 0)
      throw cache::adapter_load_error(serve_errc::unknown_adapter, "adapter \"" + name + "\" not found");
    return std::make_shared<fake_weights>();
  });
}

/// `name` acquired and settled (loaded or failed): its id.
adapter_id settled(cache::adapter_manager& m, const std::string& name) {
  auto got = m.acquire(name);
  REQUIRE(m.wait_settled(got.id, 30s) != cache::adapter_state::loading);
  return got.id;
}

} // namespace adapter_gate_test

using namespace adapter_gate_test;

TEST_CASE("adapter gate: without turns a request may start once its adapter is loaded", "[adapter_gate]") {
  auto m = manager_of_fakes();
  const auto a = settled(m, "style-a");
  adapter_gate gate(&m, false);
  CHECK_FALSE(gate.turns());
  gate.take_turn({a}, {base_model, a}, false);
  CHECK_FALSE(gate.turn());
  CHECK(gate.usable(base_model));
  CHECK(gate.usable(a));
  auto cold = m.acquire("style-b");  // loading, or loaded by now: usable exactly when ready
  CHECK(gate.usable(cold.id) == m.ready(cold.id));
  adapter_gate none(nullptr, false);
  CHECK(none.usable(base_model));
  CHECK_FALSE(none.usable(a));  // no manager: no adapter is ever ready
  CHECK_FALSE(none.loads_settled());
}

TEST_CASE("adapter gate: continuous turns stay with the running adapter, then pass to the oldest ready waiter", "[adapter_gate]") {
  auto m = manager_of_fakes();
  const auto a = settled(m, "style-a");
  const auto b = settled(m, "style-b");
  adapter_gate gate(&m, true);
  REQUIRE(gate.turns());
  gate.take_turn({base_model, b}, {a, base_model}, false);
  CHECK(gate.turn() == b);
  CHECK(gate.usable(b));
  CHECK_FALSE(gate.usable(a));
  CHECK_FALSE(gate.usable(base_model));
  // Nothing of an adapter running: the oldest waiting adapter that is ready, never the base model.
  gate.take_turn({base_model}, {base_model, a, b}, false);
  CHECK(gate.turn() == a);
  // Only the base model waits: its turn, and no adapter may start.
  gate.take_turn({}, {base_model}, false);
  CHECK(gate.turn() == base_model);
  CHECK(gate.usable(base_model));
  CHECK_FALSE(gate.usable(a));
}

TEST_CASE("adapter gate: in static batches the oldest runnable request decides, base model included", "[adapter_gate]") {
  auto m = manager_of_fakes();
  const auto a = settled(m, "style-a");
  const auto broken = settled(m, "broken-1");
  adapter_gate gate(&m, true);
  gate.take_turn({}, {broken, base_model, a}, true);
  CHECK(gate.turn() == base_model);  // the failed adapter cannot run: the next request decides
  CHECK(gate.usable(base_model));
  CHECK_FALSE(gate.usable(a));
  gate.take_turn({}, {a, base_model}, true);
  CHECK(gate.turn() == a);
  CHECK_FALSE(gate.usable(base_model));
}

TEST_CASE("adapter gate: a settled load is news once, and a failed load names its error", "[adapter_gate]") {
  auto m = manager_of_fakes();
  adapter_gate gate(&m, false);
  CHECK_FALSE(gate.loads_settled());
  const auto broken = settled(m, "broken-2");
  const auto a = settled(m, "style-a");
  CHECK(gate.loads_settled());
  CHECK_FALSE(gate.loads_settled());  // nothing new since
  auto why = gate.failure(broken);
  REQUIRE(why);
  CHECK(why->error == serve_errc::unknown_adapter);
  CHECK(why->message == "adapter \"broken-2\" not found");
  CHECK_FALSE(gate.failure(a));
  CHECK_FALSE(gate.failure(base_model));
  m.release(a);
  m.release(broken);
}
