#pragma once
/// A request's output constraint compiled, checked and cached. The gateway calls
/// check_constraint() at the edge (a refusal is a 400 naming the problem); the worker asks its
/// constraint_cache for the constraint's token automaton (compiled once per text, least recently
/// used dropped first).

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "constrain/grammar.hpp"
#include "constrain/token_automaton.hpp"
#include "core/sampling_params.hpp"

namespace lf::constrain {

/// Compiles `c` (kind not empty) into a byte grammar. Throws std::invalid_argument naming the
/// problem (bad JSON, unsupported schema keyword, bad regex or grammar, too large).
grammar compile_constraint(const output_constraint& c, const grammar_limits& lim = {});

/// The message a client sees when `c` cannot be used, or nullopt when it compiles (or is empty).
std::optional<std::string> check_constraint(const output_constraint& c, const grammar_limits& lim = {});

/// Compiled constraints over one vocabulary, by kind and text, at most `capacity` of them (the
/// least recently used is dropped; requests holding it keep theirs). Thread-safe.
class constraint_cache {
public:
  constraint_cache(std::shared_ptr<const vocab_trie> vocab, std::size_t capacity,
                   token_automaton::limits lim = {});
  /// The automaton for `c`; throws std::invalid_argument when it does not compile.
  std::shared_ptr<token_automaton> get(const output_constraint& c);
  std::size_t size() const;
  const std::shared_ptr<const vocab_trie>& vocab() const noexcept { return vocab_; }

private:
  std::shared_ptr<const vocab_trie> vocab_;
  std::size_t capacity_;
  token_automaton::limits lim_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<token_automaton>>> lru_;  ///< most recent first
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

} // namespace lf::constrain
