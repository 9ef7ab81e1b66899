#include "tools/loadtest/report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>

#include "tools/loadtest/svg.hpp"

namespace lf::loadtest {

namespace {

nlohmann::json lat_json(const latency_summary& l) {
  return {{"count", l.count}, {"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"max", l.max}};
}

} // namespace

nlohmann::json to_json(const run_summary& s) {
  return {{"sent", s.sent}, {"completed", s.completed}, {"failed", s.failed}, {"lost", s.lost},
          {"duration_s", s.duration_s}, {"request_throughput", s.request_throughput},
          {"input_tokens_per_s", s.input_tokens_per_s}, {"output_tokens_per_s", s.output_tokens_per_s},
          {"input_tokens", s.input_tokens}, {"cached_input_tokens", s.cached_tokens},
          {"ttft_ms", lat_json(s.ttft)}, {"tpot_ms", lat_json(s.tpot)}, {"itl_ms", lat_json(s.itl)},
          {"e2e_ms", lat_json(s.e2e)}, {"errors", s.errors}, {"good", s.good}, {"goodput", s.goodput},
          {"stale_connection_retries", s.stale_retries}};
}

void print_summary(std::ostream& os, const run_summary& s) {
  os << std::fixed << std::setprecision(1) << "requests: " << s.sent << " sent, " << s.completed
     << " completed, " << s.failed << " failed, " << s.lost << " lost, in " << s.duration_s << " s\n"
     << "throughput: " << std::setprecision(2) << s.request_throughput << " req/s, " << std::setprecision(1)
     << s.input_tokens_per_s << " input tok/s, " << s.output_tokens_per_s << " output tok/s\n"
     << "prompt tokens: " << s.input_tokens << ", " << s.cached_tokens << " of them from the prefix cache\n"
     << "goodput: " << s.good << " requests within limits, " << std::setprecision(2) << s.goodput << " req/s\n"
     << std::setprecision(1) << "latency ms      mean      p50      p90      p99      max\n";
  auto row = [&](const char* name, const latency_summary& l) {
    os << std::left << std::setw(10) << name << std::right << std::setw(9) << l.mean << std::setw(9) << l.p50
       << std::setw(9) << l.p90 << std::setw(9) << l.p99 << std::setw(9) << l.max << "\n";
  };
  row("TTFT", s.ttft);
  row("TPOT", s.tpot);
  row("ITL", s.itl);
  row("E2E", s.e2e);
  for (const auto& [code, n] : s.errors)
    os << "error " << code << ": " << n << "\n";
  if (s.stale_retries > 0)
    os << "stale connection retries: " << s.stale_retries
       << " (sent again on a new connection: the server had closed the kept-alive one; not errors)\n";
}

void print_sweep(std::ostream& os, const std::vector<sweep_point>& points) {
  os << std::fixed << std::setprecision(1)
     << "point            | out tok/s | req/s | good | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | cached | errors | lost | retries\n";
  for (const auto& p : points) {
    const auto& s = p.summary;
    const double cached = s.input_tokens ? 100.0 * static_cast<double>(s.cached_tokens) / static_cast<double>(s.input_tokens) : 0;
    os << std::left << std::setw(16) << p.label << std::right << " | " << std::setw(9) << s.output_tokens_per_s
       << " | " << std::setw(5) << std::setprecision(2) << s.request_throughput << std::setprecision(1) << " | "
       << std::setw(4) << s.good << " | " << std::setw(8) << s.ttft.p50 << " | " << std::setw(8) << s.ttft.p99
       << " | " << std::setw(8) << s.tpot.p50 << " | " << std::setw(8) << s.tpot.p99 << " | " << std::setw(5)
       << cached << "% | " << std::setw(6) << s.failed << " | " << std::setw(4) << s.lost << " | "
       << s.stale_retries << "\n";
  }
}

nlohmann::json to_json(const fairness_summary& f) {
  auto tenants = nlohmann::json::array();
  for (const auto& t : f.tenants)
    tenants.push_back({{"name", t.name}, {"sent", t.sent}, {"completed", t.completed}, {"failed", t.failed},
                       {"errors", t.errors}, {"prompt_tokens", t.prompt_tokens}, {"output_tokens", t.output_tokens},
                       {"service", t.service}});
  return {{"window_start_s", f.window_start_s}, {"window_end_s", f.window_end_s}, {"max_gap", f.max_gap},
          {"jain", f.jain}, {"tenants", tenants}};
}

nlohmann::json to_json(const waste_summary& w) {
  return {{"timed_out", w.timed_out}, {"timed_out_started", w.timed_out_started},
          {"wasted_tokens", w.wasted_tokens}, {"spent_tokens", w.spent_tokens}, {"wasted_share", w.share()}};
}

void print_fairness(std::ostream& os, const fairness_summary& f) {
  os << std::fixed << std::setprecision(1) << "tenants, window " << f.window_start_s << " to " << f.window_end_s
     << " s:\n  tenant           sent  done failed  prompt tok  output tok    service  share\n";
  double total = 0;
  for (const auto& t : f.tenants)
    total += t.service;
  for (const auto& t : f.tenants)
    os << "  " << std::left << std::setw(14) << t.name << std::right << std::setw(7) << t.sent << std::setw(6)
       << t.completed << std::setw(7) << t.failed << std::setw(12) << t.prompt_tokens << std::setw(12)
       << t.output_tokens << std::setw(11) << std::setprecision(0) << t.service << std::setw(6)
       << std::setprecision(1) << (total > 0 ? 100 * t.service / total : 0.0) << "%\n";
  os << std::setprecision(0) << "largest service gap: " << f.max_gap << " weighted tokens; Jain's index "
     << std::setprecision(3) << f.jain << "\n";
}

void print_waste(std::ostream& os, const waste_summary& w) {
  os << std::fixed << std::setprecision(1) << "timed out: " << w.timed_out << " (" << w.timed_out_started
     << " after their first token); tokens spent on them: " << w.wasted_tokens << " of " << w.spent_tokens << " ("
     << 100 * w.share() << "%)\n";
}

void write_csv(std::ostream& os, const std::vector<request_sample>& samples) {
  os << "sent_s,status,tokens_in,tokens_cached,tokens_out,ttft_ms,tpot_ms,e2e_ms,tenant\n" << std::setprecision(6);
  for (const auto& s : samples)
    os << s.sent_s << "," << s.status << "," << s.tokens_in << "," << s.tokens_cached << "," << s.tokens_out << "," << s.ttft_ms << ","
       << s.tpot_ms() << "," << s.e2e_ms << "," << s.tenant << "\n";
}

std::string latency_svg(const std::vector<request_sample>& samples, const std::string& title) {
  std::vector<double> ttft, tpot, e2e;
  for (const auto& s : samples)
    if (s.ok()) {
      ttft.push_back(s.ttft_ms);
      e2e.push_back(s.e2e_ms);
      if (s.tokens_out > 1)
        tpot.push_back(s.tpot_ms());
    }
  // One histogram per measure, 30 bins over [0, nice max], each in its own panel.
  auto histogram = [](const std::vector<double>& v, const std::string& name, const char* color) {
    constexpr int bins = 30;
    const double top = nice_axis(v.empty() ? 1 : *std::max_element(v.begin(), v.end())).first;
    std::vector<double> h(bins, 0);
    for (double x : v)
      h[static_cast<std::size_t>(std::clamp(static_cast<int>(x / top * bins), 0, bins - 1))] += 1;
    auto panel = std::make_unique<svg_panel>(name + ", " + std::to_string(v.size()) + " requests", name + " (ms)",
                                             "requests", top,
                                             std::max(1.0, *std::max_element(h.begin(), h.end())), true);
    for (int i = 0; i < bins; ++i)
      panel->bar(top * i / bins, top * (i + 1) / bins, h[static_cast<std::size_t>(i)], color);
    return panel;
  };
  auto a = histogram(ttft, "time to first token", "#1f77b4");
  auto b = histogram(tpot, "time per output token", "#2ca02c");
  auto c = histogram(e2e, "end-to-end latency", "#ff7f0e");
  return svg_document(title, {a.get(), b.get(), c.get()});
}

std::string sweep_svg(const std::vector<sweep_point>& points, const std::string& title) {
  double xmax = 0, tpot_max = 0, ttft_max = 0;
  for (const auto& pt : points) {
    xmax = std::max(xmax, pt.summary.output_tokens_per_s * 1.1);
    tpot_max = std::max({tpot_max, pt.summary.tpot.p99 * 1.1, pt.summary.tpot.p50 * 1.1});
    ttft_max = std::max({ttft_max, pt.summary.ttft.p99 * 1.1, pt.summary.ttft.p50 * 1.1});
  }
  // Throughput on x, a latency percentile on y: each point is one concurrency or rate.
  auto panel = [&](const std::string& name, double ymax, auto pick) {
    auto p = std::make_unique<svg_panel>(name + " against throughput", "output tokens/s", name + " (ms)", xmax, ymax);
    std::vector<std::pair<double, double>> p50, p99;
    for (const auto& pt : points) {
      p50.emplace_back(pt.summary.output_tokens_per_s, pick(pt.summary).p50);
      p99.emplace_back(pt.summary.output_tokens_per_s, pick(pt.summary).p99);
    }
    p->line(p50, "#1f77b4", name + " p50");
    p->line(p99, "#d62728", name + " p99");
    for (const auto& pt : points)
      p->text(pt.summary.output_tokens_per_s, pick(pt.summary).p99, pt.label);
    return p;
  };
  auto a = panel("time per output token", tpot_max, [](const run_summary& s) -> const latency_summary& { return s.tpot; });
  auto b = panel("time to first token", ttft_max, [](const run_summary& s) -> const latency_summary& { return s.ttft; });
  return svg_document(title, {a.get(), b.get()});
}

std::string rate_sweep_svg(const std::vector<sweep_point>& points, const std::string& title) {
  // Offered rate on x: it only grows, so past saturation the lines go flat or up instead of
  // doubling back as they do against achieved throughput.
  double xmax = 0, rmax = 0, ttft_max = 0, tpot_max = 0;
  for (const auto& pt : points) {
    xmax = std::max(xmax, pt.x * 1.1);
    rmax = std::max({rmax, pt.summary.request_throughput * 1.1, pt.summary.goodput * 1.1, pt.x * 1.1});
    ttft_max = std::max({ttft_max, pt.summary.ttft.p99 * 1.1});
    tpot_max = std::max({tpot_max, pt.summary.tpot.p99 * 1.1});
  }
  auto series = [&](auto pick) {
    std::vector<std::pair<double, double>> v;
    for (const auto& pt : points)
      v.emplace_back(pt.x, pick(pt.summary));
    return v;
  };
  svg_panel rates("requests/s against the offered rate", "offered rate (requests/s)", "requests/s", xmax, rmax);
  rates.line(series([](const run_summary& s) { return s.request_throughput; }), "#1f77b4", "completed/s");
  rates.line(series([](const run_summary& s) { return s.goodput; }), "#2ca02c", "goodput/s");
  auto latency = [&](const std::string& name, double ymax, auto pick) {
    auto p = std::make_unique<svg_panel>(name + " against the offered rate", "offered rate (requests/s)",
                                         name + " (ms)", xmax, ymax);
    p->line(series([&](const run_summary& s) { return pick(s).p50; }), "#1f77b4", name + " p50");
    p->line(series([&](const run_summary& s) { return pick(s).p90; }), "#ff7f0e", name + " p90");
    p->line(series([&](const run_summary& s) { return pick(s).p99; }), "#d62728", name + " p99");
    return p;
  };
  auto a = latency("time to first token", ttft_max, [](const run_summary& s) -> const latency_summary& { return s.ttft; });
  auto b = latency("time per output token", tpot_max, [](const run_summary& s) -> const latency_summary& { return s.tpot; });
  return svg_document(title, {&rates, a.get(), b.get()});
}

} // namespace lf::loadtest
