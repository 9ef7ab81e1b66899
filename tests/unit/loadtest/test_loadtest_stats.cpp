// Load-test statistics on synthetic timings: percentiles, throughput, goodput, errors, reports.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "tools/loadtest/report.hpp"
#include "tools/loadtest/svg.hpp"
#include "tools/loadtest/stats.hpp"

using namespace lf::loadtest;

namespace {

request_sample ok(double ttft, double e2e, std::uint32_t out, std::uint32_t in = 10) {
  request_sample s;
  s.ttft_ms = ttft;
  s.e2e_ms = e2e;
  s.tokens_out = out;
  s.tokens_in = in;
  for (std::uint32_t i = 1; i < out; ++i)
    s.itl_ms.push_back((e2e - ttft) / (out - 1));
  return s;
}

} // namespace

TEST_CASE("nearest-rank percentiles of 1..100", "[loadtest]") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i)
    v.push_back(i);
  auto s = summarize_latency(v);
  CHECK(s.count == 100);
  CHECK(s.mean == Approx(50.5));
  CHECK(s.p50 == 50);
  CHECK(s.p90 == 90);
  CHECK(s.p99 == 99);
  CHECK(s.max == 100);
  CHECK(summarize_latency({}).p99 == 0);
  CHECK(summarize_latency({7}).p50 == 7);
}

TEST_CASE("throughput counts completed requests and every generated token", "[loadtest]") {
  std::vector<request_sample> v{ok(100, 1100, 11), ok(200, 2200, 21), ok(50, 50, 1)};
  v[1].tokens_cached = 8;  // prefix-cache hits are counted, not subtracted from the input
  request_sample bad;
  bad.status = "overloaded";
  bad.tokens_out = 0;
  v.push_back(bad);
  request_sample lost_mid;  // failed after streaming 5 tokens: they still count as output
  lost_mid.status = "worker_lost";
  lost_mid.tokens_out = 5;
  v.push_back(lost_mid);
  auto s = summarize(v, 2.0, {}, 1);
  CHECK(s.sent == 6);
  CHECK(s.completed == 3);
  CHECK(s.failed == 2);
  CHECK(s.lost == 1);
  CHECK(s.request_throughput == Approx(1.5));
  CHECK(s.output_tokens_per_s == Approx((11 + 21 + 1 + 5) / 2.0));
  CHECK(s.input_tokens_per_s == Approx(30 / 2.0));
  CHECK(s.input_tokens == 30);
  CHECK(s.cached_tokens == 8);
  CHECK(s.errors.at("overloaded") == 1);
  CHECK(s.errors.at("worker_lost") == 1);
  CHECK(s.tpot.count == 2);  // the 1-token request has no TPOT
  CHECK(s.tpot.p50 == Approx(100));
  CHECK(s.ttft.max == 200);
  CHECK(s.itl.count == 30);
}

TEST_CASE("goodput keeps the requests within every limit", "[loadtest]") {
  std::vector<request_sample> v{ok(100, 1100, 11),   // ttft 100, tpot 100
                                ok(900, 1900, 11),   // ttft 900, tpot 100
                                ok(100, 3100, 11),   // ttft 100, tpot 300
                                ok(1500, 1600, 2)};  // ttft 1500
  goodput_limits lim;
  lim.ttft_ms = 1000;
  lim.tpot_ms = 150;
  auto s = summarize(v, 4.0, lim);
  CHECK(s.good == 2);
  CHECK(s.goodput == Approx(0.5));
  lim.e2e_ms = 1500;
  CHECK(summarize(v, 4.0, lim).good == 1);
  CHECK(summarize(v, 4.0, {}).good == 4);
}

TEST_CASE("reports: JSON fields, CSV rows and well-formed SVG", "[loadtest]") {
  std::vector<request_sample> v{ok(100, 1100, 11), ok(200, 2200, 21)};
  auto s = summarize(v, 2.0, {});
  auto j = to_json(s);
  CHECK(j["completed"] == 2);
  CHECK(j["e2e_ms"]["max"] == 2200.0);
  std::ostringstream csv;
  write_csv(csv, v);
  const auto rows = csv.str();
  CHECK(std::count(rows.begin(), rows.end(), '\n') == 3);
  auto svg = latency_svg(v, "one run <test>");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("&lt;test&gt;") != std::string::npos);
  std::vector<sweep_point> pts{{"c=1", 1, s}, {"c=2", 2, s}};
  auto panels = [](const std::string& svg) {
    std::size_t n = 0;
    for (auto at = svg.find("<g transform"); at != std::string::npos; at = svg.find("<g transform", at + 1))
      ++n;
    return n;
  };
  CHECK(panels(svg) == 3);  // TTFT, TPOT, E2E histograms
  auto sw = sweep_svg(pts, "sweep");
  CHECK(sw.find("polyline") != std::string::npos);
  CHECK(panels(sw) == 2);  // TPOT and TTFT against throughput
  auto rs = rate_sweep_svg(pts, "rates");
  CHECK(panels(rs) == 3);  // rates, TTFT and TPOT against the offered rate
  CHECK(rs.find("offered rate (requests/s)") != std::string::npos);
  CHECK(rs.find("goodput/s") != std::string::npos);
  std::ostringstream table;
  print_sweep(table, pts);
  CHECK(table.str().find("c=2") != std::string::npos);
}

TEST_CASE("stale connection retries are reported apart from failures", "[loadtest]") {
  std::vector<request_sample> v{ok(100, 1100, 11), ok(200, 2200, 21)};
  auto s = summarize(v, 2.0, {});
  std::ostringstream quiet;
  print_summary(quiet, s);
  CHECK(quiet.str().find("stale connection retries") == std::string::npos);  // none, no line
  CHECK(to_json(s)["stale_connection_retries"] == 0);
  s.stale_retries = 18;
  const auto j = to_json(s);
  CHECK(j["stale_connection_retries"] == 18);
  CHECK(j["failed"] == 0);
  CHECK(j["errors"].empty());
  std::ostringstream text;
  print_summary(text, s);
  CHECK(text.str().find("stale connection retries: 18") != std::string::npos);
  CHECK(text.str().find("error ") == std::string::npos);
  std::ostringstream table;
  print_sweep(table, {{"c=4", 4, s}});
  CHECK(table.str().find("| retries") != std::string::npos);
  CHECK(table.str().find("| 18\n") != std::string::npos);
}

TEST_CASE("chart axes end on a nice number with 1, 2, 2.5 or 5 x 10^k steps", "[loadtest]") {
  using lf::loadtest::nice_axis;
  CHECK(nice_axis(5) == std::pair<double, double>{5, 1});
  CHECK(nice_axis(8.8) == std::pair<double, double>{10, 2});
  CHECK(nice_axis(12) == std::pair<double, double>{12.5, 2.5});
  CHECK(nice_axis(876) == std::pair<double, double>{1000, 200});
  auto [top, step] = nice_axis(0.03);
  CHECK(top == Approx(0.03));
  CHECK(step == Approx(0.01));
  CHECK(nice_axis(0) == std::pair<double, double>{1, 0.2});
  // Counts: whole-number steps only (11 requests: 0, 5, 10, 15 rather than 2.5 steps).
  CHECK(nice_axis(11, true) == std::pair<double, double>{15, 5});
  CHECK(nice_axis(3, true) == std::pair<double, double>{3, 1});
  CHECK(nice_axis(0.5, true) == std::pair<double, double>{1, 1});
  CHECK(nice_axis(std::nan("")) == std::pair<double, double>{1, 0.2});
  for (double m : {0.7, 3.3, 47.0, 999.0, 1234.5, 1e6 + 1}) {
    auto [t, s] = nice_axis(m);
    CHECK(t >= m);
    CHECK(t / s <= 5 + 1e-9);
  }
}
