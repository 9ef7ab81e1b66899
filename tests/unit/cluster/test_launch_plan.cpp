// Endpoints and hosts, launch plans (local / ssh / manual), reconnect backoff, log line splitting.
#include "tests/unit/cluster/config_fixture.hpp"

#include "cluster/endpoints.hpp"
#include "cluster/launch_plan.hpp"

using namespace lf;
using namespace lf::cluster;
using namespace std::chrono_literals;

TEST_CASE("gateway endpoints parse as tcp://HOST:PORT or ipc://PATH", "[cluster][endpoints]") {
  auto e = parse_endpoint("tcp://127.0.0.1:5555");
  REQUIRE(e);
  CHECK(e->transport == "tcp");
  CHECK(e->host == "127.0.0.1");
  CHECK(e->port == 5555);
  CHECK(parse_endpoint("tcp://*:1")->host == "*");
  CHECK(parse_endpoint("ipc:///tmp/lf.sock")->host == "/tmp/lf.sock");
  std::string why;
  CHECK_FALSE(parse_endpoint("tcp://host", &why));
  CHECK_FALSE(parse_endpoint("tcp://host:0"));
  CHECK_FALSE(parse_endpoint("tcp://host:99999"));
  CHECK_FALSE(parse_endpoint("tcp://host:12a"));
  CHECK_FALSE(parse_endpoint("udp://host:1", &why));
  CHECK_THAT(why, Catch::Matchers::Contains("tcp://HOST:PORT"));
}

TEST_CASE("loopback names are one machine, this host's names are local", "[cluster][endpoints]") {
  CHECK(host_key("localhost") == host_key("127.0.0.1"));
  CHECK(host_key("127.0.1.1") == host_key("::1"));
  CHECK(host_key("Node-A") == "node-a");
  const std::vector<std::string> names{"box7", "10.0.0.7"};
  CHECK(is_local_host("127.0.0.1", names));
  CHECK(is_local_host("LOCALHOST", names));
  CHECK(is_local_host("BOX7", names));
  CHECK(is_local_host("10.0.0.7", names));
  CHECK_FALSE(is_local_host("10.0.0.8", names));
  CHECK_FALSE(is_local_host("box70", names));
}

TEST_CASE("a launch plan starts local nodes, ssh nodes, and prints the rest", "[cluster][launch]") {
  test::config_dir d;
  std::string head = test::minimal_config;
  head.replace(head.find("127.0.0.1"), 9, "box7");
  auto c = d.load(head + R"(
[gateway]
listen = "tcp://0.0.0.0:5555"
[launch]
remote_binary = "/opt/lf/lorafleet"
remote_config = "/etc/lf/my cluster.toml"
ssh_options = ["-p", "2222"]

[[nodes]]
name = "far"
host = "10.9.9.9"

[[nodes]]
name = "sshed"
host = "10.9.9.10"
ssh = "ops@10.9.9.10"

[[nodes]]
name = "mine"
host = "box7"
port = 4300
)");
  CHECK(client_endpoint(c) == "tcp://box7:5555");  // the wildcard becomes the router node's host
  auto plan = plan_launch(c, "/usr/bin/lorafleet", {"box7"});
  REQUIRE(plan.size() == 4);
  CHECK(plan[0].node == "head");  // the router node first
  CHECK(plan[0].mode == start_mode::local);
  CHECK(plan[0].argv == std::vector<std::string>{"/usr/bin/lorafleet", "node", c.file, "--name", "head"});
  CHECK(plan[1].node == "far");
  CHECK(plan[1].mode == start_mode::manual);
  CHECK(command_line(plan[1].argv) == "/opt/lf/lorafleet node '/etc/lf/my cluster.toml' --name far");
  CHECK(plan[2].mode == start_mode::ssh);
  CHECK(plan[2].argv == std::vector<std::string>{"ssh", "-tt", "-o", "BatchMode=yes", "-p", "2222",
                                                 "ops@10.9.9.10", "--",
                                                 "/opt/lf/lorafleet node '/etc/lf/my cluster.toml' --name sshed"});
  CHECK(plan[3].mode == start_mode::local);
  CHECK(to_string(start_mode::ssh) == "ssh");
}

TEST_CASE("shell quoting", "[cluster][launch]") {
  CHECK(shell_quote("plain/path-1.toml") == "plain/path-1.toml");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("$(rm -rf /)") == "'$(rm -rf /)'");
}

TEST_CASE("reconnect backoff doubles up to its cap and resets", "[cluster][launch]") {
  backoff b(100ms, 700ms);
  // Delays: 100, 200, 400, 700, 700; after reset: 100.
  CHECK(b.next() == 100ms);
  CHECK(b.next() == 200ms);
  CHECK(b.next() == 400ms);
  CHECK(b.next() == 700ms);
  CHECK(b.next() == 700ms);
  b.reset();
  CHECK(b.next() == 100ms);
}

TEST_CASE("a child's output becomes whole lines", "[cluster][launch]") {
  line_splitter s(8);
  CHECK(s.feed("hel").empty());
  CHECK(s.feed("lo\r\nwor") == std::vector<std::string>{"hello"});
  CHECK(s.feed("ld\n\n") == std::vector<std::string>{"world", ""});
  // A line without newline is cut at the limit rather than buffered for ever.
  CHECK(s.feed("0123456789") == std::vector<std::string>{"01234567"});
  CHECK(s.flush() == "89");
  CHECK(s.flush().empty());
}
