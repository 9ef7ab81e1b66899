#include "constrain/token_automaton.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace lf::constrain {

vocab_trie::vocab_trie(std::vector<std::string> tokens, std::int32_t eos) : bytes_(std::move(tokens)), eos_(eos) {
  // A pointer trie first, then laid out breadth first so each node's children are contiguous.
  struct tmp {
    std::map<std::uint8_t, std::uint32_t> kids;
    std::vector<std::int32_t> ids;
  };
  std::vector<tmp> t(1);
  for (std::size_t id = 0; id < bytes_.size(); ++id) {
    if (static_cast<std::int32_t>(id) == eos || bytes_[id].empty())
      continue;
    std::uint32_t at = 0;
    for (const char ch : bytes_[id]) {
      const auto c = static_cast<std::uint8_t>(ch);
      auto it = t[at].kids.find(c);
      if (it == t[at].kids.end()) {
        t.emplace_back();
        it = t[at].kids.emplace(c, static_cast<std::uint32_t>(t.size() - 1)).first;
      }
      at = it->second;
    }
    t[at].ids.push_back(static_cast<std::int32_t>(id));
  }
  std::vector<std::uint32_t> order{0};  // tmp index per new position
  nodes_.resize(1);
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    auto& src = t[order[pos]];
    nodes_[pos].tok_begin = static_cast<std::uint32_t>(ids_.size());
    ids_.insert(ids_.end(), src.ids.begin(), src.ids.end());
    nodes_[pos].tok_end = static_cast<std::uint32_t>(ids_.size());
    nodes_[pos].kid_begin = static_cast<std::uint32_t>(order.size());
    for (const auto& [c, k] : src.kids) {
      order.push_back(k);
      nodes_.emplace_back();
      nodes_.back().byte = c;
    }
    nodes_[pos].kid_end = static_cast<std::uint32_t>(order.size());
  }
}

std::size_t token_automaton::key_hash::operator()(const std::vector<std::uint32_t>& k) const noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto x : k)
    h = (h ^ x) * 1099511628211ull;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

token_automaton::token_automaton(std::shared_ptr<const grammar> g, std::shared_ptr<const vocab_trie> vocab,
                                 limits lim)
    : g_(std::move(g)), vocab_(std::move(vocab)), lim_(lim) {}

void token_automaton::reset() {
  states_.clear();
  trans_.clear();
  masks_.clear();
  index_.clear();
  mask_count_ = 0;
  overflow_ = false;
  ++generation_;
}

std::uint32_t token_automaton::intern(std::shared_ptr<const match_state> s) {
  auto key = state_key(*s);
  const auto it = index_.find(key);
  if (it != index_.end())
    return it->second;
  const auto id = static_cast<std::uint32_t>(states_.size());
  index_.emplace(std::move(key), id);
  states_.push_back(std::move(s));
  std::array<std::int32_t, 256> row;
  row.fill(-2);
  trans_.push_back(row);
  masks_.emplace_back();
  if (states_.size() >= lim_.max_states)
    overflow_ = true;
  return id;
}

void token_automaton::refresh(cursor& c) {
  if (overflow_)
    reset();
  if (c.generation != generation_ || c.id >= states_.size() || states_[c.id] != c.state) {
    c.id = intern(c.state);
    c.generation = generation_;
  }
}

std::int32_t token_automaton::step(std::uint32_t id, std::uint8_t byte) {
  auto t = trans_[id][byte];
  if (t != -2)
    return t;
  auto next = constrain::advance(*g_, *states_[id], byte, lim_.match);
  if (next.dead()) {
    t = -1;
  } else if (overflow_) {
    // The table is full: the walk goes on (growing it by at most the new states of this one
    // walk, fewer than the trie's nodes) and the next public call resets it.
    const auto key = state_key(next);
    const auto it = index_.find(key);
    if (it == index_.end())
      return static_cast<std::int32_t>(intern(std::make_shared<const match_state>(std::move(next))));
    t = static_cast<std::int32_t>(it->second);
  } else {
    t = static_cast<std::int32_t>(intern(std::make_shared<const match_state>(std::move(next))));
  }
  trans_[id][byte] = t;
  return t;
}

token_automaton::cursor token_automaton::start() {
  std::lock_guard<std::mutex> lock(mu_);
  cursor c;
  c.state = std::make_shared<const match_state>(initial_state(*g_, lim_.match));
  c.generation = ~generation_;
  refresh(c);
  return c;
}

std::optional<token_automaton::cursor> token_automaton::advance(cursor c, std::int32_t token) {
  if (token == vocab_->eos() || token < 0 || static_cast<std::size_t>(token) >= vocab_->vocab_size())
    return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  refresh(c);
  const auto& b = vocab_->bytes(token);
  if (b.empty())
    return std::nullopt;
  std::int32_t id = static_cast<std::int32_t>(c.id);
  for (const char ch : b) {
    id = step(static_cast<std::uint32_t>(id), static_cast<std::uint8_t>(ch));
    if (id < 0)
      return std::nullopt;
  }
  cursor out;
  out.state = states_[static_cast<std::size_t>(id)];
  out.id = static_cast<std::uint32_t>(id);
  out.generation = generation_;
  return out;
}

bool token_automaton::allows(cursor c, std::int32_t token) {
  if (token == vocab_->eos())
    return c.state->accepting();
  return advance(std::move(c), token).has_value();
}

void token_automaton::walk(std::uint32_t node, std::uint32_t id, token_mask& m) {
  const auto& nodes = vocab_->nodes();
  const auto& ids = vocab_->ids();
  const auto& n = nodes[node];
  for (auto k = n.kid_begin; k < n.kid_end; ++k) {
    const auto next = step(id, nodes[k].byte);
    if (next < 0)
      continue;
    for (auto t = nodes[k].tok_begin; t < nodes[k].tok_end; ++t) {
      const auto tok = static_cast<std::size_t>(ids[t]);
      m.bits[tok >> 6] |= std::uint64_t{1} << (tok & 63);
      ++m.allowed;
    }
    if (nodes[k].kid_begin < nodes[k].kid_end)
      walk(k, static_cast<std::uint32_t>(next), m);
  }
}

std::shared_ptr<const token_mask> token_automaton::mask(cursor c) {
  std::lock_guard<std::mutex> lock(mu_);
  refresh(c);
  if (auto m = masks_[c.id])
    return m;
  auto m = std::make_shared<token_mask>();
  m->bits.assign((vocab_->vocab_size() + 63) / 64, 0);
  walk(0, c.id, *m);
  const auto eos = vocab_->eos();
  if (c.state->accepting() && eos >= 0 && static_cast<std::size_t>(eos) < vocab_->vocab_size()) {
    m->bits[static_cast<std::size_t>(eos) >> 6] |= std::uint64_t{1} << (static_cast<unsigned>(eos) & 63);
    ++m->allowed;
  }
  if (m->allowed <= vocab_->vocab_size() / 16) {
    m->ids.reserve(m->allowed);
    for (std::size_t w = 0; w < m->bits.size(); ++w)
      for (auto bits = m->bits[w]; bits != 0; bits &= bits - 1)
        m->ids.push_back(static_cast<std::int32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))));
  }
  if (overflow_)
    return m;  // the table resets on the next call: do not keep ids into it
  if (mask_count_ >= lim_.max_masks) {
    for (auto& x : masks_)
      x.reset();
    mask_count_ = 0;
  }
  masks_[c.id] = m;
  ++mask_count_;
  return m;
}

token_mask token_automaton::reference_mask(const cursor& c) const {
  token_mask m;
  m.bits.assign((vocab_->vocab_size() + 63) / 64, 0);
  for (std::size_t id = 0; id < vocab_->vocab_size(); ++id) {
    const auto tok = static_cast<std::int32_t>(id);
    bool ok;
    if (tok == vocab_->eos()) {
      ok = c.state->accepting();
    } else {
      const auto& b = vocab_->bytes(tok);
      ok = !b.empty();
      match_state s = *c.state;
      for (std::size_t i = 0; ok && i < b.size(); ++i) {
        s = constrain::advance(*g_, s, static_cast<std::uint8_t>(b[i]), lim_.match);
        ok = !s.dead();
      }
    }
    if (ok) {
      m.bits[id >> 6] |= std::uint64_t{1} << (id & 63);
      ++m.allowed;
    }
  }
  return m;
}

std::size_t token_automaton::states() const {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

std::uint64_t token_automaton::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

} // namespace lf::constrain
