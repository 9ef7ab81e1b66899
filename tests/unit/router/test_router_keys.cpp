// The router keys: one row per router setting, the ranges and spellings both readers used, and
// the defaults a config file and serve start from.
#include <catch2/catch.hpp>

#include <set>

#include "router/router_config.hpp"

using namespace lf;

namespace test_router_keys {

const settings::setting_key<router::router_config>& key(std::string_view name) {
  const auto* k = settings::find(router::router_keys(), name);
  REQUIRE(k != nullptr);
  return *k;
}

} // namespace test_router_keys

using namespace test_router_keys;

TEST_CASE("router keys are unique, documented, and only placement renames its flag", "[router][settings]") {
  std::set<std::string> names;
  for (const auto& k : router::router_keys()) {
    CHECK(names.insert(k.name).second);
    CHECK_FALSE(k.doc.empty());
    if (k.name != "placement")
      CHECK(k.flag_name() == settings::flag_of(k.name));
  }
  CHECK(key("placement").flag_name() == "policy");
}

TEST_CASE("router keys hold the ranges and spellings of both readers", "[router][settings]") {
  CHECK(settings::range_text(key("queue_limit")) == "0..10^6");
  CHECK(settings::range_text(key("max_inflight_per_worker")) == "1..10^6");
  CHECK(settings::range_text(key("max_queue_wait_ms")) == "0..86400000");
  CHECK(settings::range_text(key("balance_abs")) == "0..4294967295");
  CHECK(settings::range_text(key("balance_rel")) == "1..1000");
  CHECK(settings::range_text(key("deadline_margin")) == "0..0.9");
  CHECK(settings::range_text(key("max_adapter_rank")) == "1..4096");
  CHECK(settings::range_text(key("prefetch_copies")) == "0..1024");
  CHECK(settings::choice_list(key("placement").choices, false)
        == "round_robin, least_loaded, adapter_affinity, priced or cache_aware");
  CHECK(settings::choice_list(key("scheduling").choices, false) == "fcfs or vtc");
  CHECK(settings::choice_list(key("drain_kv").choices, false) == "ship or recompute");
  CHECK(key("retry_after_ms").scope == settings::key_scope::file_only);
  CHECK(key("adapter_roots").type == settings::key_type::paths);
}

TEST_CASE("a config file and serve start from cache_aware placement", "[router][settings]") {
  const auto d = router::configured_defaults();
  CHECK(d.placement.policy == router::placement_policy::cache_aware);
  CHECK(settings::value_text(key("placement").get(d)) == "cache_aware");
  CHECK(settings::value_text(key("balance_scope").get(d)) == "prefix");
  CHECK(settings::value_text(key("drain_kv").get(d)) == "ship");
  CHECK(settings::value_text(key("queue_limit").get(d)) == "256");
  CHECK(settings::value_text(key("max_queue_wait_ms").get(d)) == "30000");
  CHECK(settings::value_text(key("deadline_admission").get(d)) == "true");
  CHECK(settings::value_text(key("output_token_weight").get(d)) == "2");
}

TEST_CASE("router rows write nested fields and durations", "[router][settings]") {
  auto c = router::configured_defaults();
  CHECK(key("scheduling").set(c, settings::value{std::string("fcfs")}));
  CHECK(c.tenants.scheduling == scheduling_policy::fcfs);
  CHECK(key("max_queue_wait_ms").set(c, settings::value{std::int64_t{500}}));
  CHECK(c.max_queue_wait == std::chrono::milliseconds(500));
  CHECK(key("balance_scope").set(c, settings::value{std::string("all")}));
  CHECK_FALSE(c.placement.balance_on_prefix);
  CHECK(key("prompt_token_weight").set(c, settings::value{3.5}));
  CHECK(c.tenants.token_weights.prompt == 3.5);
  CHECK_FALSE(key("placement").set(c, settings::value{std::string("random")}));
  CHECK(c.placement.policy == router::placement_policy::cache_aware);
}
