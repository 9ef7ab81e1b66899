// Load tests with tenants (tools/loadtest/tenants.hpp): load shares, plans per tenant, service per
// tenant, the largest gap, Jain's index, the capacity spent on timeouts.
#include <catch2/catch.hpp>

#include <map>

#include "tools/loadtest/report.hpp"
#include "tools/loadtest/tenants.hpp"
#include "tools/loadtest/workload.hpp"

using namespace lf::loadtest;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_loadtest_tenants {

namespace {

std::string fake_text(std::uint32_t n, std::uint64_t) { return std::string(n, 'x'); }

/// A finished request of `tenant` sent at `sent_s`: its first token `ttft_ms` later, then one
/// token every `gap_ms`.
request_sample sample(const std::string& tenant, double sent_s, std::uint32_t in, std::uint32_t out,
                      double ttft_ms = 10, double gap_ms = 10) {
  request_sample s;
  s.tenant = tenant;
  s.sent_s = sent_s;
  s.tokens_in = in;
  s.tokens_out = out;
  s.ttft_ms = ttft_ms;
  s.itl_ms.assign(out > 0 ? out - 1 : 0, gap_ms);
  s.e2e_ms = ttft_ms + gap_ms * (out > 0 ? out - 1 : 0);
  return s;
}

} // namespace

TEST_CASE("tenant specs: names and shares, with the flag named on errors", "[loadtest][tenants]") {
  auto t = parse_tenants("a:10,b:1,c", "--tenants");
  REQUIRE(t.size() == 3);
  CHECK(t[0].name == "a");
  CHECK(t[0].share == 10);
  CHECK(t[2].name == "c");
  CHECK(t[2].share == 1);
  for (const char* bad : {"", "a:0", "a:-1", "a:x", ":3", "a,a", "a:1e400"})
    CHECK_THROWS_WITH(parse_tenants(bad, "--tenants"), Catch::Contains("--tenants"));
  auto split = split_by_share(parse_tenants("a:10,b:1,c:1,d:1", "t"), 26);
  CHECK(split == std::map<std::string, std::uint32_t>{{"a", 20}, {"b", 2}, {"c", 2}, {"d", 2}});
  CHECK(split_by_share(parse_tenants("a:100,b:1", "t"), 10).at("b") == 1);  // never 0
}

TEST_CASE("a plan with tenants splits requests and the Poisson rate by share", "[loadtest][tenants]") {
  workload_config c;
  c.mode = arrival_mode::poisson;
  c.rate = 130;
  c.num_requests = 1300;
  c.tenants = parse_tenants("a:10,b:1,c:1,d:1", "t");
  const auto p = plan(c, fake_text);
  std::map<std::string, int> n;
  std::map<std::string, double> last;
  for (const auto& r : p) {
    ++n[r.tenant];
    last[r.tenant] = r.at_s;
  }
  CHECK(n == std::map<std::string, int>{{"a", 1000}, {"b", 100}, {"c", 100}, {"d", 100}});
  // Each tenant's own stream: 1000 at 100/s and 100 at 10/s both span about 10 s.
  CHECK(last["a"] == Approx(10).epsilon(0.15));
  CHECK(last["b"] == Approx(10).epsilon(0.35));
  CHECK(std::is_sorted(p.begin(), p.end(), [](const auto& x, const auto& y) { return x.at_s < y.at_s; }));
  CHECK(plan(c, fake_text).front().prompt == p.front().prompt);  // reproducible
}

TEST_CASE("fairness: equal service has no gap and Jain 1, one tenant taking all has Jain 1/n", "[loadtest][tenants]") {
  std::vector<request_sample> s;
  for (int i = 0; i < 10; ++i) {
    s.push_back(sample("a", i * 0.1, 8, 4));
    s.push_back(sample("b", i * 0.1, 8, 4));
  }
  const auto tenants = parse_tenants("a,b", "t");
  auto f = fairness(s, tenants, {1, 2}, 0.0);
  CHECK(f.window_start_s == 0);
  CHECK(f.window_end_s == Approx(0.9));
  CHECK(f.jain == Approx(1));
  CHECK(f.tenants[0].service == Approx(f.tenants[1].service));
  // Both receive the same tokens at the same times: any gap comes from the order within a tick.
  CHECK(f.max_gap <= 8 + 2);
  CHECK(f.tenants[0].sent == 10);

  std::vector<request_sample> greedy;
  for (int i = 0; i < 10; ++i)
    greedy.push_back(sample("a", i * 0.1, 8, 4));
  greedy.push_back(sample("b", 0.0, 8, 0));  // b sent but got nothing in the window
  greedy.back().status = "timeout";
  greedy.push_back(sample("b", 0.9, 8, 0));
  greedy.back().status = "timeout";
  f = fairness(greedy, tenants, {1, 2}, 0.0);
  CHECK(f.jain == Approx(0.5));
  CHECK(f.tenants[1].failed == 2);
  CHECK(f.tenants[1].errors.at("timeout") == 2);
  // Everything a got in the window is the gap.
  CHECK(f.max_gap == Approx(f.tenants[0].service));
}

TEST_CASE("fairness: the window ends when the first tenant sends its last request", "[loadtest][tenants]") {
  std::vector<request_sample> s;
  for (int i = 0; i < 20; ++i)
    s.push_back(sample("a", i * 0.1, 4, 2));
  for (int i = 0; i < 5; ++i)
    s.push_back(sample("b", 0.05 + i * 0.1, 4, 2));
  auto f = fairness(s, parse_tenants("a,b", "t"), {1, 2}, 0.1);
  CHECK(f.window_end_s == Approx(0.45));
  CHECK(f.window_start_s == Approx(0.05 + 0.1 * 0.4));
  CHECK(f.tenants[0].sent == 20);
}

TEST_CASE("waste: tokens of requests that timed out after their first token", "[loadtest][tenants]") {
  std::vector<request_sample> s{sample("", 0, 10, 10), sample("", 0, 10, 5), sample("", 0, 10, 0),
                                sample("", 0, 10, 10)};
  s[1].status = "timeout";
  s[2].status = "timeout";  // before any token: no capacity counted
  s[3].status = "deadline_unmeetable";
  s[3].tokens_out = 0;
  const auto w = waste(s);
  CHECK(w.timed_out == 2);
  CHECK(w.timed_out_started == 1);
  CHECK(w.wasted_tokens == 15);
  CHECK(w.spent_tokens == 20 + 15);
  CHECK(w.share() == Approx(15.0 / 35));
  CHECK(to_json(w)["wasted_share"] == Approx(15.0 / 35));
}

TEST_CASE("the service picture and the JSON name every tenant", "[loadtest][tenants]") {
  std::vector<request_sample> s{sample("a", 0, 4, 3), sample("b", 0.1, 4, 3), sample("a", 0.2, 4, 3)};
  const auto f = fairness(s, parse_tenants("a,b", "t"), {1, 2}, 0.0);
  const auto svg = tenant_service_svg(s, f, {1, 2}, "service");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find(">a<") != std::string::npos);
  CHECK(svg.find(">b<") != std::string::npos);
  const auto j = to_json(f);
  CHECK(j["tenants"].size() == 2);
  CHECK(j["tenants"][1]["name"] == "b");
}

} // namespace test_loadtest_tenants
