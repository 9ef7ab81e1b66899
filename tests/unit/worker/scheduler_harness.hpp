#pragma once
// A block manager, a scheduler over it and a fake engine, driven like the worker loop: schedule,
// run, complete, then finish the sequences that reached max_tokens.

#include <catch2/catch.hpp>

#include <numeric>
#include <sstream>
#include <string>

#include "tests/unit/worker/fake_engine.hpp"

namespace lf::worker::testing {

/// The epoch of the tests' fake clock.
inline const time_point t0{};

/// t0 + `ms` milliseconds.
inline time_point at_ms(long ms) { return t0 + std::chrono::milliseconds(ms); }

inline cache::seq_id sid(std::uint64_t v) { return cache::seq_id{v}; }

/// n tokens: first, first + 1, ...
inline token_vec iota_tokens(std::size_t n, std::int32_t first = 0) {
  token_vec t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

/// A plan's chunks as "id@start+count", a '*' marking a sampling chunk, e.g. "0@10+1* 2@3+2".
inline std::string show(const step_plan& plan) {
  std::ostringstream os;
  for (const auto& c : plan.chunks)
    os << (os.tellp() > 0 ? " " : "") << c.id << '@' << c.start << '+' << c.count
       << (c.samples ? "*" : "");
  return os.str();
}

inline std::string show(const std::vector<cache::seq_id>& ids) {
  std::ostringstream os;
  for (auto id : ids)
    os << (os.tellp() > 0 ? " " : "") << id;
  return os.str();
}

struct harness {
  cache::block_manager bm;
  scheduler s;
  fake_engine eng;
  /// Sequences finished by step() because they reached max_tokens, in order.
  std::vector<cache::seq_id> finished;

  harness(scheduler_config cfg, std::uint32_t num_blocks, std::uint32_t block_size = 4, bool prefix_cache = true)
    : bm(cache::block_manager_config{num_blocks, block_size, prefix_cache, nullptr}),
      s(cfg, bm),
      eng(s, bm) {}

  void add(std::uint64_t id, token_vec prompt, std::uint32_t max_tokens = 16,
           cache::adapter_id adapter = cache::base_model,
           std::optional<time_point> deadline = std::nullopt, std::string tenant = {}) {
    seq_spec spec;
    spec.id = sid(id);
    spec.prompt = std::move(prompt);
    spec.adapter = adapter;
    spec.max_tokens = max_tokens;
    spec.deadline = deadline;
    spec.tenant = std::move(tenant);
    auto err = s.add(std::move(spec), t0);
    INFO(err.value_or(""));
    REQUIRE_FALSE(err.has_value());
  }

  /// One worker iteration at time `now`.
  step_plan step(time_point now = t0,
                 const std::function<bool(cache::adapter_id)>& adapter_ready = {}) {
    auto plan = s.schedule(now, adapter_ready);
    s.complete(plan, eng.run(plan));
    bm.check_invariants();
    for (auto id : s.running())
      if (s.num_generated(id) >= s.max_tokens(id)) {
        REQUIRE(s.finish(id));
        finished.push_back(id);
      }
    return plan;
  }
};

} // namespace lf::worker::testing
