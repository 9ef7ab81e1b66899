// Structured output in the serving loop over the fake engine: constrained requests (greedy and
// sampled) produce outputs of their constraint, end with "stop" when complete and "length" when
// cut (a valid prefix), resume exactly from any number of tokens, and a constraint that does not
// compile or a resumed token outside it ends the request with invalid_request, never the worker.
#include <catch2/catch.hpp>

#include "constrain/constraint.hpp"
#include "constrain/matcher.hpp"
#include "tests/unit/worker/loop_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;
using lf::test::collector;
using lf::test::fake_engine;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_serving_loop_constrain {

namespace {

const lf::text::tokenizer& tok() { return lf::test::repo_tokenizer(); }

serving_config config() {
  serving_config c;
  c.num_blocks = 128;
  c.block_size = 4;
  c.sched.max_seqs = 8;
  c.sched.max_batched_tokens = 64;
  c.eos_id = tok().eos_id();
  return c;
}

lf::request_draft constrained(std::string kind, std::string text, int max_tokens, float temperature = 0,
                              std::uint64_t seed = 1) {
  auto d = lf::test::req({464, 2068, 7586, 21831}, max_tokens);
  d.params.constraint = lf::output_constraint{std::move(kind), std::move(text)};
  d.params.temperature = temperature;
  if (temperature > 0)
    d.params.seed = seed;
  return d;
}

/// Whether `text` is a prefix of some output of `c` (complete: an output of it).
bool fits(const lf::output_constraint& c, const std::string& text, bool complete) {
  const auto g = lf::constrain::compile_constraint(c);
  auto st = lf::constrain::initial_state(g);
  for (const char ch : text) {
    st = lf::constrain::advance(g, st, static_cast<std::uint8_t>(ch));
    if (st.dead())
      return false;
  }
  return !complete || st.accepting();
}

const std::vector<std::pair<std::string, std::string>> constraints = {
  {"choice", R"(["positive", "negative", "neutral"])"},
  {"regex", "[a-c]{3}-\\d{2}(x|yz)"},
  {"grammar", "root ::= \"(\" [0-9]{1,3} (\",\" [0-9]{1,3}){0,2} \")\""},
  {"json_schema", R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"enum":[1,2,3]}},)"
                  R"("required":["ok","n"],"additionalProperties":false})"},
  {"json_object", ""},
};

} // namespace

TEST_CASE("constrained requests follow their constraint, greedy and sampled", "[serving_loop][constrain]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), config());
  int key = 0;
  for (const auto& [kind, text] : constraints)
    for (const float temp : {0.0f, 0.8f, 1.5f}) {
      lf::test::submit(loop, constrained(kind, text, 40, temp, 7 + static_cast<std::uint64_t>(key)), col.make(key));
      ++key;
    }
  REQUIRE(col.wait_for(static_cast<std::size_t>(key)));
  loop.stop(true);
  int stopped = 0;
  for (int k = 0; k < key; ++k) {
    const auto& [kind, text] = constraints[static_cast<std::size_t>(k / 3)];
    const auto r = col.result(k);
    INFO(kind << " " << text << " -> " << r.text << " (" << r.finish_reason << ")");
    REQUIRE(r.outcome == request_outcome::finished);
    CHECK(col.terminals(k) == 1);
    CHECK((r.finish_reason == "stop" || r.finish_reason == "eos" || r.finish_reason == "length"));
    const bool complete = r.finish_reason != "length";
    stopped += complete;
    CHECK(fits(lf::output_constraint{kind, text}, r.text, complete));
    if (kind != "json_object")  // the bounded ones always finish within 40 tokens
      CHECK(complete);
  }
  CHECK(stopped >= 12);
}

TEST_CASE("a loop that builds the vocabulary trie at start writes what the lazy one writes", "[serving_loop][constrain]") {
  // prebuild_vocab_trie (what workers use): the trie is built on its own thread when the loop
  // starts; requests submitted at once wait for it, later ones find it ready.
  std::vector<std::string> texts[2];
  for (const bool prebuild : {false, true}) {
    fake_engine eng;
    collector col;
    auto cfg = config();
    cfg.prebuild_vocab_trie = prebuild;
    serving_loop loop(eng, tok(), cfg);
    int key = 0;
    for (const auto& [kind, text] : constraints) {
      lf::test::submit(loop, constrained(kind, text, 30, 0.8f, 11 + static_cast<std::uint64_t>(key)), col.make(key));
      ++key;
    }
    REQUIRE(col.wait_for(static_cast<std::size_t>(key)));
    loop.stop(true);
    for (int k = 0; k < key; ++k) {
      REQUIRE(col.result(k).outcome == request_outcome::finished);
      texts[prebuild].push_back(col.result(k).text);
    }
  }
  CHECK(texts[0] == texts[1]);
  // A loop that never sees a constrained request still stops cleanly with its trie built.
  fake_engine eng;
  auto cfg = config();
  cfg.prebuild_vocab_trie = true;
  serving_loop idle(eng, tok(), cfg);
  idle.stop(true);
}

TEST_CASE("a constrained request resumes exactly from any number of its tokens", "[serving_loop][constrain]") {
  fake_engine eng;
  collector first;
  serving_loop loop(eng, tok(), config());
  const auto d = constrained("regex", "[a-z ]{4,30}\\.", 24, 1.0f, 99);
  lf::test::submit(loop, d, first.make(0));
  REQUIRE(first.wait_for(1));
  const auto whole = first.result(0);
  REQUIRE(whole.outcome == request_outcome::finished);
  collector again;
  for (std::size_t cut = 0; cut <= whole.tokens.size(); ++cut) {
    std::vector<std::int32_t> resume(whole.tokens.begin(), whole.tokens.begin() + static_cast<long>(cut));
    loop.submit(lf::test::validated(d), std::nullopt, again.make(static_cast<int>(cut)), resume);
  }
  REQUIRE(again.wait_for(whole.tokens.size() + 1));
  loop.stop(true);
  for (std::size_t cut = 0; cut <= whole.tokens.size(); ++cut) {
    const auto r = again.result(static_cast<int>(cut));
    INFO("resumed after " << cut);
    CHECK(r.tokens == whole.tokens);
    CHECK(r.text == whole.text);
    CHECK(r.finish_reason == whole.finish_reason);
  }
}

TEST_CASE("a bad constraint or a resumed token outside it ends only its request", "[serving_loop][constrain]") {
  fake_engine eng;
  collector col;
  serving_loop loop(eng, tok(), config());
  // Past the edge unchecked (the gateway would have refused it): the worker refuses it too.
  lf::test::submit(loop, constrained("regex", "a(", 8), col.make(0));
  const auto d = constrained("choice", R"(["yes", "no"])", 8);
  loop.submit(lf::test::validated(d), std::nullopt, col.make(1), tok().encode("maybe"));
  lf::test::submit(loop, d, col.make(2));
  REQUIRE(col.wait_for(3));
  loop.stop(true);
  CHECK(col.result(0).error == lf::serve_errc::invalid_request);
  CHECK_THAT(col.result(0).message, Catch::Contains("missing ')'"));
  CHECK(col.result(1).error == lf::serve_errc::invalid_request);
  CHECK(col.result(2).outcome == request_outcome::finished);
  CHECK((col.result(2).text == "yes" || col.result(2).text == "no"));
}

} // namespace test_serving_loop_constrain
