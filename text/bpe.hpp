#pragma once
/// The byte-level half of GPT-2's tokenizer: the byte <-> character alphabet that vocab.json and
/// merges.txt are written in, and byte-pair merging of one pre-token into token ids.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lf::text {

/// GPT-2's `bytes_to_unicode`: the printable character that stands for byte `b` in vocab.json
/// and merges.txt. Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls,
/// space, DEL, NBSP, soft hyphen) map to U+0100.. in byte order, so that space is U+0120 'Ġ'.
char32_t byte_to_unicode(std::uint8_t b) noexcept;

/// Inverse of `byte_to_unicode`: the byte `cp` stands for, or -1 if `cp` is not one of the 256
/// characters of the alphabet.
int unicode_to_byte(char32_t cp) noexcept;

/// BPE merge rules over token ids and the merging algorithm. Immutable once built, so one
/// instance can serve any number of threads.
class bpe_merges {
public:
  /// Creates rules whose starting symbols are `byte_ids[b]`, the token id of each single byte.
  explicit bpe_merges(const std::array<std::int32_t, 256>& byte_ids);

  /// Adds the rule `left right -> merged` with the next rank (ranks follow the order of the
  /// calls, lower merges first). Returns false and keeps the earlier rank if the pair already
  /// has a rule.
  bool add(std::int32_t left, std::int32_t right, std::int32_t merged);

  /// Number of rules.
  std::size_t size() const noexcept {
    return pairs_.size();
  }

  /// Appends the token ids of `piece` (raw bytes, one pre-token) to `out`: starting from single
  /// bytes, repeatedly merges the adjacent pair with the lowest rank, all its occurrences left to
  /// right, until no adjacent pair has a rule. Runs in O(n log n) for a piece of n bytes.
  void encode(std::string_view piece, std::vector<std::int32_t>& out) const;

private:
  struct rule {
    std::int32_t rank;
    std::int32_t merged;
  };

  static constexpr std::uint64_t key(std::int32_t left, std::int32_t right) noexcept {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32)
           | static_cast<std::uint32_t>(right);
  }

  const rule* find(std::int32_t left, std::int32_t right) const noexcept {
    auto it = pairs_.find(key(left, right));
    return it == pairs_.end() ? nullptr : &it->second;
  }

  std::array<std::int32_t, 256> byte_ids_;
  std::unordered_map<std::uint64_t, rule> pairs_;
};

} // namespace lf::text
