#pragma once
/// Token masks for a grammar over a vocabulary of byte strings.
///
/// vocab_trie holds the vocabulary's byte strings as a trie. token_automaton runs a grammar's
/// matcher lazily determinised: every match_state met is interned once (an id), every (state,
/// byte) transition is computed once and remembered, and a state's token mask is one walk of the
/// trie from it that prunes a whole subtree at the first byte no parse accepts. A token may cross
/// several grammar states; its bytes are transitions like any others. Masks are cached per state.
///
/// The end-of-text token is not in the trie: a mask allows it exactly where the state accepts.
///
/// Bounds: at most `max_states` interned states (each with 256 transition slots: 1 KiB) and
/// `max_masks` cached masks (vocab / 8 bytes each); past either bound that table is emptied and
/// refilled (states get a new generation; cursors holding the old one re-intern their state).
/// One mutex guards the tables: the automaton may be shared by rows sampled on several threads.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.hpp"
#include "constrain/matcher.hpp"

namespace lf::constrain {

/// The vocabulary's byte strings as a trie (children of a node contiguous, bytes ascending).
class vocab_trie {
public:
  /// `tokens[id]` = the bytes of token `id`; `eos` is left out of the trie (the end of output).
  /// Empty strings are never allowed.
  vocab_trie(std::vector<std::string> tokens, std::int32_t eos);

  struct node {
    std::uint8_t byte = 0;
    std::uint32_t kid_begin = 0, kid_end = 0;
    std::uint32_t tok_begin = 0, tok_end = 0;  ///< ids ending here: ids_[tok_begin, tok_end)
  };
  std::size_t vocab_size() const noexcept { return bytes_.size(); }
  std::int32_t eos() const noexcept { return eos_; }
  const std::string& bytes(std::int32_t id) const { return bytes_.at(static_cast<std::size_t>(id)); }
  const std::vector<node>& nodes() const noexcept { return nodes_; }
  const std::vector<std::int32_t>& ids() const noexcept { return ids_; }

private:
  std::vector<std::string> bytes_;
  std::int32_t eos_;
  std::vector<node> nodes_;  ///< nodes_[0] is the root
  std::vector<std::int32_t> ids_;
};

/// Allowed tokens, one bit each.
struct token_mask {
  std::vector<std::uint64_t> bits;
  std::size_t allowed = 0;  ///< how many bits are set
  /// The allowed ids, ascending, when they are few (at most vocab / 16; else empty): a sampler
  /// can then work on those alone, at a cost independent of the vocabulary's size.
  std::vector<std::int32_t> ids;
  bool test(std::int32_t id) const noexcept {
    return (bits[static_cast<std::size_t>(id) >> 6] >> (static_cast<unsigned>(id) & 63)) & 1u;
  }
};

/// A grammar's automaton over one vocabulary; see the header comment.
class token_automaton {
public:
  struct limits {
    std::size_t max_states = 16384;
    std::size_t max_masks = 1024;
    match_limits match{};
  };

  /// Where a sequence stands: its state (the value, so it survives a table reset) and its id in
  /// the table of `generation`.
  struct cursor {
    std::shared_ptr<const match_state> state;
    std::uint32_t id = 0;
    std::uint64_t generation = 0;
  };

  token_automaton(std::shared_ptr<const grammar> g, std::shared_ptr<const vocab_trie> vocab, limits lim);
  token_automaton(std::shared_ptr<const grammar> g, std::shared_ptr<const vocab_trie> vocab)
      : token_automaton(std::move(g), std::move(vocab), limits{}) {}

  /// The state before any output.
  cursor start();
  /// The state after `token`, or nullopt when the token is not allowed there (the end-of-text
  /// token never advances: it ends the output, allowed where accepting()).
  std::optional<cursor> advance(cursor c, std::int32_t token);
  /// Whether `token` is allowed at `c` (end-of-text: where accepting).
  bool allows(cursor c, std::int32_t token);
  /// The output so far is complete.
  bool accepting(const cursor& c) const noexcept { return c.state->accepting(); }
  /// The allowed tokens at `c` (cached per state).
  std::shared_ptr<const token_mask> mask(cursor c);
  /// The same mask computed without the tables, advancing match states byte by byte: the
  /// reference the tests compare mask() with (slow).
  token_mask reference_mask(const cursor& c) const;

  const grammar& rules() const noexcept { return *g_; }
  const vocab_trie& vocab() const noexcept { return *vocab_; }
  /// Table sizes, for tests and stats.
  std::size_t states() const;
  std::uint64_t generation() const;

private:
  struct key_hash {
    std::size_t operator()(const std::vector<std::uint32_t>& k) const noexcept;
  };
  std::uint32_t intern(std::shared_ptr<const match_state> s);  // mu_ held
  void refresh(cursor& c);                                     // mu_ held
  /// -1: dead; else the target id (mu_ held).
  std::int32_t step(std::uint32_t id, std::uint8_t byte);
  void walk(std::uint32_t node, std::uint32_t id, token_mask& m);  // mu_ held
  void reset();  // mu_ held

  std::shared_ptr<const grammar> g_;
  std::shared_ptr<const vocab_trie> vocab_;
  limits lim_;
  mutable std::mutex mu_;
  std::uint64_t generation_ = 0;
  std::vector<std::shared_ptr<const match_state>> states_;
  std::vector<std::array<std::int32_t, 256>> trans_;  ///< -2 unknown, -1 dead
  std::vector<std::shared_ptr<const token_mask>> masks_;
  std::size_t mask_count_ = 0;
  std::unordered_map<std::vector<std::uint32_t>, std::uint32_t, key_hash> index_;
  bool overflow_ = false;  ///< the table filled during a walk: reset before the next call
};

} // namespace lf::constrain
