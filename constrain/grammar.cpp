#include "constrain/grammar.hpp"

#include "core/utf8.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

namespace lf::constrain {

std::vector<std::pair<std::uint32_t, std::uint32_t>> normalise(
    std::vector<std::pair<std::uint32_t, std::uint32_t>> r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().second + 1)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> complement(
    std::vector<std::pair<std::uint32_t, std::uint32_t>> r, std::uint32_t top) {
  r = normalise(std::move(r));
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  std::uint64_t next = 0;
  for (const auto& x : r) {
    if (x.first > next)
      out.emplace_back(static_cast<std::uint32_t>(next), x.first - 1);
    next = std::uint64_t{x.second} + 1;
  }
  if (next <= top)
    out.emplace_back(static_cast<std::uint32_t>(next), top);
  return out;
}

namespace {

using byte_seq = std::vector<std::pair<std::uint8_t, std::uint8_t>>;

int utf8_len(std::uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::vector<std::uint8_t> encode(std::uint32_t cp) {
  std::string bytes;
  append_utf8(bytes, static_cast<char32_t>(cp));
  return {bytes.begin(), bytes.end()};
}

void split(std::uint32_t lo, std::uint32_t hi, std::vector<byte_seq>& out) {
  if (lo > hi)
    return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800)
      split(lo, 0xD7FF, out);
    if (hi > 0xDFFF)
      split(0xE000, hi, out);
    return;
  }
  for (const std::uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= edge && edge < hi) {
      split(lo, edge, out);
      split(edge + 1, hi, out);
      return;
    }
  }
  const int n = utf8_len(lo);
  for (int i = 1; i < n; ++i) {
    const std::uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  const auto a = encode(lo), b = encode(hi);
  byte_seq s;
  for (std::size_t i = 0; i < a.size(); ++i)
    s.emplace_back(a[i], b[i]);
  out.push_back(std::move(s));
}

constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();

std::uint32_t add_sat(std::uint32_t a, std::uint32_t b) {
  return (a == inf || b == inf || a > inf - b) ? inf : a + b;
}

struct builder {
  const grammar_limits& lim;
  std::map<std::string, std::uint32_t> by_name;
  std::vector<std::vector<std::vector<element>>> rules;
  std::vector<std::string> names;
  std::vector<std::bitset<256>> classes;
  std::map<std::string, std::uint32_t> class_index;
  std::size_t count = 0;

  std::uint32_t new_rule(const std::string& name) {
    rules.emplace_back();
    names.push_back(name);
    return static_cast<std::uint32_t>(rules.size() - 1);
  }
  void add(std::vector<element>& seq, element e) {
    if (++count > lim.max_elements)
      throw std::invalid_argument("the constraint is too large (over " + std::to_string(lim.max_elements) +
                                  " grammar elements)");
    seq.push_back(e);
  }
  element klass(const std::bitset<256>& b) {
    if (b.none())
      throw std::invalid_argument("an empty character class can match nothing");
    const auto key = b.to_string();
    auto it = class_index.find(key);
    if (it == class_index.end()) {
      it = class_index.emplace(key, static_cast<std::uint32_t>(classes.size())).first;
      classes.push_back(b);
    }
    return {element::bytes, it->second};
  }
  element byte(std::uint8_t c) {
    std::bitset<256> b;
    b.set(c);
    return klass(b);
  }
  static bool single_class(const expr& x) {
    if (x.k != expr::kind::chars)
      return false;
    if (x.raw)
      return true;
    return std::all_of(x.ranges.begin(), x.ranges.end(), [](const auto& r) { return r.second < 0x80; });
  }
  element class_of(const expr& x) {
    std::bitset<256> b;
    for (const auto& r : x.ranges) {
      if (r.first > r.second || r.second > 255)
        throw std::invalid_argument("bad byte range in a character class");
      for (auto c = r.first; c <= r.second; ++c)
        b.set(c);
    }
    return klass(b);
  }
  /// `x` as one element: a class or a reference to a rule made for it.
  element unit(const expr& x, const std::string& owner) {
    if (single_class(x))
      return class_of(x);
    if (x.k == expr::kind::literal && x.text.size() == 1)
      return byte(static_cast<std::uint8_t>(x.text[0]));
    if (x.k == expr::kind::ref)
      return {element::ref, resolve(x.text)};
    const auto r = new_rule(owner + "~" + std::to_string(rules.size()));
    const std::string own = names[r];  // a copy: lowering adds rules (and names)
    std::vector<std::vector<element>> alts;
    if (x.k == expr::kind::alt) {
      for (const auto& kid : x.kids) {
        alts.emplace_back();
        lower_into(kid, alts.back(), own);
      }
    } else {
      alts.emplace_back();
      lower_into(x, alts.back(), own);
    }
    rules[r] = std::move(alts);
    return {element::ref, r};
  }
  std::uint32_t resolve(const std::string& name) {
    const auto it = by_name.find(name);
    if (it == by_name.end())
      throw std::invalid_argument("undefined rule `" + name + "`");
    return it->second;
  }
  void lower_into(const expr& x, std::vector<element>& seq, const std::string& owner) {
    switch (x.k) {
      case expr::kind::empty: return;
      case expr::kind::literal:
        for (const char c : x.text)
          add(seq, byte(static_cast<std::uint8_t>(c)));
        return;
      case expr::kind::seq:
        for (const auto& kid : x.kids)
          lower_into(kid, seq, owner);
        return;
      case expr::kind::ref: add(seq, {element::ref, resolve(x.text)}); return;
      case expr::kind::chars: {
        if (single_class(x)) {
          add(seq, class_of(x));
          return;
        }
        const auto ranges = normalise(x.ranges);
        if (ranges.empty())
          throw std::invalid_argument("an empty character class can match nothing");
        const auto r = new_rule(owner + "~" + std::to_string(rules.size()));
        std::vector<std::vector<element>> alts;
        for (const auto& cr : ranges) {
          if (cr.first > cr.second || cr.second > max_code_point)
            throw std::invalid_argument("bad code point range in a character class");
          std::vector<byte_seq> seqs;
          split(cr.first, cr.second, seqs);
          for (const auto& s : seqs) {
            alts.emplace_back();
            for (const auto& br : s) {
              std::bitset<256> b;
              for (unsigned c = br.first; c <= br.second; ++c)
                b.set(c);
              add(alts.back(), klass(b));
            }
          }
        }
        rules[r] = std::move(alts);
        add(seq, {element::ref, r});
        return;
      }
      case expr::kind::alt: {
        if (x.kids.size() == 1) {
          lower_into(x.kids[0], seq, owner);
          return;
        }
        add(seq, unit(x, owner));
        return;
      }
      case expr::kind::repeat: {
        if (x.min > lim.max_repeat || (x.max != unbounded && x.max > lim.max_repeat))
          throw std::invalid_argument("a repetition count over " + std::to_string(lim.max_repeat));
        if (x.max != unbounded && x.max < x.min)
          throw std::invalid_argument("a repetition {m,n} with n < m");
        if (x.max == 0)
          return;
        const auto u = unit(x.kids.at(0), owner);
        for (std::uint32_t i = 0; i < x.min; ++i)
          add(seq, u);
        if (x.max == unbounded) {
          const auto r = new_rule(owner + "~" + std::to_string(rules.size()));
          std::vector<std::vector<element>> alts(2);
          add(alts[0], u);
          add(alts[0], {element::ref, r});
          rules[r] = std::move(alts);
          add(seq, {element::ref, r});
          return;
        }
        if (x.max == x.min)
          return;
        std::uint32_t prev = inf;
        for (std::uint32_t j = x.min; j < x.max; ++j) {
          const auto r = new_rule(owner + "~" + std::to_string(rules.size()));
          std::vector<std::vector<element>> alts(2);
          add(alts[0], u);
          if (prev != inf)
            add(alts[0], {element::ref, prev});
          rules[r] = std::move(alts);
          prev = r;
        }
        add(seq, {element::ref, prev});
        return;
      }
    }
  }
};

} // namespace

std::vector<std::vector<std::pair<std::uint8_t, std::uint8_t>>> utf8_sequences(std::uint32_t lo,
                                                                               std::uint32_t hi) {
  std::vector<byte_seq> out;
  split(lo, std::min(hi, max_code_point), out);
  return out;
}

grammar lower(const rule_set& rs, const grammar_limits& lim) {
  builder b{lim, {}, {}, {}, {}, {}, 0};
  for (const auto& r : rs.rules) {
    if (b.by_name.count(r.first))
      throw std::invalid_argument("rule `" + r.first + "` is defined twice");
    b.by_name[r.first] = b.new_rule(r.first);
  }
  for (std::size_t i = 0; i < rs.rules.size(); ++i) {
    const auto& x = rs.rules[i].second;
    std::vector<std::vector<element>> alts;
    if (x.k == expr::kind::alt) {
      for (const auto& kid : x.kids) {
        alts.emplace_back();
        b.lower_into(kid, alts.back(), rs.rules[i].first);
      }
    } else {
      alts.emplace_back();
      b.lower_into(x, alts.back(), rs.rules[i].first);
    }
    b.rules[i] = std::move(alts);
  }
  grammar g;
  g.root = b.resolve(rs.root);
  g.classes = std::move(b.classes);
  g.names = std::move(b.names);
  g.alts.resize(b.rules.size());
  for (std::size_t r = 0; r < b.rules.size(); ++r) {
    for (const auto& alt : b.rules[r]) {
      g.alts[r].push_back(static_cast<std::uint32_t>(g.elems.size()));
      g.elems.insert(g.elems.end(), alt.begin(), alt.end());
      g.elems.push_back({element::end, 0});
    }
  }
  // Fewest bytes per rule (fixed point), then per element.
  g.rule_min.assign(g.alts.size(), inf);
  auto alt_min = [&](std::uint32_t pos) {
    std::uint32_t total = 0;
    for (; g.elems[pos].type != element::end; ++pos)
      total = add_sat(total, g.elems[pos].type == element::bytes ? 1 : g.rule_min[g.elems[pos].arg]);
    return total;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < g.alts.size(); ++r)
      for (const auto a : g.alts[r]) {
        const auto m = alt_min(a);
        if (m < g.rule_min[r]) {
          g.rule_min[r] = m;
          changed = true;
        }
      }
  }
  for (std::size_t r = 0; r < g.alts.size(); ++r)
    if (g.rule_min[r] == inf)
      throw std::invalid_argument("rule `" + g.names[r] + "` can never end (every alternative recurses)");
  g.min_from.assign(g.elems.size(), 0);
  for (std::size_t i = g.elems.size(); i-- > 0;) {
    const auto& e = g.elems[i];
    if (e.type == element::end)
      g.min_from[i] = 0;
    else
      g.min_from[i] = add_sat(g.min_from[i + 1], e.type == element::bytes ? 1 : g.rule_min[e.arg]);
  }
  // Left recursion: a rule reachable from itself before any byte is consumed. A cycle whose
  // every step is a tail call (the rule last in its alternative, as in `R ::= u R` with u
  // nullable: a repetition of something that can be empty) returns to the very same stack and
  // is cut by the matcher; a cycle with any step that leaves something behind would grow the
  // stack forever and is refused.
  struct edge {
    std::uint32_t to;
    bool grows;
  };
  std::vector<std::vector<edge>> left(g.alts.size());
  for (std::size_t r = 0; r < g.alts.size(); ++r)
    for (auto pos : g.alts[r])
      for (; g.elems[pos].type == element::ref; ++pos) {
        left[r].push_back({g.elems[pos].arg, g.elems[pos + 1].type != element::end});
        if (g.rule_min[g.elems[pos].arg] != 0)
          break;
      }
  // Tarjan's strongly connected components (iterative).
  const auto n = static_cast<std::uint32_t>(g.alts.size());
  std::vector<std::uint32_t> index(n, inf), low(n, 0), comp(n, inf), stk;
  std::vector<bool> on(n, false);
  std::uint32_t next_index = 0, comps = 0;
  for (std::uint32_t s0 = 0; s0 < n; ++s0) {
    if (index[s0] != inf)
      continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> work{{s0, 0}};
    index[s0] = low[s0] = next_index++;
    stk.push_back(s0);
    on[s0] = true;
    while (!work.empty()) {
      auto& [v, i] = work.back();
      if (i < left[v].size()) {
        const auto w = left[v][i++].to;
        if (index[w] == inf) {
          index[w] = low[w] = next_index++;
          stk.push_back(w);
          on[w] = true;
          work.push_back({w, 0});
        } else if (on[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        for (;;) {
          const auto w = stk.back();
          stk.pop_back();
          on[w] = false;
          comp[w] = comps;
          if (w == v)
            break;
        }
        ++comps;
      }
      const auto done = v;
      work.pop_back();
      if (!work.empty())
        low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  for (std::uint32_t r = 0; r < n; ++r)
    for (const auto& e : left[r])
      if (comp[e.to] == comp[r]) {
        if (e.grows)
          throw std::invalid_argument("rule `" + g.names[r] + "` is left-recursive");
        g.tail_cycles = true;
      }
  return g;
}

} // namespace lf::constrain
