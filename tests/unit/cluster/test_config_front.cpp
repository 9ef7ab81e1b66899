// A split front ([cluster] router_nodes, gateway_nodes): who runs what, what each node may hold,
// its own client endpoints, and the launch order (routers, gateways, workers).
#include "tests/unit/cluster/config_fixture.hpp"

#include "cluster/endpoints.hpp"
#include "cluster/launch_plan.hpp"

using namespace lf;
using Catch::Matchers::Contains;
using lf::test::config_dir;

namespace {

const char* split_front = R"(
[cluster]
router_nodes = ["ra", "rb"]
gateway_nodes = ["ga", "gb"]
model_dir = "model"

[[nodes]]
name = "w1"
host = "127.0.0.1"
[[nodes]]
name = "ga"
host = "127.0.0.1"
gateway_listen = "tcp://127.0.0.1:5600"
[nodes.workers]
count = 0
[[nodes]]
name = "rb"
host = "127.0.0.1"
port = 4301
[nodes.workers]
count = 0
[[nodes]]
name = "gb"
host = "127.0.0.1"
gateway_listen = "tcp://127.0.0.1:5601"
http_listen = "127.0.0.1:8601"
[nodes.workers]
count = 0
[[nodes]]
name = "ra"
host = "127.0.0.1"
port = 4300
[nodes.workers]
count = 0
)";

std::string edited(const std::string& from, const std::string& to) {
  std::string s = split_front;
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("router_nodes and gateway_nodes: roles, endpoints and the launch order", "[cluster][config]") {
  config_dir d;
  const auto c = d.load(split_front);
  CHECK(c.router_node == "ra");  // the first replica, for code that knows one router
  REQUIRE(c.routers().size() == 2);
  CHECK(c.routers()[1]->name == "rb");
  CHECK(c.split_front());
  CHECK(c.is_router("rb"));
  CHECK(c.is_gateway("gb"));
  CHECK_FALSE(c.is_gateway("ra"));
  CHECK(c.gateway_listen_of(*c.find("gb")) == "tcp://127.0.0.1:5601");
  CHECK(c.http_listen_of(*c.find("gb")) == "127.0.0.1:8601");
  CHECK(c.http_listen_of(*c.find("ga")).empty());
  CHECK(cluster::client_endpoint(c) == "tcp://127.0.0.1:5600");
  const auto plan = cluster::plan_launch(c, "/bin/lorafleet", {});
  std::vector<std::string> order;
  for (const auto& s : plan)
    order.push_back(s.node);
  CHECK(order == std::vector<std::string>{"rb", "ra", "ga", "gb", "w1"});
}

TEST_CASE("a one-router file keeps its meaning", "[cluster][config]") {
  config_dir d;
  const auto c = d.load(test::minimal_config);
  CHECK_FALSE(c.split_front());
  REQUIRE(c.routers().size() == 1);
  CHECK(c.routers()[0]->name == "head");
}

TEST_CASE("a split front's mistakes are named", "[cluster][config][errors]") {
  config_dir d;
  // Without gateway nodes, the gateway-only nodes are worker nodes with no worker: reported too.
  auto first = d.issues(edited("gateway_nodes = [\"ga\", \"gb\"]\n", ""))[0];
  CHECK(first.key == "cluster.gateway_nodes");
  CHECK_THAT(first.reason, Contains("several router nodes need gateway nodes"));
  CHECK_THAT(d.issues(edited("gateway_nodes = [\"ga\", \"gb\"]", "gateway_nodes = [\"ga\", \"gx\"]"))[0].reason,
             Contains("no node named \"gx\""));
  CHECK_THAT(d.issues(edited("gateway_nodes = [\"ga\", \"gb\"]", "gateway_nodes = [\"ga\", \"ra\"]"))[0].reason,
             Contains("is a router node"));
  cluster::config_issue i;
  auto all = d.issues(edited("router_nodes = [\"ra\", \"rb\"]", "router_node = \"rb\"\nrouter_nodes = [\"ra\", \"rb\"]"));
  CHECK(all[0].key == "cluster.router_node");
  CHECK_THAT(all[0].reason, Contains("not both"));
  i = d.issue(edited("name = \"gb\"\nhost = \"127.0.0.1\"\ngateway_listen = \"tcp://127.0.0.1:5601\"\nhttp_listen = \"127.0.0.1:8601\"\n[nodes.workers]\ncount = 0",
                     "name = \"gb\"\nhost = \"127.0.0.1\"\ngateway_listen = \"tcp://127.0.0.1:5601\"\nhttp_listen = \"127.0.0.1:8601\"\n[nodes.workers]\ncount = 1"));
  CHECK(i.key == "nodes[4].workers.count");
  CHECK_THAT(i.reason, Contains("runs no workers"));
  i = d.issue(edited("[[nodes]]\nname = \"w1\"\nhost = \"127.0.0.1\"",
                     "[[nodes]]\nname = \"w1\"\nhost = \"127.0.0.1\"\nhttp_listen = \"127.0.0.1:9000\""));
  CHECK(i.key == "nodes[1].http_listen");
  CHECK_THAT(i.reason, Contains("only a node that runs the gateways"));
  i = d.issue(edited("gateway_listen = \"tcp://127.0.0.1:5600\"", "gateway_listen = \"carrier-pigeon\""));
  CHECK(i.key == "nodes[2].gateway_listen");
}
