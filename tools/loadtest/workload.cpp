#include "tools/loadtest/workload.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace lf::loadtest {

std::uint32_t length_range::sample(std::mt19937_64& rng) const {
  return lo == hi ? lo : std::uniform_int_distribution<std::uint32_t>{lo, hi}(rng);
}

length_range parse_length_range(const std::string& s, const std::string& what) {
  auto bad = [&] { return std::invalid_argument(what + ": expected N or LO-HI with 1 <= LO <= HI, got '" + s + "'"); };
  auto num = [&](const std::string& x) {
    if (x.empty() || x.size() > 9 || x.find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    return static_cast<std::uint32_t>(std::stoul(x));
  };
  length_range r;
  if (auto dash = s.find('-'); dash != std::string::npos) {
    r.lo = num(s.substr(0, dash));
    r.hi = num(s.substr(dash + 1));
  } else {
    r.lo = r.hi = num(s);
  }
  if (r.lo < 1 || r.lo > r.hi)
    throw bad();
  return r;
}

std::vector<std::string> parse_adapter_list(const std::string& s, const std::string& prefix) {
  std::vector<std::string> out;
  if (!s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos) {
    const auto n = std::stoul(s);
    if (n < 1 || n > 100'000)
      throw std::invalid_argument("--adapters: a count must be in [1, 100000] (got " + s + ")");
    const auto width = std::to_string(n - 1).size();
    for (std::size_t k = 0; k < n; ++k) {
      auto idx = std::to_string(k);
      out.push_back(prefix + std::string(width - idx.size(), '0') + idx);
    }
    return out;
  }
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    out.push_back(x);
  return out;
}

void parse_skew(const std::string& s, workload_config& cfg) {
  auto bad = [&] {
    return std::invalid_argument("--skew: expected a share in (0, 1] or zipf:S with S > 0 (got '" + s + "')");
  };
  const bool zipf = s.rfind("zipf:", 0) == 0;
  const auto num = zipf ? s.substr(5) : s;
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(num, &used);
    if (used != num.size())
      throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  if (!(v > 0) || !std::isfinite(v) || (!zipf && v > 1))
    throw bad();
  (zipf ? cfg.zipf : cfg.skew) = v;
}

std::vector<double> arrival_times(double rate, double burstiness, std::size_t n,
                                  std::mt19937_64& rng) {
  if (!(rate > 0) || !(burstiness > 0))
    throw std::invalid_argument("arrival rate and burstiness must be > 0");
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  std::vector<double> at(n);
  double t = 0;
  for (auto& x : at) {
    x = t;
    t += gap(rng);
  }
  return at;
}

std::vector<planned_request> plan(const workload_config& cfg, text_maker make) {
  if (!cfg.tenants.empty()) {
    // One workload per tenant, its own seed, its share of the requests (and of the rate).
    double sum = 0;
    for (const auto& t : cfg.tenants)
      sum += t.share;
    const auto counts = split_by_share(cfg.tenants, cfg.num_requests);
    std::vector<planned_request> out;
    for (std::size_t k = 0; k < cfg.tenants.size(); ++k) {
      auto one = cfg;
      one.tenants.clear();
      one.num_requests = counts.at(cfg.tenants[k].name);
      one.rate = cfg.rate * cfg.tenants[k].share / sum;
      one.seed = cfg.seed * 1000003 + k;
      for (auto& r : plan(one, make)) {
        r.tenant = cfg.tenants[k].name;
        out.push_back(std::move(r));
      }
    }
    if (cfg.mode == arrival_mode::poisson)
      std::stable_sort(out.begin(), out.end(), [](const planned_request& a, const planned_request& b) {
        return a.at_s < b.at_s;
      });
    return out;
  }
  std::mt19937_64 rng(cfg.seed);
  std::vector<planned_request> out(cfg.num_requests);
  std::vector<double> at;
  if (cfg.mode == arrival_mode::poisson)
    at = arrival_times(cfg.rate, cfg.burstiness, out.size(), rng);
  std::uniform_real_distribution<double> unit(0, 1);
  std::discrete_distribution<std::size_t> popularity;
  if (cfg.zipf > 0 && !cfg.adapters.empty()) {
    std::vector<double> weights;
    for (std::size_t k = 0; k < cfg.adapters.size(); ++k)
      weights.push_back(1 / std::pow(static_cast<double>(k + 1), cfg.zipf));
    popularity = std::discrete_distribution<std::size_t>(weights.begin(), weights.end());
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& r = out[i];
    r.at_s = at.empty() ? 0 : at[i];
    r.target_input_tokens = cfg.input.sample(rng);
    r.max_tokens = cfg.output.sample(rng);
    if (cfg.long_every > 0 && i % cfg.long_every == 0)
      r.max_tokens = cfg.long_output;
    r.prompt = cfg.prompts.empty() ? make(r.target_input_tokens, rng())
                                   : cfg.prompts[i % cfg.prompts.size()];
    if (!cfg.adapters.empty()) {
      const auto n = cfg.adapters.size();
      if (cfg.zipf > 0)
        r.adapter = cfg.adapters[popularity(rng)];
      else if (cfg.skew > 0 && unit(rng) < cfg.skew)
        r.adapter = cfg.adapters[0];
      else
        r.adapter = cfg.adapters[std::uniform_int_distribution<std::size_t>{0, n - 1}(rng)];
    }
  }
  return out;
}

} // namespace lf::loadtest
