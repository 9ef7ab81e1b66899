#include "tools/loadtest/report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace lf::loadtest {

namespace {

nlohmann::json lat_json(const latency_summary& l) {
  return {{"count", l.count}, {"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"max", l.max}};
}

/// A minimal SVG canvas with axes, in data coordinates [0, xmax] x [0, ymax].
class svg_plot {
public:
  svg_plot(std::string title, std::string xlabel, std::string ylabel, double xmax, double ymax)
    : xmax_(xmax > 0 ? xmax : 1), ymax_(ymax > 0 ? ymax : 1) {
    os_ << std::fixed << std::setprecision(1)
        << R"(<svg xmlns="http://www.w3.org/2000/svg" width="720" height="440" font-family="sans-serif" font-size="12">)"
        << R"(<rect width="720" height="440" fill="white"/>)"
        << "<text x=\"360\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << esc(title) << "</text>"
        << "<text x=\"360\" y=\"430\" text-anchor=\"middle\">" << esc(xlabel) << "</text>"
        << "<text x=\"16\" y=\"220\" text-anchor=\"middle\" transform=\"rotate(-90 16 220)\">" << esc(ylabel)
        << "</text><line x1=\"70\" y1=\"390\" x2=\"700\" y2=\"390\" stroke=\"black\"/>"
        << "<line x1=\"70\" y1=\"40\" x2=\"70\" y2=\"390\" stroke=\"black\"/>";
    for (int i = 0; i <= 5; ++i) {
      os_ << "<text x=\"" << px(xmax_ * i / 5) << "\" y=\"406\" text-anchor=\"middle\">" << num(xmax_ * i / 5)
          << "</text><text x=\"64\" y=\"" << py(ymax_ * i / 5) + 4 << "\" text-anchor=\"end\">"
          << num(ymax_ * i / 5) << "</text>";
    }
  }
  double px(double x) const { return 70 + 630 * x / xmax_; }
  double py(double y) const { return 390 - 350 * y / ymax_; }
  void bar(double x0, double x1, double h, const char* color) {
    os_ << "<rect x=\"" << px(x0) << "\" y=\"" << py(h) << "\" width=\"" << std::max(0.5, px(x1) - px(x0) - 1)
        << "\" height=\"" << 390 - py(h) << "\" fill=\"" << color << "\" fill-opacity=\"0.6\"/>";
  }
  void line(const std::vector<std::pair<double, double>>& pts, const char* color, const std::string& label, int slot) {
    os_ << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : pts)
      os_ << px(x) << "," << py(y) << " ";
    os_ << "\"/>";
    for (auto [x, y] : pts)
      os_ << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << color << "\"/>";
    legend(color, label, slot);
  }
  void legend(const char* color, const std::string& label, int slot) {
    os_ << "<rect x=\"90\" y=\"" << 48 + 16 * slot << "\" width=\"10\" height=\"10\" fill=\"" << color
        << "\"/><text x=\"106\" y=\"" << 57 + 16 * slot << "\">" << esc(label) << "</text>";
  }
  void text(double x, double y, const std::string& t) {
    os_ << "<text x=\"" << px(x) << "\" y=\"" << py(y) - 6 << "\" text-anchor=\"middle\" font-size=\"10\">"
        << esc(t) << "</text>";
  }
  std::string finish() { return os_.str() + "</svg>\n"; }

private:
  static std::string esc(const std::string& s) {
    std::string o;
    for (char c : s)
      o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return o;
  }
  static std::string num(double v) {
    std::ostringstream s;
    s << std::setprecision(v < 10 ? 2 : 0) << std::fixed << v;
    return s.str();
  }
  double xmax_, ymax_;
  std::ostringstream os_;
};

} // namespace

nlohmann::json to_json(const run_summary& s) {
  return {{"sent", s.sent}, {"completed", s.completed}, {"failed", s.failed}, {"lost", s.lost},
          {"duration_s", s.duration_s}, {"request_throughput", s.request_throughput},
          {"input_tokens_per_s", s.input_tokens_per_s}, {"output_tokens_per_s", s.output_tokens_per_s},
          {"ttft_ms", lat_json(s.ttft)}, {"tpot_ms", lat_json(s.tpot)}, {"itl_ms", lat_json(s.itl)},
          {"e2e_ms", lat_json(s.e2e)}, {"errors", s.errors}, {"good", s.good}, {"goodput", s.goodput}};
}

void print_summary(std::ostream& os, const run_summary& s) {
  os << std::fixed << std::setprecision(1) << "requests: " << s.sent << " sent, " << s.completed
     << " completed, " << s.failed << " failed, " << s.lost << " lost, in " << s.duration_s << " s\n"
     << "throughput: " << std::setprecision(2) << s.request_throughput << " req/s, " << std::setprecision(1)
     << s.input_tokens_per_s << " input tok/s, " << s.output_tokens_per_s << " output tok/s\n"
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
}

void print_sweep(std::ostream& os, const std::vector<sweep_point>& points) {
  os << std::fixed << std::setprecision(1)
     << "point            | out tok/s | req/s | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | errors | lost\n";
  for (const auto& p : points) {
    const auto& s = p.summary;
    os << std::left << std::setw(16) << p.label << std::right << " | " << std::setw(9) << s.output_tokens_per_s
       << " | " << std::setw(5) << std::setprecision(2) << s.request_throughput << std::setprecision(1) << " | "
       << std::setw(8) << s.ttft.p50 << " | " << std::setw(8) << s.ttft.p99 << " | " << std::setw(8) << s.tpot.p50
       << " | " << std::setw(8) << s.tpot.p99 << " | " << std::setw(6) << s.failed << " | " << s.lost << "\n";
  }
}

void write_csv(std::ostream& os, const std::vector<request_sample>& samples) {
  os << "sent_s,status,tokens_in,tokens_out,ttft_ms,tpot_ms,e2e_ms\n" << std::setprecision(6);
  for (const auto& s : samples)
    os << s.sent_s << "," << s.status << "," << s.tokens_in << "," << s.tokens_out << "," << s.ttft_ms << ","
       << s.tpot_ms() << "," << s.e2e_ms << "\n";
}

std::string latency_svg(const std::vector<request_sample>& samples, const std::string& title) {
  std::vector<double> e2e, ttft;
  for (const auto& s : samples)
    if (s.ok()) {
      e2e.push_back(s.e2e_ms);
      ttft.push_back(s.ttft_ms);
    }
  const double xmax = e2e.empty() ? 1 : *std::max_element(e2e.begin(), e2e.end()) * 1.05;
  constexpr int bins = 30;
  auto hist = [&](const std::vector<double>& v) {
    std::vector<double> h(bins, 0);
    for (double x : v)
      h[std::min(bins - 1, static_cast<int>(x / xmax * bins))] += 1;
    return h;
  };
  auto he = hist(e2e), ht = hist(ttft);
  double ymax = 1;
  for (int i = 0; i < bins; ++i)
    ymax = std::max({ymax, he[i], ht[i]});
  svg_plot p(title, "latency (ms)", "requests", xmax, ymax * 1.1);
  for (int i = 0; i < bins; ++i) {
    p.bar(xmax * i / bins, xmax * (i + 1) / bins, ht[i], "#1f77b4");
    p.bar(xmax * i / bins, xmax * (i + 1) / bins, he[i], "#ff7f0e");
  }
  p.legend("#1f77b4", "time to first token", 0);
  p.legend("#ff7f0e", "end-to-end latency", 1);
  return p.finish();
}

std::string sweep_svg(const std::vector<sweep_point>& points, const std::string& title) {
  double xmax = 1, ymax = 1;
  for (const auto& pt : points) {
    xmax = std::max(xmax, pt.summary.output_tokens_per_s * 1.1);
    ymax = std::max({ymax, pt.summary.tpot.p99 * 1.1, pt.summary.tpot.p50 * 1.1});
  }
  svg_plot p(title, "output tokens/s", "time per output token (ms)", xmax, ymax);
  std::vector<std::pair<double, double>> p50, p99;
  for (const auto& pt : points) {
    p50.emplace_back(pt.summary.output_tokens_per_s, pt.summary.tpot.p50);
    p99.emplace_back(pt.summary.output_tokens_per_s, pt.summary.tpot.p99);
  }
  p.line(p50, "#1f77b4", "TPOT p50", 0);
  p.line(p99, "#d62728", "TPOT p99", 1);
  for (const auto& pt : points)
    p.text(pt.summary.output_tokens_per_s, pt.summary.tpot.p99, pt.label);
  return p.finish();
}

} // namespace lf::loadtest
