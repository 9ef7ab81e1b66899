// The draft model's proposer over a fake draft engine whose next token is a hash of every token
// it reads back from its K/V slots: proposals equal the greedy continuation only when the
// proposer's bookkeeping (block tables, computed positions, rollback after a rejection) is right.
// Also: the pure helpers, a full pool (no proposal, no error, served again once blocks are
// freed), the context bound and a failing forward.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "worker/draft_proposer.hpp"

using namespace lf::worker;
using lf::cache::seq_id;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_draft_proposer {

namespace {

constexpr std::size_t vocab = 97;
constexpr std::uint32_t block = 4;

/// The fake model's greedy token after `t`.
std::int32_t next_of(const std::vector<std::int32_t>& t) {
  std::uint64_t h = 1469598103934665603ull;
  for (auto x : t)
    h = (h ^ static_cast<std::uint32_t>(x)) * 1099511628211ull;
  return static_cast<std::int32_t>((h >> 7) % vocab);
}

/// The greedy continuation of `t` by k tokens.
std::vector<std::int32_t> reference(std::vector<std::int32_t> t, std::uint32_t k) {
  std::vector<std::int32_t> out;
  for (std::uint32_t i = 0; i < k; ++i) {
    out.push_back(next_of(t));
    t.push_back(out.back());
  }
  return out;
}

/// Writes each position's token at its slot and answers from what it reads back.
class slot_engine final : public lf::engine::step_engine {
public:
  explicit slot_engine(std::uint32_t blocks) : slots_(std::size_t{blocks} * block, -1) {}
  void step(const std::vector<lf::engine::engine_chunk>& chunks) override {
    ++steps;
    if (fail)
      throw std::runtime_error("the draft failed");
    rows_.clear();
    for (const auto& c : chunks) {
      REQUIRE(c.table != nullptr);
      REQUIRE(static_cast<std::int64_t>(c.table->size() * block) >= c.start + c.count);
      REQUIRE(c.adapter == lf::cache::base_model);
      tokens += static_cast<std::uint64_t>(c.count);
      auto slot = [&](std::int64_t p) {
        return (*c.table)[static_cast<std::size_t>(p / block)].value() * block + static_cast<std::size_t>(p % block);
      };
      for (std::int64_t k = 0; k < c.count; ++k)
        slots_[slot(c.start + k)] = c.tokens[k];
      std::vector<std::int32_t> seen;
      for (std::int64_t p = 0; p < c.start + c.count; ++p)
        seen.push_back(slots_[slot(p)]);
      std::vector<float> row(vocab, 0.0f);
      row[static_cast<std::size_t>(next_of(seen))] = 1.0f;
      rows_.push_back(std::move(row));
    }
  }
  float* logits(std::size_t i) override { return rows_.at(i).data(); }
  std::size_t vocab_size() const override { return vocab; }

  bool fail = false;
  std::uint64_t steps = 0, tokens = 0;

private:
  std::vector<std::int32_t> slots_;
  std::vector<std::vector<float>> rows_;
};

std::vector<std::int32_t> prompt(int n, int salt) {
  std::vector<std::int32_t> t;
  for (int i = 0; i < n; ++i)
    t.push_back((i * 31 + salt * 7) % static_cast<int>(vocab));
  return t;
}

} // namespace

TEST_CASE("draft bookkeeping helpers", "[draft]") {
  CHECK(draft_valid_prefix({}, {1, 2, 3}) == 0);
  CHECK(draft_valid_prefix({1, 2, 3}, {1, 2, 3}) == 2);  // the last token is always recomputed
  CHECK(draft_valid_prefix({1, 2, 3, 4, 5}, {1, 2, 3}) == 2);
  CHECK(draft_valid_prefix({1, 2, 9, 4}, {1, 2, 3, 4, 5}) == 2);  // a rejected proposal
  CHECK(draft_valid_prefix({1, 2, 3, 4}, {1, 2, 3, 4, 7, 8}) == 4);
  CHECK(draft_valid_prefix({1}, {}) == 0);
  CHECK(draft_room(0, 16, 4) == 0);
  CHECK(draft_room(10, 16, 4) == 4);
  CHECK(draft_room(15, 16, 4) == 2);  // positions 14 and 15
  CHECK(draft_room(16, 16, 4) == 1);  // position 15 only: its logits give one token
  CHECK(draft_room(17, 16, 4) == 0);
  const float row[] = {0.5f, 2.0f, -1.0f, 2.0f};
  CHECK(greedy_token(row, 4) == 1);  // the first of equal maxima
  const float nan_first[] = {NAN, -3.0f, -2.0f};
  CHECK(greedy_token(nan_first, 3) == 2);
}

TEST_CASE("draft proposals are the draft's greedy continuation after catch-up, acceptance and rejection",
          "[draft]") {
  slot_engine eng(64);
  draft_proposer d(eng, 64, block, 256);
  auto a = prompt(13, 1), b = prompt(6, 2);
  auto got = d.propose({{seq_id{1}, &a, 4}, {seq_id{2}, &b, 3}});
  CHECK(got[0] == reference(a, 4));
  CHECK(got[1] == reference(b, 3));
  CHECK(eng.steps == 4);  // one catch-up, then 3 single-token steps (batched over both rows)
  CHECK(d.computed(seq_id{1}) == a.size() + 3);
  // Row 1: two proposals accepted, then the target's own token (different from the third).
  auto p = got[0];
  a.insert(a.end(), p.begin(), p.begin() + 2);
  a.push_back((p[2] + 1) % static_cast<int>(vocab));
  // Row 2: all accepted plus the target's token.
  b.insert(b.end(), got[1].begin(), got[1].end());
  b.push_back(5);
  const auto before = eng.tokens;
  got = d.propose({{seq_id{1}, &a, 2}, {seq_id{2}, &b, 5}});
  CHECK(got[0] == reference(a, 2));
  CHECK(got[1] == reference(b, 5));
  // Catch-up recomputed only what it had not seen: row 1 its last token (the rejected slot is
  // overwritten), row 2 its last proposal and the target's token; then the proposals fed back.
  CHECK(eng.tokens - before == (1 + 1) + (2 + 4));
  // Nothing new since: the last token is recomputed and the same proposals come back.
  CHECK(d.propose({{seq_id{1}, &a, 2}})[0] == reference(a, 2));
  d.forget(seq_id{1});
  d.forget(seq_id{2});
  d.forget(seq_id{3});  // unknown: nothing happens
  CHECK(d.sequences() == 0);
  CHECK(d.free_blocks() == 64);
}

TEST_CASE("a full draft pool gives no proposal and no error, until blocks are freed", "[draft]") {
  slot_engine eng(6);
  draft_proposer d(eng, 6, block, 256);
  auto a = prompt(14, 1), b = prompt(10, 2);  // a: 4 blocks with its proposals; b needs 3
  auto got = d.propose({{seq_id{1}, &a, 3}, {seq_id{2}, &b, 3}});
  CHECK(got[0] == reference(a, 3));
  CHECK(got[1].empty());
  CHECK(d.counters().refused == 1);
  CHECK(d.sequences() == 1);
  // Growing past the pool: fewer proposals, from the slots it holds.
  auto longer = a;
  longer.push_back(3);
  got = d.propose({{seq_id{1}, &longer, 16}});
  CHECK(got[0] == reference(longer, static_cast<std::uint32_t>(6 * block - longer.size() + 1)));
  d.retain([](seq_id id) { return id != seq_id{1}; });
  CHECK(d.free_blocks() == 6);
  got = d.propose({{seq_id{2}, &b, 3}});
  CHECK(got[0] == reference(b, 3));
}

TEST_CASE("the draft proposes only within its context", "[draft]") {
  slot_engine eng(64);
  draft_proposer d(eng, 64, block, 16);
  auto a = prompt(15, 1), b = prompt(17, 2);
  auto got = d.propose({{seq_id{1}, &a, 5}, {seq_id{2}, &b, 5}});
  CHECK(got[0] == reference(a, 2));
  CHECK(got[1].empty());
  CHECK(d.sequences() == 1);
}

TEST_CASE("a failing draft forward gives no proposals and starts every sequence over", "[draft]") {
  slot_engine eng(64);
  draft_proposer d(eng, 64, block, 256);
  auto a = prompt(9, 1);
  REQUIRE(d.propose({{seq_id{1}, &a, 2}})[0].size() == 2);
  eng.fail = true;
  auto got = d.propose({{seq_id{1}, &a, 2}});
  CHECK(got[0].empty());
  CHECK(d.sequences() == 0);
  CHECK(d.free_blocks() == 64);
  eng.fail = false;
  CHECK(d.propose({{seq_id{1}, &a, 2}})[0] == reference(a, 2));
}

} // namespace test_draft_proposer
