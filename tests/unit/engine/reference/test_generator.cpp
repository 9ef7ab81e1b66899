// Batched generation: left-padded batches equal single prompts, the no-cache mode equals the
// cached one, seeds reproduce, stop sequences and max_tokens end rows, bad requests are refused.
#include "tests/support/catch_aten.hpp"

#include <cmath>
#include <limits>

#include "tests/support/tiny_engine.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/reference/generator.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/weights.hpp"

using namespace lf::engine;

namespace {

lf::test::tiny_engine& fx() { return lf::test::tiny(); }

/// A greedy draft that ignores EOS.
lf::request_draft greedy(const std::string& text, int max_tokens) {
  lf::request_draft d;
  d.prompt = fx().tok.encode(text);
  d.params.temperature = 0;
  d.params.max_tokens = max_tokens;
  d.params.ignore_eos = true;
  return d;
}

/// A batch row of `d`, validated against the model as the edge does.
generation_request row(lf::request_draft d) {
  return {lf::validate_or_throw(std::move(d), fx().model.config().limits())};
}

const std::vector<std::string> prompts = {"Hi", "The quick brown fox jumps over",
                                          "Once upon a time, in a land far far away, there lived"};

} // namespace

TEST_CASE("a left-padded batch generates what each prompt generates alone", "[generator]") {
  std::vector<generation_request> batch;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    batch.push_back(row(greedy(prompts[i], 12 + 4 * static_cast<int>(i))));
  auto together = generate(fx().model, fx().tok, batch);
  REQUIRE(together.outputs.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto alone = generate(fx().model, fx().tok, {batch[i]});
    INFO("prompt " << i);
    CHECK(together.outputs[i].tokens == alone.outputs[0].tokens);
    CHECK(together.outputs[i].text == alone.outputs[0].text);
    CHECK(together.outputs[i].tokens.size() == static_cast<std::size_t>(batch[i].req.params().max_tokens));
    CHECK(together.outputs[i].reason == finish_reason::length);
  }
}

TEST_CASE("the no-KV-cache mode generates the same tokens", "[generator]") {
  std::vector<generation_request> batch = {row(greedy(prompts[1], 16)), row(greedy(prompts[2], 10))};
  generate_options no_cache;
  no_cache.use_kv_cache = false;
  auto a = generate(fx().model, fx().tok, batch);
  auto b = generate(fx().model, fx().tok, batch, no_cache);
  for (std::size_t i = 0; i < batch.size(); ++i)
    CHECK(a.outputs[i].tokens == b.outputs[i].tokens);
}

TEST_CASE("seeded sampling is reproducible", "[generator]") {
  auto req = greedy(prompts[1], 24);
  req.params.temperature = 1.0f;
  req.params.top_k = 50;
  req.params.top_p = 0.95f;
  req.params.seed = 1234;
  auto a = generate(fx().model, fx().tok, {row(req)});
  auto b = generate(fx().model, fx().tok, {row(req), row(greedy(prompts[0], 3))});  // batch-mates don't matter
  CHECK(a.outputs[0].tokens == b.outputs[0].tokens);
  req.params.seed = 99;
  auto c = generate(fx().model, fx().tok, {row(req)});
  CHECK(a.outputs[0].tokens != c.outputs[0].tokens);
}

TEST_CASE("streamed deltas add up to the text, and a stop sequence ends the row", "[generator]") {
  auto req = greedy(prompts[2], 20);
  std::string streamed;
  generate_options opts;
  opts.on_token = [&](std::size_t, std::int32_t, std::string_view d) { streamed += d; };
  auto full = generate(fx().model, fx().tok, {row(req)}, opts).outputs[0];
  CHECK(streamed == full.text);
  REQUIRE(full.text.size() > 6);
  // Stop on a piece of text the model is known to produce, straddling token boundaries.
  auto cut = full.text.size() / 2;
  req.params.stop = {full.text.substr(cut, 4)};
  auto stopped = generate(fx().model, fx().tok, {row(req)}).outputs[0];
  CHECK(stopped.reason == finish_reason::stop_sequence);
  CHECK(stopped.text == full.text.substr(0, full.text.find(req.params.stop[0])));
  CHECK(stopped.tokens.size() < full.tokens.size());
}

TEST_CASE("a row validated for a longer context is refused before any work", "[generator]") {
  auto& m = fx().model;
  auto limits = m.config().limits();
  limits.context_window *= 2;  // validated for another model: a caller's bug, caught
  auto d = greedy("hello", m.config().n_positions);
  auto too_long = generation_request{lf::validate_or_throw(d, limits)};
  CHECK_THROWS_AS(generate(m, fx().tok, {row(greedy("hello", 4)), too_long}), std::invalid_argument);
}
