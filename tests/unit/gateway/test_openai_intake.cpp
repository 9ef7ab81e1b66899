// The OpenAI intake (gateway/openai/openai_intake): a parsed body becomes one request_draft per choice,
// with the echo, chat default max_tokens and seed rules; the body's own limits refused by the
// parser; the request's rules left to validate_request. GPT-2's real tokenizer, no I/O.
#include <catch2/catch.hpp>

#include "gateway/openai/openai_intake.hpp"
#include "proto/protocol.hpp"
#include "text/tokenizer.hpp"

using namespace lf;
using namespace lf::gateway;

namespace openai_intake_test {

const text::tokenizer& gpt2_tokens() {
  static const auto tok = text::tokenizer::from_dir(LF_SOURCE_DIR "/models/tokenizer");
  return tok;
}

/// The served model "gpt2" with `window` tokens of context (0: not known) and the router's defaults.
intake_limits with_window(std::uint32_t window) {
  intake_limits l;
  l.request.context_window = window;
  return l;
}

const intake_limits served = with_window(1024);

/// `body` parsed for `kind` and taken in, or the api_error of either step.
std::variant<openai_intake_result, api_error> intake_or_error(api_kind kind, const std::string& body,
                                                   const intake_limits& l = served) {
  auto parsed = parse_openai_request(kind, body);
  if (auto* e = std::get_if<api_error>(&parsed))
    return *e;
  return openai_intake(std::get<openai_request>(parsed), gpt2_tokens(), l);
}

openai_intake_result taken_in(api_kind kind, const std::string& body, const intake_limits& l = served) {
  auto r = intake_or_error(kind, body, l);
  if (auto* e = std::get_if<api_error>(&r))
    FAIL("refused: " << e->message);
  return std::get<openai_intake_result>(std::move(r));
}

api_error refused_in(api_kind kind, const std::string& body, const intake_limits& l = served) {
  auto r = intake_or_error(kind, body, l);
  REQUIRE(std::holds_alternative<api_error>(r));
  return std::get<api_error>(r);
}

std::vector<std::int32_t> encoded(const std::string& s) { return gpt2_tokens().encode(s); }

const std::string chat_hi = R"("messages":[{"role":"user","content":"Hi"}])";

} // namespace openai_intake_test

using namespace openai_intake_test;

TEST_CASE("a completion is one draft per choice with the body's fields, the adapter named by model", "[openai][intake]") {
  auto r = taken_in(api_kind::completion, R"({"model":"gpt2","prompt":"Hello world","max_tokens":5,"temperature":0.5,
    "stop":"\n","user":"alice","deadline_ms":900,"ttft_ms":300,"speculative":4,"logprobs":2})");
  REQUIRE(r.choices.size() == 1);
  const auto& d = r.choices[0];
  CHECK(d.prompt == encoded("Hello world"));
  CHECK(d.adapter.empty());  // the served model's name
  CHECK(d.params.max_tokens == 5);
  CHECK(d.params.temperature == 0.5f);
  CHECK(d.params.stop == std::vector<std::string>{"\n"});
  CHECK(d.params.logprobs);
  CHECK(d.params.top_logprobs == 2);
  CHECK(d.tenant == "alice");
  CHECK(d.timeout_ms == 900);
  CHECK(d.ttft_ms == 300);
  CHECK(d.speculative == 4);
  CHECK(r.echoes.empty());
  CHECK(r.charge == encoded("Hello world").size() + 5);
  auto a = taken_in(api_kind::completion, R"({"model":"styles/kjv","prompt":[1,2,3]})");
  REQUIRE(a.choices.size() == 1);
  CHECK(a.choices[0].adapter == "styles/kjv");
  CHECK(a.choices[0].prompt == std::vector<std::int32_t>{1, 2, 3});  // token ids as given
  CHECK(a.choices[0].params.max_tokens == 16);  // OpenAI's default for completions
  CHECK(a.choices[0].speculative == -1);        // the worker's policy
}

TEST_CASE("n > 1: choice 0 keeps the seed, the others get it mixed with their index, prompt-major", "[openai][intake]") {
  auto r = taken_in(api_kind::completion, R"({"model":"gpt2","prompt":["a","b c"],"n":3,"seed":42,"max_tokens":2})");
  REQUIRE(r.choices.size() == 6);
  for (std::size_t c = 0; c < 6; ++c) {
    CAPTURE(c);
    CHECK(r.choices[c].prompt == encoded(c < 3 ? "a" : "b c"));
    const auto j = c % 3;
    CHECK(r.choices[c].params.seed == std::optional<std::uint64_t>(j == 0 ? 42 : 42 ^ (0x9E3779B97F4A7C15ull * j)));
  }
  CHECK(r.choices[1].params.seed != r.choices[2].params.seed);
  CHECK(r.charge == (encoded("a").size() + 2) * 3 + (encoded("b c").size() + 2) * 3);
  // No seed: none on any choice (the router picks one for each).
  for (const auto& d : taken_in(api_kind::completion, R"({"model":"gpt2","prompt":"a","n":2})").choices)
    CHECK_FALSE(d.params.seed);
}

TEST_CASE("chat: the rendered conversation, the chat stops, max_tokens the rest of the context by default", "[openai][intake]") {
  const auto prompt = encoded(proto::render_chat_prompt({{proto::chat_role::user, "Hi"}}));
  auto r = taken_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + ",\"stop\":\"END\"}");
  REQUIRE(r.choices.size() == 1);
  CHECK(r.choices[0].prompt == prompt);
  CHECK(r.choices[0].params.max_tokens == static_cast<int>(1024 - prompt.size()));
  CHECK(r.choices[0].params.stop == std::vector<std::string>{"END", "\nUser:", "\nSystem:"});
  CHECK(taken_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + ",\"max_tokens\":3}").choices[0].params.max_tokens == 3);
  CHECK(taken_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + ",\"max_completion_tokens\":4}").choices[0].params.max_tokens
        == 4);
  // Unknown context window: OpenAI's 16.
  CHECK(taken_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + "}", with_window(0)).choices[0].params.max_tokens == 16);
  // Completions keep 16 whatever the window.
  CHECK(taken_in(api_kind::completion, R"({"model":"gpt2","prompt":"Hi"})").choices[0].params.max_tokens == 16);
}

TEST_CASE("echo: each prompt's text (token ids decoded), and with max_tokens 0 nothing is generated", "[openai][intake]") {
  auto r = taken_in(api_kind::completion, R"({"model":"gpt2","prompt":["Hello",[15496,995]],"echo":true,"n":2,"max_tokens":3})");
  REQUIRE(r.echoes.size() == 2);
  CHECK(r.echoes[0].text == "Hello");
  CHECK(r.echoes[1].text == gpt2_tokens().decode({15496, 995}));
  CHECK(r.echoes[1].tokens == 2);
  CHECK(r.choices.size() == 4);
  auto z = taken_in(api_kind::completion, R"({"model":"gpt2","prompt":"Hello world","echo":true,"max_tokens":0,"n":2})");
  CHECK(z.choices.empty());
  REQUIRE(z.echoes.size() == 1);
  CHECK(z.echoes[0].tokens == encoded("Hello world").size());
  CHECK(z.charge == encoded("Hello world").size() * 2);  // the prompt, for each choice
}

TEST_CASE("an echoed prompt is checked with validate_request's prompt rules", "[openai][intake]") {
  auto e = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":[15496,50257],"echo":true})");
  CHECK(e.status == 400);
  CHECK(e.code == "invalid_request");
  CHECK(e.param == "prompt");
  CHECK(e.message == "prompt token id 50257 is outside the vocabulary [0, 50257)");
  // The prompt alone beyond the window: named alone.
  const auto four = R"({"model":"gpt2","prompt":[1,2,3,4],"echo":true,"max_tokens":0})";
  auto w = refused_in(api_kind::completion, four, with_window(3));
  CHECK(w.status == 400);
  CHECK(w.code == "prompt_too_long");
  CHECK(w.message == "prompt (4 tokens) exceeds the context window of 3 tokens");
  CHECK(taken_in(api_kind::completion, four, with_window(4)).echoes.size() == 1);
  // Echoed and generating: prompt + max_tokens, validate_request's own words.
  auto g = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":[1,2,3],"echo":true,"max_tokens":2})", with_window(4));
  CHECK(g.message == "prompt (3 tokens) + max_tokens (2) exceeds the context window of 4 tokens");
}

TEST_CASE("every draft goes through validate_request, its refusal in OpenAI's words", "[openai][intake]") {
  // The window: refused here, as the router would.
  auto w = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":[1,2,3],"max_tokens":2})", with_window(4));
  CHECK(w.code == "prompt_too_long");
  CHECK(w.message == "prompt (3 tokens) + max_tokens (2) exceeds the context window of 4 tokens");
  // Not known: the rest is checked here, the window left to the router.
  CHECK(taken_in(api_kind::completion, R"({"model":"gpt2","prompt":[1,2,3],"max_tokens":2000})", with_window(0))
          .choices.size() == 1);
  auto bias = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"a","logit_bias":{"60000":1}})");
  CHECK(bias.param == "logit_bias");
  CHECK(bias.message == "logit_bias token id 60000 is outside the vocabulary [0, 50257)");
  auto far = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"a","logit_bias":{"1":100.5}})");
  CHECK(far.param == "logit_bias");
  CHECK(far.message == "logit_bias[1] must be in [-100, 100] (got 100.5)");
  // max_tokens: the router's limit, and 0 only with echo.
  for (const char* body : {R"({"model":"gpt2","prompt":"x","max_tokens":0})",
                           R"({"model":"gpt2","prompt":"x","max_tokens":70000})"}) {
    auto e = refused_in(api_kind::completion, body, with_window(0));
    CHECK(e.status == 400);
    CHECK(e.param == "max_tokens");
  }
  CHECK(refused_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + ",\"max_completion_tokens\":0}").param
        == "max_tokens");
  // Field names: the tenant is `user`, a completion's top_logprobs its `logprobs`, a chat's prompt its messages.
  auto user = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"x","user":")" + std::string(65, 'u') + "\"}");
  CHECK(user.param == "user");
  CHECK(user.message == "user (the tenant) must be at most 64 bytes of UTF-8 without control characters (got 65 bytes)");
  CHECK(refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"x","user":"a\nb"})").param == "user");
  CHECK(taken_in(api_kind::completion, R"({"model":"gpt2","prompt":"x","user":")" + std::string(64, 'u') + "\"}")
          .choices[0].tenant == std::string(64, 'u'));
  auto lp = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"x","logprobs":21})");
  CHECK(lp.param == "logprobs");
  CHECK(lp.message == "logprobs must be in [0, 20] (got 21)");
  CHECK(refused_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + ",\"top_logprobs\":2}").param == "top_logprobs");
  auto chat_ids = refused_in(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + ",\"max_tokens\":2000}");
  CHECK(chat_ids.code == "prompt_too_long");
  CHECK(refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"x","regex":"a","ignore_eos":true})").param
        == "ignore_eos");
  CHECK(refused_in(api_kind::completion, R"({"model":"../x","prompt":"x"})").param == "model");
}

TEST_CASE("the body's bounds are the parser's: empty and oversized prompts, too many messages", "[openai][intake]") {
  auto empty = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":["a",""]})");
  CHECK(empty.param == "prompt");
  CHECK(empty.message == "prompt must not be empty");
  const std::string big(proto::max_prompt_bytes + 1, 'a');
  auto huge = refused_in(api_kind::completion, R"({"model":"gpt2","prompt":")" + big + "\"}");
  CHECK(huge.code == "invalid_request");
  CHECK(huge.message == "prompt is 262145 bytes; the limit is 262144");
  std::string many = R"({"model":"gpt2","messages":[)";
  for (std::size_t i = 0; i <= proto::max_messages; ++i)
    many += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
  auto m = refused_in(api_kind::chat, many + "]}");
  CHECK(m.param == "messages");
  CHECK(m.message == "messages must have at most 256 entries (got 257)");
  // The tokenizer's bound (max_prompt_bytes) is on the rendered chat: prompt_too_long.
  openai_limits small;
  small.max_prompt_bytes = 8;
  auto rendered = parse_openai_request(api_kind::chat, "{\"model\":\"gpt2\"," + chat_hi + "}", small);
  REQUIRE(std::holds_alternative<api_error>(rendered));
  CHECK(std::get<api_error>(rendered).code == "prompt_too_long");
  CHECK(std::get<api_error>(rendered).message
        == "prompt is " + std::to_string(proto::render_chat_prompt({{proto::chat_role::user, "Hi"}}).size())
             + " bytes; the limit is 8");
  CHECK(refused_in(api_kind::completion, R"({"model":"gpt2","prompt":"Hi","temperature":"hot"})").param == "temperature");
}
