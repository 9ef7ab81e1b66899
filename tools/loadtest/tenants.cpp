#include "tools/loadtest/tenants.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tools/loadtest/svg.hpp"

namespace lf::loadtest {

namespace {

/// One piece of service: `amount` weighted tokens for tenant `who` at `t` seconds.
struct service_event {
  double t;
  std::size_t who;
  double amount;
  std::uint32_t prompt_tokens;  ///< the prompt's, with the first token; 0 for later tokens
};

/// Every token each sample received, as service events, in time order. Tenants not in `index`
/// are left out.
std::vector<service_event> events_of(const std::vector<request_sample>& samples,
                                     const std::map<std::string, std::size_t>& index, const service_weights& w) {
  std::vector<service_event> out;
  for (const auto& s : samples) {
    auto it = index.find(s.tenant);
    if (it == index.end() || s.tokens_out == 0)
      continue;
    double t = s.sent_s + s.ttft_ms / 1000.0;
    out.push_back({t, it->second, w.prompt * s.tokens_in + w.output, s.tokens_in});
    for (std::uint32_t k = 1; k < s.tokens_out; ++k) {
      // Tokens not streamed one by one (a non-streamed tail) arrive with the terminal reply.
      t = k - 1 < s.itl_ms.size() ? t + s.itl_ms[k - 1] / 1000.0 : s.sent_s + s.e2e_ms / 1000.0;
      out.push_back({t, it->second, w.output, 0});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const service_event& a, const service_event& b) { return a.t < b.t; });
  return out;
}

const char* const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

} // namespace

std::vector<tenant_share> parse_tenants(const std::string& spec, const std::string& what) {
  std::vector<tenant_share> out;
  std::set<std::string> seen;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    tenant_share t;
    const auto colon = item.rfind(':');
    t.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      const auto v = item.substr(colon + 1);
      std::size_t used = 0;
      try {
        t.share = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != v.size() || !std::isfinite(t.share) || !(t.share > 0))
        throw std::invalid_argument(what + ": the share of '" + t.name + "' must be a number > 0 (got '" + v + "')");
    }
    if (t.name.empty() || t.name.size() > 64)
      throw std::invalid_argument(what + ": tenant names are 1 to 64 bytes (got '" + t.name + "')");
    if (!seen.insert(t.name).second)
      throw std::invalid_argument(what + ": tenant '" + t.name + "' given twice");
    out.push_back(t);
  }
  if (out.empty())
    throw std::invalid_argument(what + ": give tenants and their shares, e.g. a:10,b:1");
  return out;
}

std::map<std::string, std::uint32_t> split_by_share(const std::vector<tenant_share>& tenants, double total) {
  double sum = 0;
  for (const auto& t : tenants)
    sum += t.share;
  std::map<std::string, std::uint32_t> out;
  for (const auto& t : tenants)
    out[t.name] = static_cast<std::uint32_t>(std::max(1.0, std::round(total * t.share / sum)));
  return out;
}

fairness_summary fairness(const std::vector<request_sample>& samples, const std::vector<tenant_share>& tenants,
                          const service_weights& w, double warmup) {
  fairness_summary f;
  std::map<std::string, std::size_t> index;
  for (const auto& t : tenants) {
    index.emplace(t.name, f.tenants.size());
    f.tenants.push_back({});
    f.tenants.back().name = t.name;
  }
  // The window: every tenant has started sending and none has sent its last request yet.
  std::vector<double> first(tenants.size(), 1e300), last(tenants.size(), -1e300);
  for (const auto& s : samples) {
    auto it = index.find(s.tenant);
    if (it == index.end())
      continue;
    auto& ts = f.tenants[it->second];
    ++ts.sent;
    if (s.ok()) {
      ++ts.completed;
    } else {
      ++ts.failed;
      ++ts.errors[s.status];
    }
    first[it->second] = std::min(first[it->second], s.sent_s);
    last[it->second] = std::max(last[it->second], s.sent_s);
  }
  if (tenants.empty())
    return f;
  const double start = *std::max_element(first.begin(), first.end());
  const double end = *std::min_element(last.begin(), last.end());
  if (!(end > start))
    return f;  // no common window: nothing to compare
  f.window_start_s = start + std::clamp(warmup, 0.0, 0.99) * (end - start);
  f.window_end_s = end;

  const auto n = tenants.size();
  std::vector<double> total(n, 0.0);
  // For each pair a < b, the extremes of D = S_a - S_b over the window (D starts at 0).
  std::vector<double> hi(n * n, 0.0), lo(n * n, 0.0);
  for (const auto& e : events_of(samples, index, w)) {
    if (e.t < f.window_start_s || e.t > f.window_end_s)
      continue;
    auto& ts = f.tenants[e.who];
    ts.service += e.amount;
    ts.prompt_tokens += e.prompt_tokens;
    ++ts.output_tokens;
    total[e.who] += e.amount;
    for (std::size_t g = 0; g < n; ++g) {
      if (g == e.who)
        continue;
      const auto a = std::min(e.who, g), b = std::max(e.who, g);
      const double d = total[a] - total[b];
      hi[a * n + b] = std::max(hi[a * n + b], d);
      lo[a * n + b] = std::min(lo[a * n + b], d);
    }
  }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      f.max_gap = std::max(f.max_gap, hi[a * n + b] - lo[a * n + b]);
  double sum = 0, sq = 0;
  for (const auto& ts : f.tenants) {
    sum += ts.service;
    sq += ts.service * ts.service;
  }
  f.jain = sq > 0 ? sum * sum / (static_cast<double>(n) * sq) : 1.0;
  return f;
}

waste_summary waste(const std::vector<request_sample>& samples) {
  waste_summary w;
  for (const auto& s : samples) {
    const bool timed_out = s.status == "timeout";
    w.timed_out += timed_out ? 1 : 0;
    if (s.tokens_out == 0)
      continue;
    const std::uint64_t spent = std::uint64_t{s.tokens_in} + s.tokens_out;
    w.spent_tokens += spent;
    if (timed_out) {
      w.wasted_tokens += spent;
      ++w.timed_out_started;
    }
  }
  return w;
}

std::string tenant_service_svg(const std::vector<request_sample>& samples, const fairness_summary& f,
                               const service_weights& w, const std::string& title) {
  std::map<std::string, std::size_t> index;
  for (const auto& t : f.tenants)
    index.emplace(t.name, index.size());
  const auto events = events_of(samples, index, w);
  std::vector<std::vector<std::pair<double, double>>> lines(index.size());
  std::vector<double> total(index.size(), 0.0);
  double tmax = 0, smax = 0;
  const double step = events.empty() ? 1.0 : std::max(1e-3, events.back().t / 150);
  std::vector<double> next_point(index.size(), 0.0);
  for (const auto& e : events) {
    total[e.who] += e.amount;
    tmax = std::max(tmax, e.t);
    smax = std::max(smax, total[e.who]);
    if (e.t >= next_point[e.who]) {  // about 150 points a line
      lines[e.who].emplace_back(e.t, total[e.who]);
      next_point[e.who] = e.t + step;
    }
  }
  for (std::size_t i = 0; i < lines.size(); ++i)
    lines[i].emplace_back(tmax, total[i]);
  std::ostringstream sub;
  sub << std::fixed << std::setprecision(1) << "cumulative service (w_p " << w.prompt << ", w_o " << w.output
      << "); window " << f.window_start_s << "-" << f.window_end_s << " s: max gap " << std::setprecision(0)
      << f.max_gap << ", Jain " << std::setprecision(3) << f.jain;
  svg_panel p(sub.str(), "seconds since the start", "weighted tokens received", tmax, smax);
  for (std::size_t i = 0; i < lines.size(); ++i)
    p.line(lines[i], colors[i % (sizeof colors / sizeof colors[0])], f.tenants[i].name);
  return svg_document(title, {&p});
}

} // namespace lf::loadtest
