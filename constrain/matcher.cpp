#include "constrain/matcher.hpp"

#include <algorithm>
#include <limits>

namespace lf::constrain {

bool match_state::accepting() const noexcept {
  return std::any_of(stacks.begin(), stacks.end(), [](const parse_stack& s) { return s.empty(); });
}

namespace {

/// Expands `s` until its top is a byte class (or it is empty) and appends the results to `out`.
void expand(const grammar& g, parse_stack& s, std::vector<parse_stack>& out, const match_limits& lim,
            std::vector<parse_stack>& seen) {
  if (s.size() > lim.max_depth)
    return;
  if (s.empty() || g.elems[s.back()].type == element::bytes) {
    out.push_back(s);
    return;
  }
  if (g.tail_cycles) {
    if (std::find(seen.begin(), seen.end(), s) != seen.end())
      return;  // back where this expansion already was: a cycle of empty matches
    seen.push_back(s);
  }
  const auto top = s.back();
  const auto rule = g.elems[top].arg;
  s.pop_back();
  const bool more = g.elems[top + 1].type != element::end;
  if (more)
    s.push_back(top + 1);
  for (const auto a : g.alts[rule]) {
    if (g.elems[a].type == element::end) {
      expand(g, s, out, lim, seen);
      continue;
    }
    s.push_back(a);
    expand(g, s, out, lim, seen);
    s.pop_back();
  }
  if (more)
    s.pop_back();
  s.push_back(top);
}

void settle(std::vector<parse_stack>& v, const match_limits& lim) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.size() > lim.max_stacks)
    v.resize(lim.max_stacks);
}

} // namespace

match_state initial_state(const grammar& g, const match_limits& lim) {
  match_state st;
  parse_stack s;
  std::vector<parse_stack> seen;
  for (const auto a : g.alts[g.root]) {
    s.clear();
    seen.clear();
    if (g.elems[a].type != element::end)
      s.push_back(a);
    expand(g, s, st.stacks, lim, seen);
  }
  settle(st.stacks, lim);
  return st;
}

match_state advance(const grammar& g, const match_state& st, std::uint8_t byte, const match_limits& lim) {
  match_state out;
  parse_stack s;
  std::vector<parse_stack> seen;
  for (const auto& stack : st.stacks) {
    seen.clear();
    if (stack.empty() || !g.classes[g.elems[stack.back()].arg].test(byte))
      continue;
    s = stack;
    const auto top = s.back();
    s.pop_back();
    if (g.elems[top + 1].type != element::end)
      s.push_back(top + 1);
    expand(g, s, out.stacks, lim, seen);
  }
  settle(out.stacks, lim);
  return out;
}

std::bitset<256> next_bytes(const grammar& g, const match_state& st) {
  std::bitset<256> b;
  for (const auto& s : st.stacks)
    if (!s.empty())
      b |= g.classes[g.elems[s.back()].arg];
  return b;
}

std::uint32_t distance_to_accept(const grammar& g, const match_state& st) {
  std::uint64_t best = std::numeric_limits<std::uint32_t>::max();
  for (const auto& s : st.stacks) {
    std::uint64_t d = 0;
    for (const auto pos : s)
      d += g.min_from[pos];
    best = std::min(best, d);
  }
  return static_cast<std::uint32_t>(best);
}

bool matches(const grammar& g, std::string_view text, const match_limits& lim) {
  auto st = initial_state(g, lim);
  for (const char c : text) {
    st = advance(g, st, static_cast<std::uint8_t>(c), lim);
    if (st.dead())
      return false;
  }
  return st.accepting();
}

std::vector<std::uint32_t> state_key(const match_state& st) {
  std::vector<std::uint32_t> k;
  for (const auto& s : st.stacks) {
    k.insert(k.end(), s.begin(), s.end());
    k.push_back(std::numeric_limits<std::uint32_t>::max());
  }
  return k;
}

} // namespace lf::constrain
