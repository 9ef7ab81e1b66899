#include "text/bpe.hpp"

#include <algorithm>

namespace lf::text {

namespace {

/// Both directions of GPT-2's byte alphabet. The highest character used is U+0143.
struct byte_alphabet {
  std::array<char32_t, 256> to_char{};
  std::array<std::int16_t, 0x144> to_byte{};
};

constexpr byte_alphabet make_byte_alphabet() {
  byte_alphabet a{};
  for (std::size_t i = 0; i < a.to_byte.size(); ++i)
    a.to_byte[i] = -1;
  char32_t next_free = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const char32_t c = printable ? static_cast<char32_t>(b) : next_free++;
    a.to_char[b] = c;
    a.to_byte[c] = static_cast<std::int16_t>(b);
  }
  return a;
}

constexpr byte_alphabet alphabet = make_byte_alphabet();

static_assert(alphabet.to_char[' '] == 0x120, "space must map to U+0120 as in GPT-2");

} // namespace

char32_t byte_to_unicode(std::uint8_t b) noexcept {
  return alphabet.to_char[b];
}

int unicode_to_byte(char32_t cp) noexcept {
  return cp < alphabet.to_byte.size() ? alphabet.to_byte[cp] : -1;
}

bpe_merges::bpe_merges(const std::array<std::int32_t, 256>& byte_ids) : byte_ids_(byte_ids) {
  // GPT-2 has 50000 merges; reserving avoids rehashing while loading.
  pairs_.reserve(65536);
}

bool bpe_merges::add(std::int32_t left, std::int32_t right, std::int32_t merged) {
  const auto rank = static_cast<std::int32_t>(pairs_.size());
  return pairs_.emplace(key(left, right), rule{rank, merged}).second;
}

void bpe_merges::encode(std::string_view piece, std::vector<std::int32_t>& out) const {
  const std::size_t n = piece.size();
  if (n == 0)
    return;
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  // Symbols form a doubly linked list indexed by the byte offset they start at; a merge keeps the
  // left symbol and unlinks the right one, marking it dead with id -1.
  struct symbol {
    std::int32_t id;
    std::int32_t prev;
    std::int32_t next;
  };
  // A possible merge of the symbol at `left` with its right neighbour. Entries go stale when
  // either symbol changes; they are checked on pop rather than removed (a symbol's id determines
  // its byte span, so matching ids mean the very same pair is still there).
  struct candidate {
    std::int32_t rank;
    std::int32_t left;
    std::int32_t left_id;
    std::int32_t right_id;
    std::int32_t merged;
  };
  // Min-heap on (rank, position): the lowest-ranked pair first, equal pairs left to right, which
  // is exactly "merge every occurrence of the best pair, left to right" of the reference BPE.
  auto later = [](const candidate& a, const candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  const auto last = static_cast<std::int32_t>(n) - 1;
  std::vector<symbol> syms(n);
  for (std::int32_t i = 0; i <= last; ++i)
    syms[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i == last ? -1 : i + 1};
  std::vector<candidate> heap;
  heap.reserve(n);
  auto consider = [&](std::int32_t left) {
    const std::int32_t right = syms[left].next;
    if (right < 0)
      return false;
    const rule* r = find(syms[left].id, syms[right].id);
    if (r == nullptr)
      return false;
    heap.push_back({r->rank, left, syms[left].id, syms[right].id, r->merged});
    return true;
  };
  for (std::int32_t i = 0; i < last; ++i)
    consider(i);
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const candidate c = heap.back();
    heap.pop_back();
    symbol& left = syms[c.left];
    if (left.id != c.left_id || left.next < 0 || syms[left.next].id != c.right_id)
      continue;
    symbol& right = syms[left.next];
    left.id = c.merged;
    left.next = right.next;
    if (right.next >= 0)
      syms[right.next].prev = c.left;
    right.id = -1;
    if (left.prev >= 0 && consider(left.prev))
      std::push_heap(heap.begin(), heap.end(), later);
    if (consider(c.left))
      std::push_heap(heap.begin(), heap.end(), later);
  }
  for (std::int32_t i = 0; i >= 0; i = syms[i].next)
    out.push_back(syms[i].id);
}

} // namespace lf::text
