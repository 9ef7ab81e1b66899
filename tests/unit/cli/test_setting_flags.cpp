// serve's settings flags, read from the worker and router tables: every type of key, the spellings
// the flags had before the tables, and errors that name the flag.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "cluster/front_keys.hpp"
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
  for (const auto& t : cluster::front_tables())
    tools::add_setting_switches(*t.keys, switches);
  return tools::args(static_cast<int>(argv.size()), argv.data(), 2, switches);
}

worker::worker_settings workers_from(std::vector<std::string> words) {
  auto a = parse(std::move(words));
  worker::worker_settings w;
  tools::read_setting_flags(a, worker::worker_keys(), w);
  a.finish();
  return w;
}

cluster::cluster_config front_from(std::vector<std::string> words) {
  auto a = parse(std::move(words));
  cluster::cluster_config c;
  for (const auto& t : cluster::front_tables())
    tools::read_setting_flags(a, *t.keys, c);
  a.finish();
  return c;
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

TEST_CASE("gateway, HTTP and key flags keep serve's names and reach the config's fields", "[cli][settings]") {
  const cluster::cluster_config defaults;
  const auto none = front_from({});
  CHECK(none.gateway_listen == defaults.gateway_listen);
  CHECK(none.max_per_connection == 1024);
  CHECK(none.http_listen.empty());
  CHECK_FALSE(none.metrics_need_key);
  const auto c = front_from({"--listen", "tcp://0.0.0.0:6000", "--max-per-connection", "8", "--http", "0.0.0.0:8000",
                             "--model-name", "gpt2", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--api-key-file",
                             "keys", "--metrics-need-key"});
  CHECK(c.gateway_listen == "tcp://0.0.0.0:6000");
  CHECK(c.max_per_connection == 8);
  CHECK(c.http_listen == "0.0.0.0:8000");
  CHECK(c.http_model_name == "gpt2");
  CHECK(c.http_tls_cert == "c.pem");
  CHECK(c.http_tls_key == "k.pem");
  CHECK(c.api_key_file == "keys");
  CHECK(c.metrics_need_key);  // a switch: it takes no value
  CHECK(cluster::check_front(c, cluster::front_flag_namer()).empty());
  CHECK_THROWS_WITH(front_from({"--max-per-connection", "0"}), Catch::Contains("--max-per-connection must be in [1, 1000000]"));
}

TEST_CASE("check_front's rules name the keys as the reader spells them", "[cli][settings]") {
  auto flags = [](const cluster::cluster_config& c) {
    return settings::first_message(cluster::check_front(c, cluster::front_flag_namer()));
  };
  auto file = [](const cluster::cluster_config& c) {
    const auto issues = cluster::check_front(c, cluster::front_file_namer());
    return issues.empty() ? std::string{} : issues.front().key + ": " + issues.front().message;
  };
  cluster::cluster_config c;
  CHECK(flags(c).empty());
  c.http_listen = "127.0.0.1:http";
  CHECK_THAT(flags(c), Catch::StartsWith("--http: the port must be a number"));
  CHECK_THAT(file(c), Catch::StartsWith("http.listen: [http] listen: the port must be a number"));
  c.http_listen.clear();
  c.http_tls_cert = "c.pem";
  CHECK_THAT(flags(c), Equals("--tls-cert and --tls-key go together: --tls-key is missing"));
  c.http_tls_key = "k.pem";
  CHECK_THAT(flags(c), Equals("--tls-cert and --tls-key need --http (TLS secures the HTTP gateway)"));
  CHECK_THAT(file(c), Equals("http.tls_cert: [http] tls_cert and [http] tls_key need [http] listen (TLS secures the HTTP gateway)"));
  cluster::cluster_config metrics;
  metrics.metrics_need_key = true;
  CHECK_THAT(flags(metrics), Equals("--metrics-need-key needs --api-key-file (no key could open /metrics)"));
  cluster::cluster_config any_port;
  any_port.gateway_listen = "tcp://127.0.0.1:0";  // serve binds a free port; a cluster config may not
  CHECK(flags(any_port).empty());
}
