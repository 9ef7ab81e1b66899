#pragma once
/// Prometheus's text exposition format (0.0.4), written by hand: every /metrics page of the
/// program (the router node's HTTP gateway, a worker node's probe port) goes through this one
/// writer, so escaping and number formatting are the same everywhere. Pure C++.
///
///   prom_writer w;
///   w.head("vllm:num_requests_waiting", "gauge", "Requests waiting.");
///   w.sample("vllm:num_requests_waiting", "model_name=\"" + prom_label(m) + "\"", 3);
///   std::string page = w.take();

#include <string>

#include "core/metrics.hpp"

namespace lf {

/// `v` as Prometheus reads it: shortest round-trip decimal ("0.25", "1e+21", "3").
std::string prom_number(double v);

/// A label value with `\`, `"` and newlines escaped.
std::string prom_label(const std::string& v);

/// Accumulates one page.
class prom_writer {
public:
  /// The # HELP and # TYPE lines of a metric family; `type` is counter, gauge or histogram.
  void head(const std::string& name, const char* type, const char* help);
  /// One sample; `labels` is the text between the braces (empty: none).
  void sample(const std::string& name, const std::string& labels, double v);
  /// A histogram's cumulative buckets, +Inf, _sum and _count.
  void hist(const std::string& name, const std::string& labels, const histogram& h);
  /// The page so far (the writer is empty afterwards).
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

} // namespace lf
