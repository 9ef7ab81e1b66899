// Load-test workloads: length ranges, arrival processes, adapter mixes; all seeded.
#include <catch2/catch.hpp>

#include <map>
#include <cmath>
#include <numeric>

#include "tools/loadtest/workload.hpp"

using namespace lf::loadtest;

namespace {
std::string fake_text(std::uint32_t n, std::uint64_t) { return std::string(n, 'x'); }
} // namespace

TEST_CASE("length ranges parse and reject nonsense", "[loadtest]") {
  CHECK(parse_length_range("128", "input").lo == 128);
  auto r = parse_length_range("32-512", "input");
  CHECK(r.lo == 32);
  CHECK(r.hi == 512);
  for (const char* bad : {"", "0", "-5", "9-3", "abc", "1-", "99999999999"})
    CHECK_THROWS_WITH(parse_length_range(bad, "--input"), Catch::Contains("--input"));
}

TEST_CASE("poisson arrivals have the asked mean rate and burstiness keeps it", "[loadtest]") {
  std::mt19937_64 rng(3);
  for (double burst : {1.0, 0.25}) {
    auto at = arrival_times(20.0, burst, 20000, rng);
    CHECK(at.front() == 0);
    CHECK(std::is_sorted(at.begin(), at.end()));
    CHECK(at.back() / 20000 == Approx(1.0 / 20).epsilon(0.05));
  }
  CHECK_THROWS(arrival_times(0, 1, 3, rng));
  CHECK_THROWS(arrival_times(1, -1, 3, rng));
}

TEST_CASE("plans are reproducible and follow lengths and adapter skew", "[loadtest]") {
  workload_config c;
  c.num_requests = 2000;
  c.input = {32, 64};
  c.output = {16, 16};
  c.adapters = {"a", "b", "c", "d"};
  c.skew = 0.8;
  auto p1 = plan(c, fake_text), p2 = plan(c, fake_text);
  REQUIRE(p1.size() == 2000);
  std::map<std::string, int> per;
  for (std::size_t i = 0; i < p1.size(); ++i) {
    CHECK(p1[i].prompt == p2[i].prompt);
    CHECK(p1[i].adapter == p2[i].adapter);
    CHECK(p1[i].max_tokens == 16);
    CHECK(p1[i].target_input_tokens >= 32);
    CHECK(p1[i].target_input_tokens <= 64);
    ++per[p1[i].adapter];
  }
  // 80% + 20% / 4 on "a".
  CHECK(per["a"] / 2000.0 == Approx(0.85).margin(0.03));
  CHECK(per["b"] / 2000.0 == Approx(0.05).margin(0.02));
  c.prompts = {"one", "two"};
  c.adapters.clear();
  auto p3 = plan(c, fake_text);
  CHECK(p3[0].prompt == "one");
  CHECK(p3[3].prompt == "two");
  CHECK(p3[0].adapter.empty());
}

TEST_CASE("the course's mix: one request in eight asks for the long output", "[loadtest]") {
  workload_config c;
  c.num_requests = 32;
  c.output = {10, 10};
  c.long_every = 8;
  c.long_output = 100;
  auto p = plan(c, fake_text);
  int longs = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].max_tokens == (i % 8 == 0 ? 100u : 10u));
    longs += p[i].max_tokens == 100 ? 1 : 0;
  }
  CHECK(longs == 4);
}

TEST_CASE("adapters as a count or a list, skew as a share or zipf", "[loadtest]") {
  auto names = parse_adapter_list("64", "a");
  REQUIRE(names.size() == 64);
  CHECK(names.front() == "a00");
  CHECK(names.back() == "a63");
  CHECK(parse_adapter_list("3", "lora-") == std::vector<std::string>{"lora-0", "lora-1", "lora-2"});
  CHECK(parse_adapter_list("x,y", "a") == std::vector<std::string>{"x", "y"});
  CHECK_THROWS_WITH(parse_adapter_list("0", "a"), Catch::Contains("--adapters"));
  workload_config c;
  parse_skew("0.5", c);
  CHECK(c.skew == 0.5);
  CHECK(c.zipf == 0);
  parse_skew("zipf:1.1", c);
  CHECK(c.zipf == Approx(1.1));
  for (const char* bad : {"", "zipf:", "zipf:0", "1.5", "0", "zipf:x", "0.5x", "zipf:-1"}) {
    workload_config d;
    CHECK_THROWS_WITH(parse_skew(bad, d), Catch::Contains("--skew"));
  }
}

TEST_CASE("zipf popularity: adapter k drawn with weight 1 / (k + 1)^s", "[loadtest]") {
  workload_config c;
  c.num_requests = 20000;
  c.input = {8, 8};
  c.output = {4, 4};
  c.adapters = parse_adapter_list("64", "a");
  c.zipf = 1.1;
  auto p = plan(c, fake_text);
  std::map<std::string, int> per;
  for (auto& r : p)
    ++per[r.adapter];
  double h = 0;
  for (int k = 1; k <= 64; ++k)
    h += 1 / std::pow(k, 1.1);
  CHECK(per["a00"] / 20000.0 == Approx(1 / h).margin(0.01));
  CHECK(per["a01"] / 20000.0 == Approx(1 / std::pow(2, 1.1) / h).margin(0.01));
  CHECK(per["a63"] / 20000.0 == Approx(1 / std::pow(64, 1.1) / h).margin(0.003));
  CHECK(per["a00"] > per["a01"]);
}
