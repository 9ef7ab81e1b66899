// Credit-based streaming in the serving loop (submit's allowance, credit()): a request streams
// up to its allowance and pauses, holding no batch slot and no blocks, while the others go on;
// credits resume it where it stopped, with the text an unpaused run gives; a paused request can
// still be cancelled or time out.
#include <catch2/catch.hpp>

#include "tests/unit/worker/loop_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using lf::test::collector;
using lf::test::fake_engine;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_serving_loop_credit {

namespace {

const lf::text::tokenizer& tok() { return lf::test::repo_tokenizer(); }

serving_config config() {
  serving_config c;
  c.num_blocks = 64;
  c.block_size = 4;
  c.sched.max_seqs = 2;  // two slots: a paused request must give its slot up for the third
  c.sched.max_batched_tokens = 32;
  return c;
}

lf::request_draft req(std::int32_t first, int max_tokens) {
  lf::request_draft r;
  r.prompt = {first, first + 1, first + 2, first + 3, first + 4};
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  return r;
}

/// Waits (bounded) for `pred` on the loop's load report.
template <class Pred>
bool wait_load(serving_loop& loop, Pred pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred(loop.load())) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

} // namespace

TEST_CASE("a request pauses at its allowance, gives its slot up and resumes exactly on credit",
          "[serving_loop][credit]") {
  fake_engine eng(50257, std::chrono::microseconds(200));
  collector ref, col;
  {
    serving_loop plain(eng, tok(), config());
    lf::test::submit(plain, req(10, 20), ref.make(0));
    REQUIRE(ref.wait_for(1));
  }
  serving_loop loop(eng, tok(), config());
  const auto id = loop.submit(lf::test::validated(req(10, 20)), std::nullopt, col.make(0), {}, {}, 6);
  REQUIRE(wait_load(loop, [](const load_report& l) { return l.paused == 1; }));
  CHECK(col.tokens(0) == 6);
  CHECK(loop.load().running == 0);
  CHECK(loop.load().free_blocks == loop.load().total_blocks);  // its blocks are only cached (evictable)
  // Two others run to the end meanwhile, one in the paused request's slot.
  lf::test::submit(loop, req(500, 8), col.make(1));
  lf::test::submit(loop, req(900, 8), col.make(2));
  REQUIRE(col.wait_for(2));
  CHECK(col.tokens(0) == 6);
  REQUIRE(loop.credit(id, 13));
  REQUIRE(wait_load(loop, [](const load_report& l) { return l.paused == 1 && l.pauses == 2; }));
  CHECK(col.tokens(0) == 13);
  REQUIRE(loop.credit(id, 100));
  REQUIRE(col.wait_for(3));
  const auto r = col.result(0);
  CHECK(r.outcome == request_outcome::finished);
  CHECK(r.tokens == ref.result(0).tokens);
  CHECK(col.streamed(0) == ref.streamed(0));
  CHECK(col.terminals(0) == 1);
  CHECK(loop.load().paused == 0);
  CHECK_FALSE(loop.credit(request_id{999}, 1));
}

TEST_CASE("a paused request can be cancelled or time out, and no allowance means no pause",
          "[serving_loop][credit]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), config());
  const auto a = loop.submit(lf::test::validated(req(10, 30)), std::nullopt, col.make(0), {}, {}, 3);
  loop.submit(lf::test::validated(req(20, 30)), std::chrono::steady_clock::now() + std::chrono::milliseconds(200),
              col.make(1), {}, {}, 3);
  lf::test::submit(loop, req(30, 12), col.make(2));  // allowance 0: unlimited
  REQUIRE(wait_load(loop, [](const load_report& l) { return l.paused == 2; }));
  REQUIRE(col.wait_for(1));
  CHECK(col.result(2).outcome == request_outcome::finished);
  CHECK(col.tokens(2) == 12);
  loop.cancel(a);
  REQUIRE(col.wait_for(3));
  CHECK(col.result(0).error == lf::serve_errc::cancelled);
  CHECK(col.result(1).error == lf::serve_errc::timeout);
  CHECK(col.tokens(0) == 3);
  CHECK(col.tokens(1) == 3);
  loop.stop(true);
  CHECK(loop.load().paused == 0);
  CHECK(loop.load().free_blocks == loop.load().total_blocks);
}

} // namespace test_serving_loop_credit
