#pragma once
// A fake engine for scheduler tests. It "computes" K/V by writing, at each position's slot, a
// fingerprint of (adapter, every token up to that position), and it samples the next token as a
// function of the fingerprint of the whole sequence. Before sampling it reads back every position
// of the sequence, so a wrong slot, a block reused from the prefix cache with the wrong content
// or a position never computed shows up as a mismatch. Because the next token depends only on
// the tokens, the output is the same with or without preemption (recompute) and prefix hits.

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "cache/block_manager.hpp"
#include "worker/scheduler.hpp"

namespace lf::worker::testing {

using token_vec = std::vector<std::int32_t>;

/// Fingerprint of the K/V at every position of `t` under adapter `a`.
inline std::vector<std::uint64_t> kv_fingerprints(cache::adapter_id a, const token_vec& t) {
  std::vector<std::uint64_t> out;
  out.reserve(t.size());
  std::uint64_t h = 0x243f6a8885a308d3ULL ^ (std::uint64_t{a.value()} << 32);
  for (auto tok : t) {
    h = (h ^ static_cast<std::uint32_t>(tok)) * 0x100000001b3ULL;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
    out.push_back(h);
  }
  return out;
}

/// The token the fake model emits after `t` (vocabulary of 1000).
inline std::int32_t next_token(cache::adapter_id a, const token_vec& t) {
  return static_cast<std::int32_t>(kv_fingerprints(a, t).back() % 1000);
}

/// What generating `max_tokens` tokens after `prompt` yields without any scheduler.
inline token_vec reference_run(cache::adapter_id a, token_vec prompt, std::uint32_t max_tokens) {
  for (std::uint32_t i = 0; i < max_tokens; ++i)
    prompt.push_back(next_token(a, prompt));
  return prompt;
}

/// Executes plans against a shadow K/V pool and checks them against the scheduler's contract.
class fake_engine {
public:
  fake_engine(const scheduler& s, const cache::block_manager& bm)
    : s_(s), bm_(bm), kv_(std::size_t{bm.num_blocks()} * bm.block_size(), 0) {}

  /// Validates `plan`, writes its chunks' K/V, returns the sampled tokens (nullopt for chunks
  /// that do not sample).
  std::vector<std::optional<std::int32_t>> run(const step_plan& plan) {
    check_plan(plan);
    std::vector<std::optional<std::int32_t>> out;
    out.reserve(plan.chunks.size());
    for (const auto& c : plan.chunks) {
      const auto a = s_.adapter(c.id);
      const auto& toks = s_.tokens(c.id);
      const auto fp = kv_fingerprints(a, toks);
      for (auto p = c.start; p < c.start + c.count; ++p)
        kv_[bm_.slot_of(c.id, p)] = fp[p];
      if (!c.samples) {
        out.emplace_back();
        continue;
      }
      // Attention reads every earlier position: they must all hold this sequence's K/V.
      for (std::uint32_t p = 0; p < toks.size(); ++p)
        if (kv_[bm_.slot_of(c.id, p)] != fp[p])
          FAIL("sequence " << c.id << ": wrong K/V at position " << p);
      out.emplace_back(next_token(a, toks));
    }
    return out;
  }

  /// The scheduler's contract for one plan, checked before anything runs.
  void check_plan(const step_plan& plan) const {
    const auto& cfg = s_.config();
    std::uint32_t sum = 0;
    bool prefills_started = false;
    std::set<cache::seq_id> seen;
    for (const auto& c : plan.chunks) {
      if (!seen.insert(c.id).second)
        FAIL("sequence " << c.id << " planned twice");
      if (s_.phase(c.id) == seq_phase::waiting)
        FAIL("sequence " << c.id << " planned while waiting");
      const auto n = s_.tokens(c.id).size();
      if (c.count == 0 || c.start != bm_.num_computed(c.id) || c.start + c.count > n
          || c.start + c.count > bm_.num_slots(c.id) || c.samples != (c.start + c.count == n))
        FAIL("bad chunk of sequence " << c.id << ": [" << c.start << ", +" << c.count << ")");
      const bool decode = s_.phase(c.id) == seq_phase::decoding;
      if (decode && (c.count != 1 || !c.samples))
        FAIL("decode of sequence " << c.id << " is not one sampling token");
      if (decode && prefills_started)
        FAIL("decode of sequence " << c.id << " after a prefill chunk");
      prefills_started = prefills_started || !decode;
      if (s_.num_generated(c.id) >= s_.max_tokens(c.id))
        FAIL("sequence " << c.id << " planned past max_tokens");
      sum += c.count;
    }
    if (sum != plan.num_tokens || sum > cfg.max_batched_tokens)
      FAIL("plan has " << sum << " tokens, num_tokens " << plan.num_tokens);
    if (s_.running().size() > cfg.max_seqs)
      FAIL(s_.running().size() << " running sequences");
  }

private:
  const scheduler& s_;
  const cache::block_manager& bm_;
  std::vector<std::uint64_t> kv_;
};

} // namespace lf::worker::testing
