// The one validation of a request (core/request.hpp): every refusal names its field and code, and
// what passes is what every later hop gets.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/request.hpp"

using namespace lf;
using Catch::Matchers::Contains;

namespace {

request_limits limits() {
  request_limits l;
  l.context_window = 64;
  l.vocab_size = 100;
  return l;
}

request_draft draft(std::vector<std::int32_t> prompt = {1, 2, 3}) {
  request_draft d;
  d.prompt = std::move(prompt);
  d.params.max_tokens = 8;
  return d;
}

/// The failure of `d`, which must not validate.
check_failure refusal(request_draft d, request_limits l = limits()) {
  auto r = validate_request(std::move(d), l);
  REQUIRE(std::holds_alternative<check_failure>(r));
  auto f = std::get<check_failure>(r);
  CHECK_FALSE(f.message.empty());
  return f;
}

} // namespace

TEST_CASE("a valid draft becomes a validated request with the same fields", "[request]") {
  auto d = draft({5, 6, 7, 8});
  d.params.temperature = 0.5f;
  d.params.seed = 9;
  d.params.stop = {"END"};
  d.adapter = "styles/kjv";
  d.timeout_ms = 1500;
  d.ttft_ms = 300;
  d.tenant = "team-a";
  d.tenant_weight = 2;
  auto r = validate_request(d, limits());
  REQUIRE(std::holds_alternative<validated_request>(r));
  const auto& v = std::get<validated_request>(r);
  CHECK(v.prompt() == d.prompt);
  CHECK(v.params().temperature == 0.5f);
  CHECK(v.params().seed == std::optional<std::uint64_t>(9));
  CHECK(v.params().stop == std::vector<std::string>{"END"});
  CHECK(v.adapter() == "styles/kjv");
  CHECK(v.timeout_ms() == 1500);
  CHECK(v.ttft_ms() == 300);
  CHECK(v.tenant() == "team-a");
  CHECK(v.tenant_weight() == 2);
  CHECK(v.max_length() == 4 + 8);
}

TEST_CASE("tenant names: at most 64 bytes of UTF-8 without control characters, empty is the default", "[request]") {
  CHECK(valid_tenant_name(""));
  CHECK(valid_tenant_name("alice"));
  CHECK(valid_tenant_name("user 42 / org \xc3\xa9"));
  CHECK(valid_tenant_name(std::string(64, 'x')));
  CHECK_FALSE(valid_tenant_name(std::string(65, 'x')));
  CHECK_FALSE(valid_tenant_name("tab\there"));
  CHECK_FALSE(valid_tenant_name("nl\n"));
  CHECK_FALSE(valid_tenant_name("\xff"));
  auto d = draft();
  d.tenant = std::string(65, 't');
  auto f = refusal(d);
  CHECK(f.code == serve_errc::invalid_request);
  CHECK_THAT(f.message, Contains("tenant must be at most 64 bytes"));
  d = draft();
  d.tenant_weight = 0;
  CHECK_THAT(refusal(d).message, Contains("tenant weight"));
}

TEST_CASE("speculative: the worker's policy, on, off or a proposal length of at most 16", "[request]") {
  for (int s : {-2, -1, 0, 1, 16}) {
    auto d = draft();
    d.speculative = s;
    auto r = validate_request(d, limits());
    REQUIRE(std::holds_alternative<validated_request>(r));
    CHECK(std::get<validated_request>(r).speculative() == s);
  }
  CHECK(std::get<validated_request>(validate_request(draft(), limits())).speculative() == -1);  // the default
  for (int s : {-3, 17}) {
    auto d = draft();
    d.speculative = s;
    auto f = refusal(d);
    CHECK(f.code == serve_errc::invalid_request);
    CHECK_THAT(f.message, Contains("speculative must be") && Contains("(got " + std::to_string(s) + ")"));
  }
}

TEST_CASE("each refusal names its field and code", "[request]") {
  CHECK(refusal(draft({})).code == serve_errc::invalid_request);
  CHECK_THAT(refusal(draft({})).message, Contains("prompt is empty"));
  CHECK_THAT(refusal(draft({1, 100})).message, Contains("prompt token id 100 is outside the vocabulary [0, 100)"));
  CHECK(refusal(draft({1, -1})).code == serve_errc::invalid_request);
  auto d = draft();
  d.adapter = "../etc";
  CHECK_THAT(refusal(d).message, Contains("adapter name"));
  // 60 prompt tokens + 8 > 64: the one wording of the context rule.
  auto f = refusal(draft(std::vector<std::int32_t>(60, 1)));
  CHECK(f.code == serve_errc::prompt_too_long);
  CHECK(f.message == "prompt (60 tokens) + max_tokens (8) exceeds the context window of 64 tokens");
  CHECK(std::holds_alternative<validated_request>(validate_request(draft(std::vector<std::int32_t>(56, 1)), limits())));
}

TEST_CASE("sampling values follow the engine's rules, with the value in the message", "[request]") {
  const float inf = std::numeric_limits<float>::infinity();
  auto with = [](auto set) {
    auto d = draft();
    set(d.params);
    return refusal(d);
  };
  CHECK_THAT(with([](auto& p) { p.temperature = std::nanf(""); }).message, Contains("temperature must be a finite number >= 0 (got nan)"));
  CHECK_THAT(with([&](auto& p) { p.temperature = inf; }).message, Contains("(got inf)"));
  CHECK_THAT(with([](auto& p) { p.temperature = -0.5f; }).message, Contains("(got -0.5)"));
  CHECK_THAT(with([](auto& p) { p.top_p = 0; }).message, Contains("top_p must be a finite number in (0, 1] (got 0)"));
  CHECK_THAT(with([](auto& p) { p.top_p = 1.5f; }).message, Contains("(got 1.5)"));
  CHECK_THAT(with([](auto& p) { p.top_k = -1; }).message, Contains("top_k must be >= 0"));
  CHECK_THAT(with([](auto& p) { p.repetition_penalty = 0; }).message, Contains("repetition_penalty must be a finite number > 0"));
  CHECK_THAT(with([](auto& p) { p.max_tokens = 0; }).message, Contains("max_tokens must be in [1, 65536] (got 0)"));
  CHECK_THAT(with([](auto& p) { p.stop = {"a", ""}; }).message, Contains("stop[1] must not be empty"));
  CHECK_THAT(with([](auto& p) { p.stop = std::vector<std::string>(17, "x"); }).message, Contains("stop must have at most 16 entries (got 17)"));
  CHECK_THAT(with([](auto& p) { p.stop = {"\xff"}; }).message, Contains("stop[0] must be valid UTF-8"));
  CHECK(with([](auto& p) { p.temperature = -1; }).code == serve_errc::invalid_request);
}

TEST_CASE("unknown model limits refuse the request as overloaded, never accept it unchecked", "[request]") {
  auto l = limits();
  l.context_window = 0;
  CHECK(refusal(draft(), l).code == serve_errc::overloaded);
  l = limits();
  l.vocab_size = 0;
  CHECK(refusal(draft(), l).code == serve_errc::overloaded);
}

TEST_CASE("validate_or_throw throws the refusal's message", "[request]") {
  CHECK_THROWS_WITH(validate_or_throw(draft({}), limits()), Contains("prompt is empty"));
  CHECK(validate_or_throw(draft(), limits()).prompt().size() == 3);
}

TEST_CASE("adapter names: relative paths of safe characters only", "[request]") {
  for (auto ok : {"shakespeare", "styles/kjv", "a-b_c.d", "v1.2/x", "A9", "styles/kjv@3", "x@123456789"})
    CHECK(valid_adapter_name(ok));
  using namespace std::literals;
  for (auto bad : {""sv, "/abs"sv, "trail/"sv, "a//b"sv, ".hidden"sv, "a/../b"sv, ".."sv, "a/.b"sv,
                   "sp ace"sv, "back\\slash"sv, "nul\0x"sv, "semi;colon"sv, "ü"sv, "x@"sv, "@2"sv,
                   "x@0"sv, "x@07"sv, "x@1@2"sv, "x@v1"sv, "x@1234567890"sv, "x/@1"sv})
    CHECK_FALSE(valid_adapter_name(bad));
  CHECK(valid_adapter_name(std::string(max_adapter_name_length, 'a')));
  CHECK_FALSE(valid_adapter_name(std::string(max_adapter_name_length + 1, 'a')));
}

TEST_CASE("logit_bias: ids inside the vocabulary, biases in [-100, 100], at most 300 entries", "[request]") {
  auto d = draft();
  d.params.logit_bias = {{0, -100.0f}, {99, 100.0f}, {5, 0.5f}};
  auto ok = validate_or_throw(d, limits());
  CHECK(ok.params().logit_bias == d.params.logit_bias);
  d.params.logit_bias = {{100, 1.0f}};
  auto e = refusal(d);
  CHECK(e.code == serve_errc::invalid_request);
  CHECK_THAT(e.message, Contains("logit_bias token id 100 is outside the vocabulary"));
  d.params.logit_bias = {{-1, 1.0f}};
  CHECK_THAT(refusal(d).message, Contains("logit_bias keys must be token ids"));
  d.params.logit_bias = {{3, 100.5f}};
  CHECK_THAT(refusal(d).message, Contains("logit_bias[3] must be in [-100, 100] (got 100.5)"));
  d.params.logit_bias = {{3, std::numeric_limits<float>::quiet_NaN()}};
  CHECK_THAT(refusal(d).message, Contains("logit_bias[3]"));
  auto big = limits();
  big.vocab_size = 1000;
  d.params.logit_bias.clear();
  for (int i = 0; i < 301; ++i)
    d.params.logit_bias[i] = 1.0f;
  CHECK_THAT(refusal(d, big).message, Contains("at most 300 entries"));
}

TEST_CASE("a constraint's shape is checked: kind, size, text, not with ignore_eos", "[request]") {
  auto d = draft();
  d.params.constraint = {"regex", "[a-z]+"};
  CHECK(std::holds_alternative<validated_request>(validate_request(d, limits())));
  d.params.constraint = {"json_object", ""};
  CHECK(std::holds_alternative<validated_request>(validate_request(d, limits())));
  d.params.constraint = {"xml", "x"};
  CHECK_THAT(refusal(d).message, Contains("constraint kind must be"));
  d.params.constraint = {"regex", ""};
  CHECK_THAT(refusal(d).message, Contains("must not be empty"));
  d.params.constraint = {"regex", std::string(max_constraint_text + 1, 'a')};
  CHECK_THAT(refusal(d).message, Contains("at most 65536 bytes"));
  d.params.constraint = {"", "x"};
  CHECK_THAT(refusal(d).message, Contains("without a kind"));
  d.params.constraint = {"choice", R"(["a"])"};
  d.params.ignore_eos = true;
  CHECK_THAT(refusal(d).message, Contains("ignore_eos cannot be combined"));
}

TEST_CASE("check_prompt applies validate_request's prompt rules alone, with the same words", "[request]") {
  CHECK_FALSE(check_prompt({1, 2, 3}, limits(), 0));
  CHECK_FALSE(check_prompt(std::vector<std::int32_t>(64, 1), limits(), 0));  // the whole window, nothing generated
  // Generating nothing, the message names the prompt alone.
  auto whole = check_prompt(std::vector<std::int32_t>(65, 1), limits(), 0);
  REQUIRE(whole);
  CHECK(whole->code == serve_errc::prompt_too_long);
  CHECK(whole->message == "prompt (65 tokens) exceeds the context window of 64 tokens");
  // With max_tokens, exactly validate_request's refusal.
  auto with_tokens = check_prompt(std::vector<std::int32_t>(60, 1), limits(), 8);
  REQUIRE(with_tokens);
  CHECK(with_tokens->message == refusal(draft(std::vector<std::int32_t>(60, 1))).message);
  auto outside = check_prompt({1, 100}, limits(), 0);
  REQUIRE(outside);
  CHECK(outside->code == serve_errc::invalid_request);
  CHECK(outside->message == refusal(draft({1, 100})).message);
  CHECK(check_prompt({}, limits(), 0)->message == "prompt is empty");
  auto l = limits();
  l.context_window = 0;
  CHECK(check_prompt({1}, l, 0)->code == serve_errc::overloaded);
}
