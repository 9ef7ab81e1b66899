// The adapter registry's log file: lines round-trip, a restart replays them, a torn last line (a
// crash while appending) is cut off, any other bad line refuses to start.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "router/adapter_log.hpp"
#include "tests/support/temp_dir.hpp"

using namespace lf;
using namespace lf::router;

namespace {

cache::adapter_event add_event(std::uint64_t seq, const std::string& name, std::uint32_t version = 1) {
  cache::adapter_event e;
  e.seq = seq;
  e.op = version == 1 ? cache::adapter_op::add : cache::adapter_op::update;
  e.name = name;
  e.version = version;
  e.source.path = "/srv/adapters/" + name;
  e.source.hash = 0x9f0c00000000abcdull;
  e.source.rank = 8;
  e.source.targets = {"attn.c_attn", "mlp.c_fc"};
  e.source.bytes = 123456;
  e.at_ms = 1795000000000;
  return e;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("adapter log lines round-trip", "[adapter_log]") {
  auto e = add_event(3, "styles/kjv", 2);
  auto back = decode_adapter_event(encode_adapter_event(e));
  CHECK(back.seq == 3);
  CHECK(back.op == cache::adapter_op::update);
  CHECK(back.name == "styles/kjv");
  CHECK(back.version == 2);
  CHECK(back.source.path == e.source.path);
  CHECK(back.source.hash == e.source.hash);
  CHECK(back.source.targets == e.source.targets);
  CHECK(back.source.bytes == 123456);
  CHECK(back.at_ms == e.at_ms);
  CHECK_THROWS_AS(decode_adapter_event("{\"seq\":1}"), std::invalid_argument);
  CHECK_THROWS_AS(decode_adapter_event("not json"), std::invalid_argument);
}

TEST_CASE("the adapter log replays at start and a torn last line is cut off", "[adapter_log]") {
  test::temp_dir tmp;
  const std::string path = tmp / "sub/adapters.log";
  {
    cache::adapter_registry reg;
    std::string warning;
    adapter_log_file f(path, reg, warning);  // created with its directory
    CHECK(warning.empty());
    f.append(add_event(1, "a"));
    f.append(add_event(2, "b"));
    reg.apply(add_event(1, "a"));
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"seq\":3,\"op\":\"upd";  // the crash
  }
  cache::adapter_registry reg;
  std::string warning;
  adapter_log_file f(path, reg, warning);
  CHECK_THAT(warning, Catch::Contains("last line was cut off"));
  CHECK(reg.last_seq() == 2);
  CHECK(reg.resolve("b").key == "b@1");
  f.append(add_event(3, "a", 2));
  const auto text = read_all(path);
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  std::istringstream lines(text);
  std::string line;
  std::uint64_t seq = 0;
  while (std::getline(lines, line))
    CHECK(decode_adapter_event(line).seq == ++seq);  // the torn bytes are gone
  CHECK(seq == 3);
}

TEST_CASE("a bad line inside the adapter log refuses to start", "[adapter_log]") {
  test::temp_dir tmp;
  const std::string path = tmp / "adapters.log";
  std::ofstream(path) << encode_adapter_event(add_event(1, "a")) << "\ngarbage\n"
                      << encode_adapter_event(add_event(2, "b")) << "\n";
  cache::adapter_registry reg;
  std::string warning;
  CHECK_THROWS_WITH(adapter_log_file(path, reg, warning), Catch::Contains("line 2"));
  std::ofstream(path) << encode_adapter_event(add_event(2, "a")) << "\n";  // a gap: seq 1 missing
  cache::adapter_registry reg2;
  CHECK_THROWS_WITH(adapter_log_file(path, reg2, warning), Catch::Contains("line 1"));
}
