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

/// The p-th percentile (0 <= p <= 100) by the nearest-rank method; 0 for an empty sample.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace lf::tools
