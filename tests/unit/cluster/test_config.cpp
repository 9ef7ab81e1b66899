// Loading valid cluster configs: every key lands where it should, defaults, relative paths,
// key files, and the ready configs of cluster-configs/.
#include "tests/unit/cluster/config_fixture.hpp"

#include <filesystem>

using namespace lf;
using lf::test::config_dir;

namespace {
const char* z85_a = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const char* z85_b = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
const char* z85_c = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
} // namespace

TEST_CASE("a minimal config gets the documented defaults", "[cluster][config]") {
  config_dir d;
  auto c = d.load(test::minimal_config);
  CHECK(c.name == "cluster");  // the file's stem
  CHECK(c.router_node == "head");
  CHECK(c.model_dir == (d.dir.path() / "model").string());
  CHECK(c.tokenizer_dir.empty());
  CHECK(c.gateway_listen == "tcp://127.0.0.1:5555");
  CHECK(c.router_cfg.placement.policy == router::placement_policy::cache_aware);  // config files' default
  CHECK(c.router_cfg.ship_kv);
  CHECK(c.heartbeat_interval == std::chrono::milliseconds(1000));
  CHECK(c.heartbeat_timeout == std::chrono::milliseconds(5000));
  REQUIRE(c.nodes.size() == 1);
  CHECK(c.router().port == 4200);
  CHECK(c.router().bind == "127.0.0.1");
  CHECK(c.router().workers.count == 2);
  CHECK(c.router().workers.settings.threads == 0);  // 0: each worker's share of the cores
  CHECK(c.total_workers() == 2);
  CHECK_FALSE(c.clients.enabled());
  CHECK_FALSE(c.tls.enabled());
  CHECK(c.router_cfg.tenants.scheduling == scheduling_policy::vtc);
  CHECK(c.router_cfg.deadline_admission);
  CHECK(c.router_cfg.tenants.tenants.empty());
  CHECK(c.router_cfg.tenants.defaults.max_inflight == router::no_limit);
  CHECK(c.router_cfg.tenants.defaults.max_queued == router::no_limit);
}

TEST_CASE("every key of a full config is read", "[cluster][config]") {
  config_dir d;
  std::filesystem::create_directories(d.dir.path() / "adapters");
  std::filesystem::create_directories(d.dir.path() / "keys");
  std::ofstream(d.dir.path() / "keys" / "server.secret") << z85_b << "\n";
  std::ofstream(d.dir.path() / "keys" / "bob.public") << z85_c << "\n";
  auto c = d.load(std::string(R"(
[cluster]
name = "lab"
router_node = "head"
model_dir = "./model/"
tokenizer_dir = "model"
adapter_dir = "adapters"

[gateway]
listen = "tcp://0.0.0.0:6000"
max_per_connection = 99

[router]
placement = "adapter_affinity"
queue_limit = 12
max_inflight_per_worker = 7
retry_after_ms = 250
adapter_load_cost_tokens = 300
drain_kv = "recompute"
scheduling = "fcfs"
prompt_token_weight = 0.5
output_token_weight = 3
deadline_admission = false
deadline_margin = 0.25
adapter_log = "state/adapters.log"
adapter_roots = ["adapters", "/srv/more"]
max_adapter_rank = 32
prefetch_copies = 0

[tenant_defaults]
max_inflight = 16
max_queued = 32

[tenants.alice]
weight = 2.5
max_queued = 0

[tenants."team b"]
max_inflight = 4

[limits]
max_prompt_bytes = 5000
max_tokens = 100
max_stop = 3
max_stop_len = 20

[heartbeat]
interval_ms = 250
timeout_ms = 1500

[reconnect]
initial_ms = 50
max_ms = 800

[workers]
threads = 2
kv_cache_mb = 48
max_seqs = 8
max_batched_tokens = 128

[security.clients]
public_key = ")") + z85_a + R"("
secret_key_file = "keys/server.secret"
allowed_keys = [")" + z85_a + R"("]
allowed_key_files = ["keys/bob.public"]

[launch]
ready_timeout_s = 30
stop_timeout_s = 5
restart = false
remote_binary = "/opt/lorafleet/bin/lorafleet"
remote_config = "/etc/lorafleet/lab.toml"
ssh_options = ["-p", "2222"]

[[nodes]]
name = "head"
host = "10.0.0.1"
port = 4200
bind = "0.0.0.0"
[nodes.workers]
count = 0

[[nodes]]
name = "gpu-1"
host = "10.0.0.2"
ssh = "ops@10.0.0.2"
[nodes.workers]
count = 3
dtype = "bf16"
block_size = 32
prefix_cache = false
prefix_cache_isolation = "shared"
speculation = "on"
speculative_tokens = 6
draft_model = "small"
speculation_method = "draft"
draft_kv_cache_mb = 32
draft_threads = 2
adapter_cache_mb = 64
max_adapters = 4
report_interval_ms = 20
)");
  CHECK(c.name == "lab");
  CHECK(c.model_dir == (d.dir.path() / "model/").lexically_normal().string());
  CHECK(c.adapter_dir == (d.dir.path() / "adapters").string());
  CHECK(c.gateway_listen == "tcp://0.0.0.0:6000");
  CHECK(c.max_per_connection == 99);
  CHECK(c.router_cfg.placement.policy == router::placement_policy::adapter_affinity);
  CHECK(c.router_cfg.placement.adapter_load_cost_tokens == 300);
  CHECK_FALSE(c.router_cfg.ship_kv);
  CHECK(c.router_cfg.max_queue == 12);
  CHECK(c.router_cfg.max_inflight_per_worker == 7);
  CHECK(c.router_cfg.retry_after_ms == 250);
  CHECK(c.max_prompt_bytes == 5000);
  CHECK(c.router_cfg.limits.max_tokens_limit == 100);
  CHECK(c.router_cfg.limits.max_stop == 3);
  CHECK(c.router_cfg.limits.max_stop_len == 20);
  CHECK(c.heartbeat_interval.count() == 250);
  CHECK(c.heartbeat_timeout.count() == 1500);
  CHECK(c.reconnect_initial.count() == 50);
  CHECK(c.reconnect_max.count() == 800);
  CHECK(c.clients.public_key == z85_a);
  CHECK(c.clients.secret_key == z85_b);
  CHECK(c.clients.allowed_keys == std::vector<std::string>{z85_a, z85_c});
  // A key from a file is named by the file: keygen's bob.public -> bob.
  CHECK(c.clients.key_names == std::map<std::string, std::string>{{z85_c, "bob"}});
  const auto& t = c.router_cfg.tenants;
  CHECK(t.scheduling == scheduling_policy::fcfs);
  CHECK(t.token_weights.prompt == 0.5);
  CHECK(t.token_weights.output == 3);
  CHECK_FALSE(c.router_cfg.deadline_admission);
  CHECK(c.router_cfg.deadline_margin == 0.25);
  // Registry paths resolve against the config file's directory, as adapter_dir does.
  CHECK(c.router_cfg.adapter_log == (std::filesystem::path(c.adapter_dir).parent_path() / "state/adapters.log").string());
  CHECK(c.router_cfg.adapter_roots == std::vector<std::string>{c.adapter_dir, "/srv/more"});
  CHECK(c.router_cfg.max_adapter_rank == 32);
  CHECK(c.router_cfg.prefetch_copies == 0);
  CHECK(t.defaults.max_inflight == 16);
  CHECK(t.defaults.max_queued == 32);
  CHECK(t.defaults.weight == 1);
  REQUIRE(t.tenants.size() == 2);
  // A tenant's unset keys are the defaults.
  CHECK(t.limits_of("alice").weight == 2.5);
  CHECK(t.limits_of("alice").max_queued == 0);
  CHECK(t.limits_of("alice").max_inflight == 16);
  CHECK(t.limits_of("team b").max_inflight == 4);
  CHECK(t.limits_of("team b").max_queued == 32);
  CHECK(t.limits_of("someone else").max_inflight == 16);
  CHECK(c.launch.ready_timeout.count() == 30);
  CHECK(c.launch.stop_timeout.count() == 5);
  CHECK_FALSE(c.launch.restart);
  CHECK(c.launch.ssh_options == std::vector<std::string>{"-p", "2222"});
  REQUIRE(c.nodes.size() == 2);
  const auto& head = c.nodes[0];
  CHECK(head.bind == "0.0.0.0");
  CHECK(head.workers.count == 0);
  CHECK(head.workers.settings.threads == 2);  // from [workers]
  const auto& g = c.nodes[1];
  CHECK(g.port == 0);
  CHECK(g.ssh == "ops@10.0.0.2");
  CHECK(g.workers.count == 3);
  CHECK(g.workers.settings.threads == 2);
  CHECK(g.workers.settings.kv_cache_mb == 48);
  CHECK(g.workers.settings.max_seqs == 8);
  CHECK(g.workers.settings.max_batched_tokens == 128);
  CHECK(g.workers.settings.speculation == worker::speculation_mode::on);
  CHECK(g.workers.settings.speculative_tokens == 6);
  CHECK(g.workers.settings.draft_model == (d.dir.path() / "small").string());
  CHECK(g.workers.settings.speculation_method == "draft");
  CHECK(worker::method_of(g.workers.settings) == worker::speculation_method::draft);
  CHECK(worker::method_of(head.workers.settings) == worker::speculation_method::ngram);  // no draft model
  CHECK(g.workers.settings.draft_kv_cache_mb == 32);
  CHECK(g.workers.settings.draft_threads == 2);
  CHECK(head.workers.settings.speculation == worker::speculation_mode::automatic);  // the default
  CHECK(g.workers.settings.dtype == "bf16");
  CHECK(g.workers.settings.block_size == 32);
  CHECK_FALSE(g.workers.settings.prefix_cache);
  CHECK(g.workers.settings.prefix_cache_isolation == cache::prefix_isolation::shared);
  CHECK(head.workers.settings.prefix_cache_isolation == cache::prefix_isolation::tenant);  // the default
  CHECK(g.workers.settings.adapter_cache_mb == 64);
  CHECK(g.workers.settings.max_adapters == 4);
  CHECK(g.workers.report_interval.count() == 20);
  CHECK(c.total_workers() == 3);
}

TEST_CASE("paths are resolved against the config file's directory, not the working directory", "[cluster][config]") {
  config_dir d;
  std::filesystem::create_directories(d.dir.path() / "configs");
  std::ofstream(d.dir.path() / "configs" / "c.toml") << R"(
[cluster]
router_node = "head"
model_dir = "../model"
[[nodes]]
name = "head"
host = "localhost"
port = 4200
)";
  auto c = cluster::load_cluster_config((d.dir.path() / "configs" / "c.toml").string());
  CHECK(c.model_dir == (d.dir.path() / "model").string());
  CHECK(c.file == (d.dir.path() / "configs" / "c.toml").string());
}

TEST_CASE("without path checks a config for other hosts loads", "[cluster][config]") {
  config_dir d;
  auto text = std::string(test::minimal_config);
  text.replace(text.find("\"model\""), 7, "\"/nowhere/model\"");
  CHECK_THROWS_AS(d.load(text), cluster::config_error);
  cluster::load_options o;
  o.check_paths = false;
  CHECK(d.load(text, o).model_dir == "/nowhere/model");
}

TEST_CASE("the ready configs in cluster-configs/ are valid", "[cluster][config]") {
  cluster::load_options o;
  o.check_paths = false;  // they point at models/default, which may not be trained yet
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(LF_SOURCE_DIR) + "/cluster-configs")) {
    if (e.path().extension() != ".toml")
      continue;
    INFO(e.path());
    auto c = cluster::load_cluster_config(e.path().string(), o);
    CHECK(c.total_workers() >= 1);
    ++n;
  }
  CHECK(n >= 3);
}

TEST_CASE("Z85 keys are 40 characters of the Z85 alphabet", "[cluster][config]") {
  CHECK(cluster::valid_z85_key(z85_a));
  CHECK_FALSE(cluster::valid_z85_key(""));
  CHECK_FALSE(cluster::valid_z85_key(std::string(z85_a) + "0"));
  auto bad = std::string(z85_a);
  bad[3] = '"';
  CHECK_FALSE(cluster::valid_z85_key(bad));
}
