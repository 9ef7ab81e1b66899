// serve's settings flags, read from the worker and router tables: every type of key, the spellings
// the flags had before the tables, and errors that name the flag.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "router/router_config.hpp"
#include "tools/cli/setting_flags.hpp"
#include "worker/worker_settings.hpp"

using namespace lf;
using Catch::Matchers::Equals;

namespace test_setting_flags {

/// An args over `words` (after the command's name), with the tables' switches.
tools::args parse(std::vector<std::string> words) {
  static std::vector<std::string> keep;
  keep = std::move(words);
  keep.insert(keep.begin(), {"lorafleet", "serve"});
  static std::vector<char*> argv;
  argv.clear();
  for (auto& w : keep)
    argv.push_back(w.data());
  std::set<std::string> switches;
  tools::add_setting_switches(worker::worker_keys(), switches);
  tools::add_setting_switches(router::router_keys(), switches);
  return tools::args(static_cast<int>(argv.size()), argv.data(), 2, switches);
}

worker::worker_settings workers_from(std::vector<std::string> words) {
  auto a = parse(std::move(words));
  worker::worker_settings w;
  tools::read_setting_flags(a, worker::worker_keys(), w);
  a.finish();
  return w;
}

router::router_config router_from(std::vector<std::string> words) {
  auto a = parse(std::move(words));
  auto r = router::configured_defaults();
  tools::read_setting_flags(a, router::router_keys(), r);
  a.finish();
  return r;
}

} // namespace test_setting_flags

using namespace test_setting_flags;

TEST_CASE("no flag leaves every default", "[cli][settings]") {
  const auto w = workers_from({});
  const worker::worker_settings d;
  CHECK(w.max_seqs == d.max_seqs);
  CHECK(w.dtype == d.dtype);
  CHECK(w.prefix_cache);
  const auto r = router_from({});
  CHECK(r.placement.policy == router::placement_policy::cache_aware);
  CHECK(r.max_queue == 256);
}

TEST_CASE("worker flags of every type reach their fields", "[cli][settings]") {
  const auto w = workers_from({"--max-seqs", "8", "--max-batched-tokens=128", "--dtype", "f32", "--no-prefix-cache",
                               "--mode", "static", "--prefix-cache-isolation", "shared", "--draft-model", "/d",
                               "--speculation", "off", "--kv-cache-mb", "48"});
  CHECK(w.max_seqs == 8);
  CHECK(w.max_batched_tokens == 128);
  CHECK(w.dtype == "f32");
  CHECK_FALSE(w.prefix_cache);  // a switch: it takes no value, the next flag is read as one
  CHECK(w.mode == worker::batching_mode::static_batch);
  CHECK(w.prefix_cache_isolation == cache::prefix_isolation::shared);
  CHECK(w.draft_model == "/d");
  CHECK(w.speculation == worker::speculation_mode::off);
  CHECK(w.kv_cache_mb == 48);
}

TEST_CASE("router flags of every type reach their fields", "[cli][settings]") {
  const auto r = router_from({"--policy", "priced", "--queue-limit", "12", "--max-queue-wait-ms", "500",
                              "--balance-rel", "2.5", "--balance-scope", "all", "--drain-kv", "recompute",
                              "--deadline-admission", "off", "--adapter-roots", "a,,b", "--scheduling", "fcfs"});
  CHECK(r.placement.policy == router::placement_policy::priced);
  CHECK(r.max_queue == 12);
  CHECK(r.max_queue_wait == std::chrono::milliseconds(500));
  CHECK(r.placement.balance_rel == 2.5);
  CHECK_FALSE(r.placement.balance_on_prefix);
  CHECK_FALSE(r.ship_kv);
  CHECK_FALSE(r.deadline_admission);
  CHECK(r.adapter_roots == std::vector<std::string>{"a", "b"});
  CHECK(r.tenants.scheduling == scheduling_policy::fcfs);
}

TEST_CASE("bad flag values are refused naming the flag, as before the tables", "[cli][settings]") {
  CHECK_THROWS_WITH(workers_from({"--max-seqs", "0"}), Equals("--max-seqs must be in [1, 4096] (got 0)"));
  CHECK_THROWS_WITH(workers_from({"--max-seqs", "x"}), Equals("--max-seqs expects an integer (got 'x')"));
  CHECK_THROWS_WITH(workers_from({"--dtype", "f64"}), Equals("--dtype must be f32, bf16, int8 or int4 (got 'f64')"));
  CHECK_THROWS_WITH(workers_from({"--kv-dtype", "f16"}), Equals("--kv-dtype must be f32, bf16 or int8 (got 'f16')"));
  CHECK_THROWS_WITH(workers_from({"--mode", "bogus"}),
                    Equals("--mode must be continuous, static or static_no_cache (got 'bogus')"));
  CHECK_THROWS_WITH(router_from({"--policy", "bogus"}),
                    Equals("--policy must be round_robin, least_loaded, adapter_affinity, priced or cache_aware (got 'bogus')"));
  CHECK_THROWS_WITH(router_from({"--balance-rel", "0.5"}), Equals("--balance-rel must be >= 1 and <= 1000 (got 0.5)"));
  CHECK_THROWS_WITH(router_from({"--deadline-admission", "yes"}),
                    Equals("--deadline-admission must be on or off (got 'yes')"));
}

TEST_CASE("keys a config file alone reads are no flags", "[cli][settings]") {
  CHECK_THROWS_WITH(router_from({"--retry-after-ms", "5"}), Equals("unknown option --retry-after-ms"));
  CHECK_THROWS_WITH(router_from({"--placement", "priced"}), Equals("unknown option --placement"));
  CHECK_THROWS_WITH(workers_from({"--prefix-cache", "off"}), Equals("unknown option --prefix-cache"));
}
