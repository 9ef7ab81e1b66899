// The serving loop's speculation runner (worker/speculation_runner): a request's choice as a mode,
// n-gram proposals within each row's room and its own length, the adaptive length after
// verification, the automatic rule's fallback before it has measured steps, and the counters.
// No engine: n-gram lookup only.
#include <catch2/catch.hpp>

#include "worker/speculation_runner.hpp"

using namespace lf;
using namespace lf::worker;
using cache::seq_id;

namespace speculation_runner_test {

/// A loop of period 4 the n-gram lookup continues: 1 2 3 4 1 2 3 4 1 2.
const std::vector<std::int32_t> looping{1, 2, 3, 4, 1, 2, 3, 4, 1, 2};

speculation_settings policy(speculation_mode m, std::uint32_t tokens = 4, std::uint32_t auto_rows = 8) {
  speculation_settings s;
  s.mode = m;
  s.tokens = tokens;
  s.auto_rows = auto_rows;
  return s;
}

const auto keep_all = [](seq_id) { return true; };

} // namespace speculation_runner_test

using namespace speculation_runner_test;

TEST_CASE("speculation runner: a request's choice is a mode, the worker's policy when it leaves it", "[speculation_runner]") {
  speculation_runner r(policy(speculation_mode::automatic), nullptr);
  CHECK(r.mode_of(-1) == speculation_mode::automatic);
  CHECK(r.mode_of(0) == speculation_mode::off);
  CHECK(r.mode_of(-2) == speculation_mode::on);
  CHECK(r.mode_of(3) == speculation_mode::on);
  CHECK(r.draft_model() == nullptr);
}

TEST_CASE("speculation runner: n-gram proposals within the row's room and its own length", "[speculation_runner]") {
  speculation_runner r(policy(speculation_mode::on, 4), nullptr);
  r.add(seq_id{1}, -1);  // the worker's 4
  r.add(seq_id{2}, 2);   // its own 2
  r.add(seq_id{3}, -1);
  r.add(seq_id{4}, -1);
  r.propose({{seq_id{1}, speculation_mode::on, 100, &looping}, {seq_id{2}, speculation_mode::on, 100, &looping},
             {seq_id{3}, speculation_mode::on, 1, &looping}, {seq_id{4}, speculation_mode::on, 0, &looping}},
            4, 4, keep_all);
  const auto four = propose_ngram(looping, 4);
  REQUIRE(four.size() == 4);
  CHECK(r.draft(seq_id{1}) == four);
  CHECK(r.draft(seq_id{2}) == propose_ngram(looping, 2));
  CHECK(r.draft(seq_id{3}) == propose_ngram(looping, 1));  // room for one more token
  CHECK(r.draft(seq_id{4}).empty());                        // none: at its max_tokens or credits
  CHECK(r.draft(seq_id{9}).empty());                        // not tracked
  const auto st = r.end_step();
  CHECK(st.rows == 0);  // nothing verified
  CHECK(r.draft(seq_id{1}).empty());  // proposals last one step
}

TEST_CASE("speculation runner: the length shrinks on a rejection and grows back on full acceptance", "[speculation_runner]") {
  speculation_runner r(policy(speculation_mode::on, 4), nullptr);
  r.add(seq_id{1}, -1);
  const std::vector<spec_candidate> row{{seq_id{1}, speculation_mode::on, 100, &looping}};
  r.propose(row, 1, 1, keep_all);
  REQUIRE(r.draft(seq_id{1}).size() == 4);
  r.verified(seq_id{1}, 4, 1);
  auto st = r.end_step();
  CHECK(st.proposed == 4);
  CHECK(st.accepted == 1);
  CHECK(st.rows == 1);
  CHECK(st.emitted == 2);
  r.propose(row, 1, 1, keep_all);
  CHECK(r.draft(seq_id{1}).size() == 3);
  r.verified(seq_id{1}, 3, 3);
  CHECK(r.end_step().proposed == 3);  // the counts are per end_step
  r.propose(row, 1, 1, keep_all);
  CHECK(r.draft(seq_id{1}).size() == 4);  // + 2, capped at the limit
  CHECK(r.end_step().proposed == 0);
  r.forget(seq_id{1});
  r.propose({}, 0, 0, keep_all);
  CHECK(r.draft(seq_id{1}).empty());
}

TEST_CASE("speculation runner: before any measurement the automatic rule speculates up to auto_rows rows", "[speculation_runner]") {
  speculation_runner r(policy(speculation_mode::automatic, 4, 2), nullptr);
  for (std::uint64_t s = 1; s <= 3; ++s)
    r.add(seq_id{s}, -1);
  const spec_candidate a{seq_id{1}, speculation_mode::automatic, 100, &looping};
  const spec_candidate b{seq_id{2}, speculation_mode::automatic, 100, &looping};
  const spec_candidate on{seq_id{3}, speculation_mode::on, 100, &looping};
  r.propose({a, b, on}, 2, 2, keep_all);
  CHECK(r.draft(seq_id{1}).size() == 4);
  CHECK(r.draft(seq_id{2}).size() == 4);
  r.end_step();
  r.propose({a, b, on}, 3, 3, keep_all);  // three decoding rows: over auto_rows
  CHECK(r.draft(seq_id{1}).empty());
  CHECK(r.draft(seq_id{2}).empty());
  CHECK(r.draft(seq_id{3}).size() == 4);  // a row that asked for it is not the rule's to drop
}
