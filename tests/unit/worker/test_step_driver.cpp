// The pure parts of a step (worker/step_driver): the engine's chunks from a plan, one row's draws
// with speculative verification, what the scheduler is told back, and the whole step after the
// engine (drive_step) over hand-made logits. No engine, no loop; GPT-2's tokenizer.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "tests/support/test_tokenizer.hpp"
#include "text/text_stream.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/sampling/sampler.hpp"
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

/// A sampling request's books, as the serving loop keeps them (greedy unless told otherwise).
struct request_books {
  explicit request_books(std::uint64_t id, sampling_params p, std::vector<std::int32_t> prompt)
    : id(id), params(std::move(p)), pick(params, 7), stream(params.stop), context(std::move(prompt)) {}
  step_request lend() {
    return {request_id{id}, &params, &pick, nullptr, &stream, &generated, &first_token, &context, &proposal};
  }
  std::uint64_t id;
  sampling_params params;
  engine::sampler pick;
  text::text_stream stream;
  std::vector<std::int32_t> generated, context, proposal;
  std::optional<time_point> first_token;
};

sampling_params greedy(int max_tokens) {
  sampling_params p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

constexpr std::int32_t end_of_text = 50256;

/// Logits rows, each preferring one token; runs rows on the calling thread.
struct logit_rows {
  explicit logit_rows(std::vector<std::int32_t> favourites) {
    const auto vocab = test::tokenizer().vocab_size();
    for (auto f : favourites) {
      rows.emplace_back(vocab, 0.0f);
      rows.back()[static_cast<std::size_t>(f)] = 10.0f;
    }
  }
  step_logits view() {
    return {[this](std::size_t r) { return rows.at(r).data(); }, test::tokenizer().vocab_size(),
            [](std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) { fn(0, n); }, end_of_text,
            &test::tokenizer()};
  }
  std::vector<std::vector<float>> rows;
};

std::int32_t token_of(const std::string& text) {
  const auto t = test::tokenizer().encode(text);
  REQUIRE(t.size() == 1);
  return t[0];
}

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

TEST_CASE("drive_step: each sampling request streams its token with its text, ends at max_tokens, and the scheduler hears every draw", "[worker][step_driver]") {
  const auto hello = token_of(" Hello"), world = token_of(" world");
  request_books a(1, greedy(5), {10, 11}), b(2, greedy(1), {20});
  std::map<std::uint64_t, request_books*> books{{1, &a}, {2, &b}};
  step_plan plan;
  plan.chunks.push_back({cache::seq_id{1}, 1, 1, true, 0});
  plan.chunks.push_back({cache::seq_id{3}, 0, 4, false, 0});  // prefill that does not sample: no row, no turn
  plan.chunks.push_back({cache::seq_id{2}, 0, 1, true, 0});
  logit_rows logits({hello, world});
  const time_point now{std::chrono::seconds(42)};
  auto out = drive_step(plan, [&](cache::seq_id id) { return books.at(id.value())->lend(); }, logits.view(), now);
  REQUIRE(out.turns.size() == 2);
  CHECK(out.turns[0].id == request_id{1});
  REQUIRE(out.turns[0].tokens.size() == 1);
  CHECK(out.turns[0].tokens[0].token == hello);
  CHECK(out.turns[0].tokens[0].text == " Hello");
  CHECK_FALSE(out.turns[0].tokens[0].logprobs);
  CHECK_FALSE(out.turns[0].end);
  CHECK(a.generated == std::vector<std::int32_t>{hello});
  CHECK(a.first_token == now);
  // b's one token is its max_tokens: it streams, then ends with "length".
  CHECK(out.turns[1].id == request_id{2});
  REQUIRE(out.turns[1].tokens.size() == 1);
  CHECK(out.turns[1].tokens[0].text == " world");
  REQUIRE(out.turns[1].end);
  CHECK(out.turns[1].end->outcome == request_outcome::finished);
  CHECK(out.turns[1].end->finish_reason == "length");
  CHECK(out.completion.sampled == std::vector<std::optional<std::int32_t>>{hello, std::nullopt, world});
  CHECK(out.completion.accepted.empty());
  // A first token's time is kept: a later step does not move it.
  logit_rows next({world});
  plan.chunks.resize(1);
  drive_step(plan, [&](cache::seq_id id) { return books.at(id.value())->lend(); }, next.view(), now + std::chrono::seconds(1));
  CHECK(a.first_token == now);
  CHECK(a.generated == std::vector<std::int32_t>{hello, world});
}

TEST_CASE("drive_step: proposals are verified row by row, accepted ones stream, and the end of text ends the turn there", "[worker][step_driver]") {
  const auto x = token_of(" x"), y = token_of(" y"), z = token_of(" z");
  request_books a(1, greedy(10), {10});
  a.proposal = {x, y, z};
  step_plan plan;
  plan.chunks.push_back({cache::seq_id{1}, 1, 4, true, 3});
  auto lend = [&](cache::seq_id) { return a.lend(); };
  // Rows agree with x and y, then draw z's place differently: x, y accepted, then the draw.
  logit_rows rows({x, y, x, z});
  auto out = drive_step(plan, lend, rows.view(), time_point{});
  REQUIRE(out.turns.size() == 1);
  std::vector<std::int32_t> streamed;
  for (auto& t : out.turns[0].tokens)
    streamed.push_back(t.token);
  CHECK(streamed == std::vector<std::int32_t>{x, y, x});
  CHECK(out.turns[0].draft == 3);
  CHECK(out.turns[0].accepted == 2);
  CHECK(out.completion.sampled == std::vector<std::optional<std::int32_t>>{x});
  CHECK(out.completion.accepted == std::vector<std::vector<std::int32_t>>{{x, y}});
  // The end of text as the second draw: x streams, the end of text does not, the turn ends "eos".
  request_books b(2, greedy(10), {10});
  b.proposal = {x, end_of_text};
  plan.chunks[0] = {cache::seq_id{2}, 1, 3, true, 2};
  logit_rows ending({x, end_of_text, y});
  out = drive_step(plan, [&](cache::seq_id) { return b.lend(); }, ending.view(), time_point{});
  REQUIRE(out.turns[0].tokens.size() == 1);
  CHECK(out.turns[0].tokens[0].token == x);
  REQUIRE(out.turns[0].end);
  CHECK(out.turns[0].end->finish_reason == "eos");
  // The scheduler still hears every draw (the request is finished right after).
  CHECK(out.completion.sampled == std::vector<std::optional<std::int32_t>>{y});
  CHECK(b.generated == std::vector<std::int32_t>{x});
}

TEST_CASE("drive_step: invalid logits fail only their own request, with token 0 held for the scheduler", "[worker][step_driver]") {
  const auto hello = token_of(" Hello");
  request_books bad(1, greedy(5), {10}), good(2, greedy(5), {20});
  good.params.logprobs = true;
  good.params.top_logprobs = 2;
  std::map<std::uint64_t, request_books*> books{{1, &bad}, {2, &good}};
  step_plan plan;
  plan.chunks.push_back({cache::seq_id{1}, 1, 1, true, 0});
  plan.chunks.push_back({cache::seq_id{2}, 1, 1, true, 0});
  logit_rows rows({hello, hello});
  rows.rows[0][5] = std::numeric_limits<float>::quiet_NaN();
  auto out = drive_step(plan, [&](cache::seq_id id) { return books.at(id.value())->lend(); }, rows.view(), time_point{});
  REQUIRE(out.turns.size() == 2);
  CHECK(out.turns[0].tokens.empty());
  REQUIRE(out.turns[0].end);
  CHECK(out.turns[0].end->outcome == request_outcome::failed);
  CHECK(out.turns[0].end->error == serve_errc::internal);
  CHECK(out.turns[0].end->message.find("invalid logits") != std::string::npos);
  CHECK(bad.generated.empty());
  CHECK_FALSE(bad.first_token);
  // The other request is untouched by it, and gets its log-probabilities.
  REQUIRE(out.turns[1].tokens.size() == 1);
  CHECK_FALSE(out.turns[1].end);
  REQUIRE(out.turns[1].tokens[0].logprobs);
  CHECK(out.turns[1].tokens[0].logprobs->top_tokens.size() == 2);
  CHECK(out.turns[1].tokens[0].logprobs->top_tokens[0] == hello);
  CHECK(out.completion.sampled == std::vector<std::optional<std::int32_t>>{0, hello});
}

TEST_CASE("drive_step: a stop string ends the turn with its text held back", "[worker][step_driver]") {
  const auto hello = token_of(" Hello"), world = token_of(" world");
  auto p = greedy(10);
  p.stop = {" world"};
  request_books a(1, p, {10});
  a.proposal = {hello, world};
  step_plan plan;
  plan.chunks.push_back({cache::seq_id{1}, 1, 3, true, 2});
  logit_rows rows({hello, world, hello});
  auto out = drive_step(plan, [&](cache::seq_id) { return a.lend(); }, rows.view(), time_point{});
  REQUIRE(out.turns[0].end);
  CHECK(out.turns[0].end->finish_reason == "stop");
  std::string text;
  for (auto& t : out.turns[0].tokens)
    text += t.text;
  CHECK(text == " Hello");
  CHECK(a.generated == std::vector<std::int32_t>{hello, world});  // the draw after the stop is not applied
}
