// The constraint runner alone (no serving loop): a guide starts at its constraint's start, moves
// only past allowed tokens, knows when the output is complete, and samples only allowed tokens,
// the end of text only where the output is complete; a constraint that does not compile is a
// message, not an exception.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/unit/worker/loop_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/constraint_runner.hpp"
#include "worker/engine/sampling/sampler.hpp"

using namespace lf::worker;

namespace test_constraint_runner {

namespace {

const lf::text::tokenizer& tok() { return lf::test::repo_tokenizer(); }

/// Greedy decoding under `g` from logits that prefer `favourite` (any token, allowed or not),
/// until the end of text, completion or `most` tokens; the text.
std::string greedy_text(output_guide& g, std::int32_t favourite, int most, bool& completed) {
  lf::sampling_params p;  // temperature 0: greedy
  lf::engine::sampler pick(p, 1);
  std::vector<float> logits(tok().vocab_size());
  std::vector<std::int32_t> context;
  std::string text;
  completed = false;
  for (int i = 0; i < most; ++i) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    logits[static_cast<std::size_t>(favourite)] = 10.0f;
    const auto t = g.sample(pick, p, logits.data(), logits.size(), context, context.size());
    REQUIRE(t >= 0);
    if (t == tok().eos_id())
      break;
    REQUIRE(g.step(t));
    context.push_back(t);
    text += tok().decode_token(t);
    if (g.complete()) {
      completed = true;
      break;
    }
  }
  return text;
}

} // namespace

TEST_CASE("a choice guide samples only its choices and completes at the end of one", "[constrain_runner]") {
  constraint_runner runner(tok(), tok().eos_id(), false);
  auto started = runner.start({"choice", R"(["yes", "no"])"});
  REQUIRE(std::holds_alternative<output_guide>(started));
  auto& g = std::get<output_guide>(started);
  CHECK_FALSE(g.complete());
  bool completed = false;
  // The favourite token (" the") is never allowed: the argmax among the allowed ones wins.
  const auto text = greedy_text(g, tok().encode(" the").at(0), 8, completed);
  CHECK((text == "yes" || text == "no"));
  CHECK(completed);
}

TEST_CASE("a guide refuses a token its constraint does not allow and stays where it was", "[constrain_runner]") {
  constraint_runner runner(tok(), tok().eos_id(), true);  // the trie built in the background
  auto started = runner.start({"regex", "[0-9]{2}"});
  REQUIRE(std::holds_alternative<output_guide>(started));
  auto& g = std::get<output_guide>(started);
  CHECK_FALSE(g.step(tok().encode("abc").at(0)));
  const auto digit = tok().encode("7").at(0);
  REQUIRE(g.step(digit));
  CHECK_FALSE(g.complete());
  REQUIRE(g.step(digit));
  CHECK(g.complete());
  CHECK_FALSE(g.step(digit));  // a third digit: nothing may follow
}

TEST_CASE("a constraint that does not compile is a message naming the constraint", "[constrain_runner]") {
  constraint_runner runner(tok(), tok().eos_id(), false);
  auto started = runner.start({"regex", "a("});
  REQUIRE(std::holds_alternative<std::string>(started));
  CHECK(std::get<std::string>(started).rfind("constraint: ", 0) == 0);
  // The runner goes on: a good constraint after a bad one compiles.
  CHECK(std::holds_alternative<output_guide>(runner.start({"choice", R"(["a"])"})));
}

} // namespace test_constraint_runner
