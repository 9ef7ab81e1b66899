#include "tools/soak/report.hpp"

#include <iomanip>
#include <sstream>

#include "tools/loadtest/stats.hpp"

namespace lf::soak {

namespace {

std::string mib(std::optional<std::uint64_t> kib) {
  if (!kib)
    return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << static_cast<double>(*kib) / 1024.0 << " MiB";
  return s.str();
}

std::string latency(const std::vector<double>& v) {
  const auto s = loadtest::summarize_latency(v);
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << "p50 " << s.p50 << "  p90 " << s.p90 << "  p99 " << s.p99 << "  max "
    << s.max << " ms";
  return o.str();
}

double stat(const std::map<std::string, double>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

} // namespace

std::vector<std::string> check_memory(const std::vector<node_memory>& nodes, const rss_bound& bound) {
  std::vector<std::string> v;
  for (const auto& n : nodes) {
    if (!n.before_kib || !n.after_kib) {
      v.push_back("node " + n.node + ": no RSS sample at " + (n.before_kib ? "the end" : "warm-up"));
      continue;
    }
    const auto limit = bound.limit_kib(*n.before_kib);
    if (*n.after_kib > limit)
      v.push_back("node " + n.node + ": RSS grew from " + mib(n.before_kib) + " to " + mib(n.after_kib)
                  + ", past the bound of " + mib(limit) + " (" + bound.describe() + ")");
  }
  return v;
}

void print_report(const soak_report& r, std::ostream& out, std::size_t max_listed) {
  const auto& c = r.counts;
  out << std::fixed << std::setprecision(1);
  out << "\n==== fault soak summary ====\n";
  out << "requests " << c.requests << " from " << r.clients << " clients (seed " << r.seed << "), "
      << c.planned_invalid << " invalid, " << c.planned_cancels << " with a cancel\n";
  out << "  done " << c.done << ", cancelled " << c.cancelled << ", errors " << c.errors << ", no terminal reply "
      << c.no_terminal << "\n";
  out << "  errors by code:";
  if (c.errors_by_code.empty())
    out << " none";
  for (const auto& [code, n] : c.errors_by_code)
    out << " " << code << "=" << n;
  out << "\n  finish reasons:";
  for (const auto& [why, n] : c.finish_reasons)
    out << " " << why << "=" << n;
  out << "\n  resumed (done with usage.resumed > 0): " << c.resumed << "\n";
  out << "  router: resumed " << stat(r.router, "router.resumed") << ", replaced " << stat(r.router, "router.replaced")
      << ", worker_lost " << stat(r.router, "router.worker_lost") << ", draining "
      << stat(r.router, "router.draining") << ", workers " << stat(r.router, "router.workers") << "\n";
  const double d = r.duration_s > 0 ? r.duration_s : 1;
  out << "throughput: " << r.duration_s << " s, " << std::setprecision(2) << static_cast<double>(c.done) / d
      << " done requests/s, " << std::setprecision(0) << static_cast<double>(c.tokens) / d << " streamed tokens/s\n"
      << std::setprecision(1);
  out << "  TTFT " << latency(c.ttft_ms) << "\n";
  out << "  E2E  " << latency(c.e2e_ms) << "\n";
  out << "faults:\n";
  if (r.faults.empty())
    out << "  none\n";
  for (const auto& f : r.faults) {
    out << "  " << to_string(f.f.kind) << " " << f.f.node;
    if (f.fired_s < 0) {
      out << ": never fired\n";
      continue;
    }
    out << " at " << f.fired_s << " s (" << f.ended_at_fire << " requests ended, " << f.live_at_fire << " in flight)";
    if (f.resumed_s >= 0)
      out << ", SIGCONT at " << f.resumed_s << " s";
    if (f.recovered_s >= 0)
      out << ", all workers registered again at " << f.recovered_s << " s";
    else
      out << ", not recovered";
    out << "\n";
  }
  if (r.held_for_faults)
    out << "  (the requests ran out before the faults ended: the last ones waited for them)\n";
  out << "replays on the calm cluster: " << r.replays << " (" << r.replays_resumed << " resumed, "
      << r.replays - r.replays_resumed << " controls), " << r.replay_mismatches << " differ\n";
  out << "KV blocks after the run: " << (r.kv_free ? "all free" : "NOT all free") << " (" << r.kv_detail << ")\n";
  out << "RSS per node, warm-up -> end (bound " << r.bound.describe() << "):\n";
  for (const auto& n : r.memory) {
    out << "  " << std::left << std::setw(8) << n.node << std::right << " " << mib(n.before_kib) << " -> "
        << mib(n.after_kib) << " (peak " << mib(n.peak_kib) << ")";
    if (n.pid_before != n.pid_after)
      out << "  restarted: pid " << n.pid_before << " -> " << n.pid_after;
    out << "\n";
  }
  if (r.violations.empty()) {
    out << "soak: PASS (no violations)\n";
    return;
  }
  out << "violations (" << r.violations.size() << "):\n";
  for (std::size_t i = 0; i < r.violations.size() && i < max_listed; ++i)
    out << "  " << r.violations[i] << "\n";
  if (r.violations.size() > max_listed)
    out << "  ... and " << r.violations.size() - max_listed << " more\n";
  out << "soak: FAIL (" << r.violations.size() << " violations)\n";
}

} // namespace lf::soak
