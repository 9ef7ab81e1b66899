// A node that joins with --join: the config it is made into, node names, join tokens, the
// router's exposure check, and a worker node's /metrics page (pure).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cluster/join_config.hpp"
#include "cluster/node_metrics.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/cluster/config_fixture.hpp"

using namespace lf;
using namespace lf::cluster;
namespace fs = std::filesystem;

namespace {

join_settings joining() {
  join_settings j;
  j.router = "lorafleet-router-cluster:7070";
  j.name = "lorafleet-worker-5d8c4-x2x9q";
  j.model_dir = "/models/gpt2";
  j.workers.count = 2;
  return j;
}

} // namespace

TEST_CASE("join: the settings become a two-node config the worker node runs as is", "[cluster][join]") {
  const auto c = join_cluster_config(joining());
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.router().name == "router");
  CHECK(c.router().host == "lorafleet-router-cluster");  // resolved at each connect attempt
  CHECK(c.router().port == 7070);
  CHECK(c.router().workers.count == 0);
  const auto* self = c.find("lorafleet-worker-5d8c4-x2x9q");
  REQUIRE(self);
  CHECK(self->workers.count == 2);
  CHECK(c.model_dir == "/models/gpt2");
  CHECK_FALSE(c.tls.enabled());
  CHECK(c.total_workers() == 2);
}

TEST_CASE("join: bad values are refused naming the flag", "[cluster][join]") {
  auto bad = [](auto change) {
    auto j = joining();
    change(j);
    try {
      join_cluster_config(j);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  using Catch::Contains;
  CHECK_THAT(bad([](join_settings& j) { j.router = "no-port"; }), Contains("--join"));
  CHECK_THAT(bad([](join_settings& j) { j.router = "host:0"; }), Contains("CAF port"));
  CHECK_THAT(bad([](join_settings& j) { j.name = "has space"; }), Contains("--name"));
  CHECK_THAT(bad([](join_settings& j) { j.name = std::string(65, 'a'); }), Contains("--name"));
  CHECK_THAT(bad([](join_settings& j) { j.name = "router"; }), Contains("router node's"));
  CHECK_THAT(bad([](join_settings& j) { j.router = "a:7300,b"; }), Contains("got \"b\""));
  CHECK_THAT(bad([](join_settings& j) { j.tls.ca_file = "ca.crt"; }), Contains("--tls-ca, --tls-cert and --tls-key"));
  CHECK_THAT(bad([](join_settings& j) { j.heartbeat_timeout = j.heartbeat_interval; }), Contains("twice"));
  CHECK_THAT(bad([](join_settings& j) { j.model_dir.clear(); }), Contains("--model"));
  CHECK(bad([](join_settings& j) { j.name = "node-1.example.org"; }) == "accepted");  // a host name
}

TEST_CASE("join token file: at least 16 characters, white space trimmed, no one else may read it", "[cluster][join]") {
  test::temp_dir d;
  const auto path = (d.path() / "token").string();
  std::string why;
  CHECK(read_join_token(path, why).empty());
  CHECK_THAT(why, Catch::Contains("cannot read the join token file"));
  std::ofstream(path) << "  0123456789abcdef0123\n";
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  CHECK(read_join_token(path, why) == "0123456789abcdef0123");
  CHECK(why.empty());
  fs::permissions(path, fs::perms::owner_read | fs::perms::others_read);
  CHECK(read_join_token(path, why).empty());
  CHECK_THAT(why, Catch::Contains("others"));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  std::ofstream(path, std::ios::trunc) << "short\n";
  CHECK(read_join_token(path, why).empty());
  CHECK_THAT(why, Catch::Contains("at least 16 characters"));
}

TEST_CASE("the router's CAF port beyond loopback needs mutual TLS or a join token", "[cluster][join]") {
  test::config_dir d;
  auto c = d.load(test::minimal_config);
  CHECK(check_router_exposure(c).empty());  // 127.0.0.1
  c.nodes[0].bind = "0.0.0.0";
  CHECK_THAT(check_router_exposure(c), Catch::Contains("reachable beyond this machine")
                                         && Catch::Contains("join_token_file"));
  c.tls.join_token_file = "/run/secrets/token";
  CHECK(check_router_exposure(c).empty());
  c.tls.join_token_file.clear();
  c.tls.ca_file = "/run/secrets/ca.crt";
  CHECK(check_router_exposure(c).empty());
}

TEST_CASE("a config without workers (an elastic cluster) or without model_dir loads", "[cluster][join]") {
  test::config_dir d;
  std::string text = test::minimal_config;
  text.replace(text.find("count = 2"), 9, "count = 0");
  CHECK(d.load(text).total_workers() == 0);
  text.replace(text.find("model_dir = \"model\"\n"), 20, "");
  CHECK_THAT(to_string(d.issue(text)), Catch::Contains("cluster.model_dir"));
  load_options o;
  o.default_model_dir = (d.dir.path() / "model").string();
  CHECK(d.load(text, o).model_dir == o.default_model_dir);
}

TEST_CASE("node metrics: vLLM's gauges for the node and lorafleet's per worker", "[cluster][metrics]") {
  worker_gauges a;
  a.name = "pod-a/1";
  a.waiting = 3;
  a.running = 5;
  a.free_blocks = 30;
  a.total_blocks = 100;
  a.running_adapters = {"french@2", "pirate@1"};
  a.waiting_adapters = {"kjv@1"};
  a.max_adapters = 8;
  worker_gauges b = a;
  b.name = "pod-a/2";
  b.waiting = 1;
  b.free_blocks = 100;
  b.running_adapters = {"pirate@1"};
  b.waiting_adapters = {};
  const auto page = render_node_metrics("gpt2 \"small\"", {a, b}, true, 1764300000);
  const std::string model = "{model_name=\"gpt2 \\\"small\\\"\"}";
  CHECK_THAT(page, Catch::Contains("vllm:num_requests_waiting" + model + " 4\n"));
  CHECK_THAT(page, Catch::Contains("vllm:num_requests_running" + model + " 10\n"));
  CHECK_THAT(page, Catch::Contains("vllm:kv_cache_usage_perc" + model + " 0.35\n"));
  CHECK_THAT(page, Catch::Contains("vllm:lora_requests_info{running_lora_adapters=\"french@2,pirate@1\","
                                   "waiting_lora_adapters=\"kjv@1\",max_lora=\"16\"} 1764300000\n"));
  CHECK_THAT(page, Catch::Contains("# TYPE vllm:num_requests_waiting gauge\n"));
  CHECK_THAT(page, Catch::Contains("lorafleet:node_ready 1\n"));
  CHECK_THAT(page, Catch::Contains("lorafleet:worker_num_requests_waiting{worker=\"pod-a/2\"} 1\n"));
  CHECK_THAT(page, Catch::Contains("lorafleet:worker_kv_blocks_used{worker=\"pod-a/1\"} 70\n"));
  // While the models load: no worker yet, zeros, not ready.
  const auto empty = render_node_metrics("m", {}, false, 1);
  CHECK_THAT(empty, Catch::Contains("vllm:num_requests_waiting{model_name=\"m\"} 0\n"));
  CHECK_THAT(empty, Catch::Contains("vllm:kv_cache_usage_perc{model_name=\"m\"} 0\n"));
  CHECK_THAT(empty, Catch::Contains("lorafleet:node_ready 0\n"));
}

TEST_CASE("join: several router replicas, each registered with", "[cluster][join]") {
  join_settings j;
  j.router = "router-0.router:7300,router-1.router:7300";
  j.name = "pod-1";
  j.model_dir = "/models/default";
  const auto c = join_cluster_config(j);
  REQUIRE(c.routers().size() == 2);
  CHECK(c.routers()[0]->host == "router-0.router");
  CHECK(c.routers()[1]->host == "router-1.router");
  CHECK(c.routers()[1]->port == 7300);
  CHECK(c.is_router("router-2"));
  CHECK_FALSE(c.is_router("pod-1"));
  CHECK(c.find("pod-1")->workers.count == 1);
}
