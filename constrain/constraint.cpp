#include "constrain/constraint.hpp"

#include <stdexcept>

#include "constrain/json_schema.hpp"
#include "constrain/json_value.hpp"
#include "constrain/syntax.hpp"

namespace lf::constrain {

grammar compile_constraint(const output_constraint& c, const grammar_limits& lim) {
  if (c.text.size() > max_constraint_text)
    throw std::invalid_argument("the constraint is too large (over " + std::to_string(max_constraint_text) +
                                " bytes)");
  if (c.kind == "json_object")
    return lower(json_any_rules(), lim);
  if (c.kind == "json_schema")
    return lower(json_schema_rules(parse_json(c.text)), lim);
  if (c.kind == "regex")
    return lower(parse_regex(c.text), lim);
  if (c.kind == "grammar")
    return lower(parse_gbnf(c.text), lim);
  if (c.kind == "choice") {
    const auto v = parse_json(c.text);
    if (!v.is(json_value::kind::array))
      throw std::invalid_argument("choice must be an array of strings");
    std::vector<std::string> choices;
    for (const auto& x : v.items) {
      if (!x.is(json_value::kind::string) || x.text.empty())
        throw std::invalid_argument("choice must be an array of non-empty strings");
      choices.push_back(x.text);
    }
    return lower(choice_rules(choices), lim);
  }
  throw std::invalid_argument("unknown constraint kind \"" + c.kind + "\"");
}

std::optional<std::string> check_constraint(const output_constraint& c, const grammar_limits& lim) {
  if (c.kind.empty())
    return std::nullopt;
  try {
    compile_constraint(c, lim);
    return std::nullopt;
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  } catch (const std::length_error&) {
    return std::string("the constraint is too large");
  } catch (const std::bad_alloc&) {
    return std::string("the constraint is too large");
  }
}

constraint_cache::constraint_cache(std::shared_ptr<const vocab_trie> vocab, std::size_t capacity,
                                   token_automaton::limits lim)
    : vocab_(std::move(vocab)), capacity_(capacity == 0 ? 1 : capacity), lim_(lim) {}

std::shared_ptr<token_automaton> constraint_cache::get(const output_constraint& c) {
  const auto key = c.kind + '\n' + c.text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compiled outside the lock: other rows go on meanwhile (two threads may both compile it once).
  auto a = std::make_shared<token_automaton>(std::make_shared<const grammar>(compile_constraint(c)), vocab_, lim_);
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = index_.find(key);
  if (it != index_.end())
    return it->second->second;
  lru_.emplace_front(key, a);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return a;
}

std::size_t constraint_cache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

} // namespace lf::constrain
