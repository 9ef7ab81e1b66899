// The pure parts of a step (worker/step_driver): the engine's chunks from a plan, one row's draws
// with speculative verification, and what the scheduler is told back. No engine, no loop.
#include <catch2/catch.hpp>

#include <map>

#include "worker/step_driver.hpp"

using namespace lf;
using namespace lf::worker;

namespace step_driver_test {

/// Two sequences' books, as the serving loop's scheduler, speculation runner and block manager
/// would hold them.
struct books {
  std::map<std::uint64_t, std::vector<std::int32_t>> tokens{{1, {10, 11, 12, 13}}, {2, {20, 21}}};
  std::map<std::uint64_t, std::vector<std::int32_t>> proposals{{1, {14, 15, 16}}, {2, {}}};
  std::map<std::uint64_t, std::vector<cache::block_id>> tables{{1, {cache::block_id{3}}}, {2, {cache::block_id{7}}}};
  chunk_source source() {
    return {[this](cache::seq_id id) -> const std::vector<std::int32_t>& { return tokens.at(id.value()); },
            [this](cache::seq_id id) -> const std::vector<std::int32_t>& { return proposals.at(id.value()); },
            [this](cache::seq_id id) -> const std::vector<cache::block_id>& { return tables.at(id.value()); },
            [](cache::seq_id id) { return cache::adapter_id{static_cast<std::uint32_t>(id.value() * 100)}; }};
  }
};

} // namespace step_driver_test

using namespace step_driver_test;

TEST_CASE("assemble: a prefill chunk reads the tokens at its start, a speculating one its last token then the proposals", "[worker][step_driver]") {
  books b;
  step_plan plan;
  plan.chunks.push_back({cache::seq_id{1}, 3, 3, true, 2});   // decode of token 13 with proposals 14, 15
  plan.chunks.push_back({cache::seq_id{2}, 0, 2, true, 0});   // prefill of the whole prompt
  auto in = assemble(plan, b.source());
  REQUIRE(in.chunks.size() == 2);
  const auto& spec = in.chunks[0];
  CHECK(std::vector<std::int32_t>(spec.tokens, spec.tokens + spec.count) == std::vector<std::int32_t>{13, 14, 15});
  CHECK(spec.start == 3);
  CHECK(spec.logits_count == 3);
  CHECK(spec.want_logits);
  CHECK(spec.table == &b.tables.at(1));
  CHECK(spec.adapter == cache::adapter_id{100});
  const auto& pre = in.chunks[1];
  CHECK(pre.tokens == b.tokens.at(2).data());
  CHECK(pre.count == 2);
  CHECK(pre.logits_count == 1);
  CHECK(pre.adapter == cache::adapter_id{200});
  // Moved, the chunks still read the same proposals (they point into `verify`'s own buffers).
  auto moved = std::move(in);
  CHECK(std::vector<std::int32_t>(moved.chunks[0].tokens, moved.chunks[0].tokens + 3) == std::vector<std::int32_t>{13, 14, 15});
}

TEST_CASE("draw_row: proposals are accepted while the draws agree, then the first differing draw ends the row", "[worker][step_driver]") {
  const std::vector<std::int32_t> context{1, 2}, proposal{5, 6, 7};
  std::vector<std::vector<std::int32_t>> seen;
  auto drawing = [&](std::vector<std::int32_t> answers) {
    seen.clear();
    return [&seen, answers](std::uint32_t k, const std::vector<std::int32_t>& ctx) {
      seen.push_back(ctx);
      return answers.at(k);
    };
  };
  // All three accepted: a fourth draw follows the last proposal.
  auto r = draw_row(3, context, proposal, drawing({5, 6, 7, 9}));
  CHECK(r.tokens == std::vector<std::int32_t>{5, 6, 7, 9});
  CHECK_FALSE(r.dead_end);
  CHECK(seen == std::vector<std::vector<std::int32_t>>{{1, 2}, {1, 2, 5}, {1, 2, 5, 6}, {1, 2, 5, 6, 7}});
  // The second draw differs: one accepted, then the draw that differs, nothing after it.
  r = draw_row(3, context, proposal, drawing({5, 8, 7, 9}));
  CHECK(r.tokens == std::vector<std::int32_t>{5, 8});
  CHECK(seen.size() == 2);
  // No proposals: one draw.
  r = draw_row(0, context, {}, drawing({4}));
  CHECK(r.tokens == std::vector<std::int32_t>{4});
  // A dead end keeps the draws before it.
  r = draw_row(3, context, proposal, drawing({5, -1}));
  CHECK(r.dead_end);
  CHECK(r.tokens == std::vector<std::int32_t>{5});
}

TEST_CASE("split_emitted: each chunk's last token, and its accepted proposals only when some chunk speculated", "[worker][step_driver]") {
  step_plan plan;
  plan.chunks.push_back({cache::seq_id{1}, 3, 3, true, 2});
  plan.chunks.push_back({cache::seq_id{2}, 0, 2, true, 0});
  plan.chunks.push_back({cache::seq_id{3}, 0, 8, false, 0});  // a prefill chunk that does not sample
  auto d = split_emitted(plan, {{14, 15, 9}, {22}, {}});
  CHECK(d.sampled == std::vector<std::optional<std::int32_t>>{9, 22, std::nullopt});
  CHECK(d.accepted == std::vector<std::vector<std::int32_t>>{{14, 15}, {}, {}});
  plan.chunks[0].draft = 0;
  d = split_emitted(plan, {{9}, {22}, {}});
  CHECK(d.accepted.empty());
}
