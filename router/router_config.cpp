#include "router/router_config.hpp"

#include <limits>

namespace lf::router {

router_config configured_defaults() {
  router_config c;
  c.placement.policy = placement_policy::cache_aware;
  return c;
}

const std::vector<settings::setting_key<router_config>>& router_keys() {
  using settings::key_scope;
  static const auto keys = [] {
    constexpr std::int64_t day_ms = 24LL * 3600 * 1000;
    constexpr std::int64_t u32_max = std::numeric_limits<std::uint32_t>::max();
    settings::table<router_config> t;
    t.choice("placement", LF_SETTING(placement.policy),
             settings::spelt({placement_policy::round_robin, placement_policy::least_loaded,
                              placement_policy::adapter_affinity, placement_policy::priced,
                              placement_policy::cache_aware}),
             "how a worker is chosen for a request (docs/architecture.md, Router)")
      .flag = "policy";
    t.integer("queue_limit", LF_SETTING(max_queue), 0, 1'000'000,
              "admission queue bound; beyond it, overloaded with a retry hint");
    t.integer("max_inflight_per_worker", LF_SETTING(max_inflight_per_worker), 1, 1'000'000,
              "requests placed on one worker and not ended, at most (serve: twice max_seqs unless given)");
    t.integer("retry_after_ms", LF_SETTING(retry_after_ms), 0, day_ms, "the hint sent with overloaded")
      .scope = key_scope::file_only;
    t.integer("max_queue_wait_ms", LF_SETTING(max_queue_wait), 0, day_ms,
              "while no worker takes placements, how long a queued request waits for one")
      .meta = "MS";
    t.integer("adapter_load_cost_tokens", LF_SETTING(placement.adapter_load_cost_tokens), 0, u32_max,
              "adapter_affinity: the price of a cold adapter load, in tokens of queued work")
      .scope = key_scope::file_only;
    t.integer("max_concurrent_loads", LF_SETTING(placement.max_concurrent_loads), 0, u32_max,
              "priced: workers that may be loading one adapter at once (0: no bound)");
    t.integer("placement_aging_ms", LF_SETTING(placement.aging_ms), 0, day_ms,
              "priced: a request waiting this long may start one more load (0: no aging)")
      .meta = "MS";
    t.number("load_price_weight", LF_SETTING(placement.load_price_weight), 0, 1000,
             "priced: the learned load time is multiplied by this in the estimate");
    t.number("decode_share", LF_SETTING(placement.decode_share), 0, 1000,
             "priced: the share of a worker's decoding still to come counted as delay");
    t.integer("balance_abs", LF_SETTING(placement.balance_abs), 0, u32_max,
              "cache_aware's load guard: in-flight requests above the least busy worker's");
    t.number("balance_rel", LF_SETTING(placement.balance_rel), 1, 1000,
             "cache_aware's load guard, the relative half (both must hold)");
    t.choice("balance_scope", LF_SETTING(placement.balance_on_prefix),
             std::vector<std::pair<std::string, bool>>{{"prefix", true}, {"all", false}},
             "what the guard counts: requests sharing the cached prefix, or all");
    t.choice("drain_kv", LF_SETTING(ship_kv), std::vector<std::pair<std::string, bool>>{{"ship", true}, {"recompute", false}},
             "how a drain moves a running request: with its K/V, or re-prefilled");
    t.choice("scheduling", LF_SETTING(tenants.scheduling), settings::spelt({scheduling_policy::fcfs, scheduling_policy::vtc}),
             "which queued request goes next across tenants, in the router and every worker");
    t.number("prompt_token_weight", LF_SETTING(tenants.token_weights.prompt), 0, 1e6,
             "what vtc charges a tenant per prompt token")
      .scope = key_scope::file_only;
    t.number("output_token_weight", LF_SETTING(tenants.token_weights.output), 0, 1e6,
             "what vtc charges a tenant per output token")
      .scope = key_scope::file_only;
    t.boolean("deadline_admission", LF_SETTING(deadline_admission),
              "refuse at once a request predicted to miss its deadline or ttft target");
    t.number("deadline_margin", LF_SETTING(deadline_margin), 0, 0.9,
             "admission refuses a request predicted to need more than (1 - margin) of its deadline");
    t.path("adapter_log", LF_SETTING(adapter_log), "the adapter registry's log file (none: memory only)").meta = "FILE";
    t.paths("adapter_roots", LF_SETTING(adapter_roots), "where `adapters add` may take adapters from").meta = "DIR,DIR";
    t.integer("max_adapter_rank", LF_SETTING(max_adapter_rank), 1, 4096, "an adapter of higher rank is refused");
    t.integer("prefetch_copies", LF_SETTING(prefetch_copies), 0, 1024,
              "workers that load an added or updated adapter at once, in the background");
    return t.rows;
  }();
  return keys;
}

} // namespace lf::router
