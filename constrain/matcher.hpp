#pragma once
/// Runs a lowered grammar over bytes. A state is the set of parse stacks that have consumed the
/// bytes so far (llama.cpp's GBNF matcher works the same way): each stack lists, top last, the
/// grammar positions still to match; the top is always a byte class, and an empty stack means
/// the input so far is a complete match. advance() moves every stack whose top accepts the byte.
///
/// Bounds: a stack deeper than `max_depth` is dropped (recursion that deep cannot continue), and
/// a state keeps at most `max_stacks` stacks (the first in sorted order). Both keep the state
/// sound: every stack kept is a real parse of the input, and every rule can end (lower() refuses
/// one that cannot), so a non-empty state always has a way to an accepting one.

#include <bitset>
#include <cstdint>
#include <string_view>
#include <vector>

#include "constrain/grammar.hpp"

namespace lf::constrain {

/// One parse: grammar element indices, the next one to match last.
using parse_stack = std::vector<std::uint32_t>;

/// The parses alive after some input, sorted and unique. Empty: the input left the language.
struct match_state {
  std::vector<parse_stack> stacks;
  bool dead() const noexcept { return stacks.empty(); }
  /// The input so far is a complete match.
  bool accepting() const noexcept;
  bool operator==(const match_state& o) const noexcept { return stacks == o.stacks; }
};

/// The matcher's bounds (see the header comment).
struct match_limits {
  std::size_t max_depth = 2048;
  std::size_t max_stacks = 1024;
};

/// The state before any input.
match_state initial_state(const grammar& g, const match_limits& lim = {});

/// The state after `byte`; dead() when no parse accepts it.
match_state advance(const grammar& g, const match_state& s, std::uint8_t byte, const match_limits& lim = {});

/// The bytes some parse of `s` accepts next.
std::bitset<256> next_bytes(const grammar& g, const match_state& s);

/// The fewest bytes that take `s` to an accepting state (0 when accepting); for tests and the
/// dead-end guard. Precondition: !s.dead().
std::uint32_t distance_to_accept(const grammar& g, const match_state& s);

/// Whether `text` as a whole is in the grammar's language.
bool matches(const grammar& g, std::string_view text, const match_limits& lim = {});

/// A hashable flat form of a state (stacks separated by a marker), for caches.
std::vector<std::uint32_t> state_key(const match_state& s);

} // namespace lf::constrain
