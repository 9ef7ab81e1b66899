// Structured log lines (core/log.hpp): both formats, escaping, the level filter, whole lines.
#include <catch2/catch.hpp>

#include <cmath>
#include <mutex>
#include <thread>

#include "core/log.hpp"

using namespace lf;

namespace {

const auto t0 = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'000'000'123));

} // namespace

TEST_CASE("text lines: time, level, component, message, key=value", "[log]") {
  auto line = log::render(log::format::text, t0, log::level::info, "router", "request done", "head",
                          {{"rid", 12}, {"worker", "w1"}, {"ttft_ms", 41.5}, {"ok", true},
                           {"message", "two words"}, {"empty", ""}});
  CHECK(line == "2025-11-24T16:00:00.123Z INFO  router request done node=head rid=12 worker=w1 "
                "ttft_ms=41.5 ok=true message=\"two words\" empty=\"\"\n");
}

TEST_CASE("json lines: one object per line, strings escaped, numbers bare", "[log]") {
  auto line = log::render(log::format::json, t0, log::level::warn, "gateway", "say \"hi\"\n", "",
                          {{"n", std::uint64_t{7}}, {"x", -1.25}, {"bad", std::nan("")},
                           {"s", "tab\there"}, {"ctl", std::string(1, '\x01')}});
  CHECK(line == "{\"ts\":\"2025-11-24T16:00:00.123Z\",\"level\":\"warn\",\"component\":\"gateway\","
                "\"msg\":\"say \\\"hi\\\"\\n\",\"n\":7,\"x\":-1.25,\"bad\":null,\"s\":\"tab\\there\","
                "\"ctl\":\"\\u0001\"}\n");
}

TEST_CASE("levels and formats parse, lines below the level are not written", "[log]") {
  CHECK(log::parse_level("debug") == log::level::debug);
  CHECK(log::parse_level("off") == log::level::off);
  CHECK_FALSE(log::parse_level("verbose"));
  CHECK(log::parse_format("json") == log::format::json);
  CHECK_FALSE(log::parse_format("yaml"));
  std::vector<std::string> lines;
  std::mutex m;
  log::configure({log::level::warn, log::format::text, ""}, [&](std::string_view l) {
    std::lock_guard<std::mutex> g(m);
    lines.emplace_back(l);
  });
  log::info("t", "hidden");
  log::warn("t", "shown", {{"k", 1}});
  CHECK_FALSE(log::enabled(log::level::info));
  CHECK(log::enabled(log::level::error));
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("WARN  t shown k=1\n") != std::string::npos);
  // Threads write whole lines.
  lines.clear();
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t] {
      for (int i = 0; i < 200; ++i)
        log::error("t", "line", {{"thread", t}, {"i", i}});
    });
  for (auto& t : ts)
    t.join();
  CHECK(lines.size() == 800);
  for (const auto& l : lines)
    CHECK(l.find("ERROR t line thread=") != std::string::npos);
  log::configure({});
  CHECK(log::enabled(log::level::info));
}
