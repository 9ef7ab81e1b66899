#pragma once
/// Load-test output: a terminal table, JSON and CSV files, and SVG pictures (the latency
/// distribution of one run; throughput against latency percentiles for a sweep). Pure C++.

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/loadtest/stats.hpp"
#include "tools/loadtest/tenants.hpp"

namespace lf::loadtest {

/// One run of a sweep: its label (e.g. "concurrency 8" or "rate 4/s") and summary.
struct sweep_point {
  std::string label;
  double x = 0;  ///< the swept value
  run_summary summary;
};

/// The summary as JSON (every field, latencies in ms).
nlohmann::json to_json(const run_summary& s);

/// A readable table of one run.
void print_summary(std::ostream& os, const run_summary& s);

/// A table with one line per sweep point.
void print_sweep(std::ostream& os, const std::vector<sweep_point>& points);

/// Fairness among tenants and the capacity wasted on timeouts, as JSON.
nlohmann::json to_json(const fairness_summary& f);
nlohmann::json to_json(const waste_summary& w);

/// One line per tenant (requests, errors, tokens and service in the window), then the largest
/// gap and Jain's index.
void print_fairness(std::ostream& os, const fairness_summary& f);

/// Requests that timed out and the share of the tokens computed that went to them.
void print_waste(std::ostream& os, const waste_summary& w);

/// Per-request CSV: sent_s, status, tokens_in, tokens_out, ttft_ms, tpot_ms, e2e_ms, tenant.
void write_csv(std::ostream& os, const std::vector<request_sample>& samples);

/// SVG histogram of end-to-end latency and TTFT of one run.
std::string latency_svg(const std::vector<request_sample>& samples, const std::string& title);

/// SVG of output tokens/s (x) against TPOT p50/p99 and TTFT p50/p99 (y) for a sweep.
std::string sweep_svg(const std::vector<sweep_point>& points, const std::string& title);

/// A rate sweep against its offered rate (each point's x): completed requests/s and goodput, and
/// TTFT / TPOT p50, p90, p99.
std::string rate_sweep_svg(const std::vector<sweep_point>& points, const std::string& title);

} // namespace lf::loadtest
