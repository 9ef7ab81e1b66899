// LoRA adapters through the cluster: workers load PEFT adapters from an adapter directory, the
// router keeps an adapter's requests on the worker that holds it (adapter_affinity, priced).
#include "tests/unit/router/model_worker.hpp"

#include <set>

#include "worker/engine/lora/lora_adapter.hpp"

using namespace lf;
using namespace lf::actors;
using namespace lf::router;
using lf::test::client;
using lf::test::cluster;

namespace {

/// Two random adapters ("one" and "styles/two") strong enough to change greedy choices.
const std::string& adapter_root() {
  static test::temp_dir tmp;
  static std::string root = [] {
    std::string r = tmp / "adapters";
    std::vector<engine::lora_module> all(engine::all_lora_modules.begin(), engine::all_lora_modules.end());
    engine::write_peft_adapter(r + "/one", engine::make_random_adapter(test::tiny_config(), 4, 8.0f, all, 1, 0.2f));
    engine::write_peft_adapter(r + "/styles/two",
                               engine::make_random_adapter(test::tiny_config(), 4, 8.0f, all, 2, 0.2f));
    return r;
  }();
  return root;
}

worker::worker_settings lora_worker() {
  auto s = test::tiny_worker();
  s.adapter_dir = adapter_root();
  return s;
}

test::request_log run_alone(client& cl, std::uint64_t id, const std::string& prompt,
                            const std::string& adapter, int max_tokens) {
  auto r = test::greedy(id, prompt, max_tokens);
  r.draft.adapter = adapter;
  cl.submit(r);
  REQUIRE(cl.run_until([id](const client& k) { return k.log.count(id) && k.log.at(id).terminals > 0; }));
  return cl.log[id];
}

} // namespace

TEST_CASE("adapters are applied, and adapter_affinity keeps them on their worker", "[cluster][lora][model]") {
  router_config rc;
  rc.placement.policy = placement_policy::adapter_affinity;
  cluster c(rc, {test::model_worker(lora_worker()), test::model_worker(lora_worker())});
  client cl(c.sys, c.router);
  const std::string prompt = "Once upon a time";
  const int max_tokens = 20;

  auto base = run_alone(cl, 1, prompt, "", max_tokens);
  auto one = run_alone(cl, 2, prompt, "one", max_tokens);  // a cold load on worker 1
  auto two = run_alone(cl, 3, prompt, "styles/two", max_tokens);
  REQUIRE(base.done);
  REQUIRE(one.done);
  REQUIRE(two.done);
  CHECK(one.done->tokens != base.done->tokens);  // the adapter changed the output
  CHECK(two.done->tokens != one.done->tokens);
  auto holder = one.done->worker;

  // Interleaved burst: every "one" request stays with its holder (a cold load elsewhere costs
  // more than the holder's extra queue); base requests go to the less loaded worker.
  const std::size_t n = 12;
  for (std::size_t i = 0; i < n; ++i) {
    auto r = test::greedy(100 + i, prompt, max_tokens);
    if (i % 2 == 0)
      r.draft.adapter = "one";
    cl.submit(r);
  }
  REQUIRE(cl.run_until_terminals(3 + n));
  std::set<std::uint32_t> base_workers;
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = cl.log[100 + i];
    INFO("request " << i);
    CHECK(l.terminals == 1);
    REQUIRE(l.done);
    if (i % 2 == 0) {
      CHECK(l.done->worker == holder);
      CHECK(l.done->tokens == one.done->tokens);
    } else {
      base_workers.insert(l.done->worker.value());
      CHECK(l.done->tokens == base.done->tokens);
    }
  }
  CHECK(base_workers.count(holder.value() == 1 ? 2 : 1) == 1);  // the other worker took base work

  // An adapter that is not in the directory: unknown_adapter from the worker's loop.
  auto missing = run_alone(cl, 500, prompt, "missing", 4);
  REQUIRE(missing.error);
  CHECK(missing.error->code == serve_errc::unknown_adapter);
}

TEST_CASE("priced: a burst for a cold adapter starts one load, and the base model spreads", "[cluster][lora][model]") {
  router_config rc;
  rc.placement.policy = placement_policy::priced;
  rc.placement.max_concurrent_loads = 1;
  rc.placement.aging_ms = 60000;  // no request waits that long here: the bound holds
  cluster c(rc, {test::model_worker(lora_worker()), test::model_worker(lora_worker())});
  client cl(c.sys, c.router);
  const std::string prompt = "Once upon a time";
  const int max_tokens = 12;
  auto base = run_alone(cl, 1, prompt, "", max_tokens);
  auto two = run_alone(cl, 2, prompt, "styles/two", max_tokens);  // learns a load price
  REQUIRE(base.done);
  REQUIRE(two.done);

  // A burst for "one", cold on both workers: the first placement starts its load, and while it
  // loads no second worker may start one (max_concurrent_loads 1), however busy the first gets.
  const std::size_t n = 8;
  for (std::size_t i = 0; i < n; ++i) {
    auto r = test::greedy(100 + i, prompt, max_tokens);
    r.draft.adapter = "one";
    cl.submit(r);
  }
  // Then base requests: they go wherever the work is least, i.e. mostly to the other worker.
  for (std::size_t i = 0; i < n; ++i)
    cl.submit(test::greedy(200 + i, prompt, max_tokens));
  REQUIRE(cl.run_until_terminals(2 + 2 * n));
  std::set<std::uint32_t> one_workers, base_workers;
  for (std::size_t i = 0; i < n; ++i) {
    auto& a = cl.log[100 + i];
    auto& b = cl.log[200 + i];
    REQUIRE(a.done);
    REQUIRE(b.done);
    one_workers.insert(a.done->worker.value());
    base_workers.insert(b.done->worker.value());
    CHECK(b.done->tokens == base.done->tokens);
  }
  CHECK(one_workers.size() == 1);
  const auto other = *one_workers.begin() == 1 ? 2u : 1u;
  CHECK(base_workers.count(other) == 1);
}
