#pragma once
/// Small statistics for the benchmark programs and the load-test tool: mean and percentiles
/// (nearest-rank on the sorted sample). Pure C++.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace lf::tools {

/// The arithmetic mean; 0 for an empty sample.
inline double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// The p-th percentile (0 <= p <= 100) of an already sorted sample, by the nearest-rank method;
/// 0 for an empty sample.
inline double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty())
    return 0.0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

/// The p-th percentile (0 <= p <= 100) by the nearest-rank method; 0 for an empty sample.
inline double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, p);
}

} // namespace lf::tools
