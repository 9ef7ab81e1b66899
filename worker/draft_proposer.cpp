#include "worker/draft_proposer.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

namespace lf::worker {

std::size_t draft_valid_prefix(const std::vector<std::int32_t>& seen, const std::vector<std::int32_t>& tokens) {
  if (tokens.empty())
    return 0;
  const auto n = std::min(seen.size(), tokens.size() - 1);
  return static_cast<std::size_t>(std::mismatch(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(n),
                                                tokens.begin())
                                    .first
                                  - seen.begin());
}

std::uint32_t draft_room(std::size_t tokens_len, std::uint32_t context, std::uint32_t k) {
  // Positions tokens_len - 1 (the last token) .. tokens_len + k - 2 (the (k-1)-th proposal).
  if (tokens_len == 0 || tokens_len > context)
    return 0;
  return static_cast<std::uint32_t>(std::min<std::size_t>(k, context + 1 - tokens_len));
}

std::int32_t greedy_token(const float* logits, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (logits[i] > logits[best] || (logits[best] != logits[best] && logits[i] == logits[i]))
      best = i;
  return static_cast<std::int32_t>(best);
}

draft_proposer::draft_proposer(engine::step_engine& engine, std::uint32_t num_blocks, std::uint32_t block_size,
                               std::uint32_t context)
  : engine_(engine), blocks_({num_blocks, block_size, false}), context_(context) {}

std::size_t draft_proposer::computed(cache::seq_id id) const {
  auto it = seen_.find(id);
  return it == seen_.end() ? 0 : it->second.size();
}

void draft_proposer::forget(cache::seq_id id) {
  if (seen_.erase(id) > 0)
    blocks_.free(id);
}

void draft_proposer::retain(const std::function<bool(cache::seq_id)>& keep) {
  std::vector<cache::seq_id> drop;
  for (const auto& [id, s] : seen_)
    if (!keep(id))
      drop.push_back(id);
  for (auto id : drop)
    forget(id);
}

std::vector<std::vector<std::int32_t>> draft_proposer::propose(const std::vector<draft_want>& rows) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<std::int32_t>> out(rows.size());
  // Rows it serves: their index, tokens wanted and position of their first new token.
  struct row_state {
    std::size_t i;
    std::uint32_t k;
  };
  std::vector<row_state> live;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto len = r.tokens ? r.tokens->size() : 0;
    auto k = draft_room(len, context_, r.k);
    if (k == 0) {
      ++counters_.refused;
      continue;
    }
    // Slots for positions [0, len + k - 1): the tokens and k - 1 proposals fed back.
    if (!blocks_.contains(r.id)) {
      if (!blocks_.allocate(r.id, *r.tokens, cache::base_model)) {
        ++counters_.refused;
        continue;
      }
      seen_[r.id].clear();
    } else if (!blocks_.ensure_slots(r.id, static_cast<std::uint32_t>(len))) {
      forget(r.id);  // it cannot even hold its tokens: give its blocks to the others
      ++counters_.refused;
      continue;
    }
    if (!blocks_.ensure_slots(r.id, static_cast<std::uint32_t>(len + k - 1))) {
      // As far as the free blocks go: fewer proposals.
      const auto bs = blocks_.block_size();
      const auto most = (static_cast<std::uint32_t>(blocks_.block_table(r.id).size()) + blocks_.num_free_blocks()) * bs;
      blocks_.ensure_slots(r.id, std::min<std::uint32_t>(most, static_cast<std::uint32_t>(len + k - 1)));
      k = blocks_.num_slots(r.id) - static_cast<std::uint32_t>(len) + 1;
    }
    auto& seen = seen_[r.id];
    seen.resize(draft_valid_prefix(seen, *r.tokens));
    out[i].reserve(k);
    live.push_back({i, k});
  }
  if (live.empty())
    return out;
  std::vector<engine::engine_chunk> chunks;
  try {
    // Catch-up: each row's unseen tokens, the last one's logits giving its first proposal.
    for (const auto& s : live) {
      const auto& r = rows[s.i];
      const auto& seen = seen_.at(r.id);
      const auto from = static_cast<std::int64_t>(seen.size());
      chunks.push_back({r.tokens->data() + from, from, static_cast<std::int64_t>(r.tokens->size()) - from,
                        &blocks_.block_table(r.id), true, cache::base_model, 1});
    }
    for (std::uint32_t step = 0;; ++step) {
      engine_.step(chunks);
      ++counters_.steps;
      // Record what this forward wrote, then take each row's greedy token.
      std::size_t c = 0;
      std::vector<row_state> next;
      for (const auto& s : live) {
        const auto& r = rows[s.i];
        auto& seen = seen_.at(r.id);
        const auto& ch = chunks[c];
        seen.insert(seen.end(), ch.tokens, ch.tokens + ch.count);
        out[s.i].push_back(greedy_token(engine_.logits(c), engine_.vocab_size()));
        ++c;
        if (out[s.i].size() < s.k)
          next.push_back(s);
      }
      if (next.empty())
        break;
      live = std::move(next);
      chunks.clear();
      for (const auto& s : live) {
        const auto& r = rows[s.i];
        const auto& seen = seen_.at(r.id);
        chunks.push_back({&out[s.i].back(), static_cast<std::int64_t>(seen.size()), 1, &blocks_.block_table(r.id),
                          true, cache::base_model, 1});
      }
    }
  } catch (const std::exception&) {
    // What the failed forward wrote is unknown: start every sequence over.
    std::vector<cache::seq_id> all;
    for (const auto& [id, s] : seen_)
      all.push_back(id);
    for (auto id : all)
      forget(id);
    for (auto& o : out)
      if (!o.empty())
        ++counters_.refused;
    for (auto& o : out)
      o.clear();
  }
  for (const auto& o : out)
    if (!o.empty()) {
      ++counters_.rows;
      counters_.proposed += o.size();
    }
  counters_.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

} // namespace lf::worker
