// vLLM's spellings on lorafleet's HTTP API (gateway/openai/constraint_fields, gateway/openai/tokenize_request):
// guided_* and structured_outputs map onto the same constraints as response_format and the
// regex / choice / grammar extensions; /tokenize and /detokenize bodies and replies. Pure.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gateway/openai/openai_request.hpp"
#include "gateway/openai/tokenize_request.hpp"
#include "text/tokenizer.hpp"

using namespace lf;
using namespace lf::gateway;
using json = nlohmann::json;

namespace {

const std::string chat_start = R"("model":"m","messages":[{"role":"user","content":"x"}])";

/// The body for `kind` with `extra` (members, without braces) beside the model and the prompt.
std::string body_with(api_kind kind, const std::string& extra) {
  return "{" + (kind == api_kind::chat ? chat_start : std::string(R"("model":"m","prompt":"x")")) + "," + extra + "}";
}

output_constraint constraint_of(api_kind kind, const std::string& extra) {
  auto r = parse_openai_request(kind, body_with(kind, extra));
  if (auto* e = std::get_if<api_error>(&r))
    FAIL("refused: " << e->message);
  return std::get<openai_request>(r).base.params.constraint;
}

api_error refusal_of(api_kind kind, const std::string& extra) {
  auto r = parse_openai_request(kind, body_with(kind, extra));
  REQUIRE(std::holds_alternative<api_error>(r));
  const auto e = std::get<api_error>(r);
  CHECK(e.status == 400);
  CHECK(e.code == "invalid_request");
  return e;
}

const text::tokenizer& gpt2() {
  static const auto tok = text::tokenizer::from_dir(LF_SOURCE_DIR "/models/tokenizer");
  return tok;
}

json tokenized(const std::string& body, const tokenize_limits& limits = {1024, std::size_t{1} << 20}) {
  auto r = answer_tokenize(body, gpt2(), limits);
  if (auto* e = std::get_if<api_error>(&r))
    FAIL("refused: " << e->message);
  return json::parse(std::get<tokenize_answer>(r).body);
}

api_error tokenize_refused(const std::string& body) {
  auto r = answer_tokenize(body, gpt2(), {1024, std::size_t{1} << 20});
  REQUIRE(std::holds_alternative<api_error>(r));
  return std::get<api_error>(r);
}

api_error detokenize_refused(const std::string& body) {
  auto r = answer_detokenize(body, gpt2());
  REQUIRE(std::holds_alternative<api_error>(r));
  CHECK(std::get<api_error>(r).status == 400);
  return std::get<api_error>(r);
}

} // namespace

TEST_CASE("guided_* fields map onto the same constraints as lorafleet's own spellings", "[vllm]") {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  for (auto kind : {api_kind::completion, api_kind::chat}) {
    const auto as_schema = constraint_of(kind, R"("response_format":{"type":"json_schema","json_schema":{"name":"s",
      "schema":)" + schema + "}}");
    CHECK(as_schema.kind == "json_schema");
    CHECK(constraint_of(kind, R"("guided_json":)" + schema) == as_schema);
    CHECK(constraint_of(kind, R"("guided_json":)" + json(schema).dump()) == as_schema);  // a string holding it
    CHECK(constraint_of(kind, R"("guided_regex":"[a-z]+")") == output_constraint{"regex", "[a-z]+"});
    CHECK(constraint_of(kind, R"("guided_regex":"[a-z]+")") == constraint_of(kind, R"("regex":"[a-z]+")"));
    CHECK(constraint_of(kind, R"("guided_choice":["yes","no"])") == output_constraint{"choice", R"(["yes","no"])"});
    CHECK(constraint_of(kind, R"("guided_grammar":"root ::= \"x\"")") == output_constraint{"grammar", R"(root ::= "x")"});
  }
}

TEST_CASE("structured_outputs (vLLM >= 0.10) maps each member onto its constraint", "[vllm]") {
  const auto kind = api_kind::chat;
  const std::string schema = R"({"type":"array","items":{"type":"string"},"maxItems":2})";
  CHECK(constraint_of(kind, R"("structured_outputs":{"json":)" + schema + "}")
        == output_constraint{"json_schema", json::parse(schema).dump()});
  CHECK(constraint_of(kind, R"("structured_outputs":{"json":)" + json(schema).dump() + "}")
        == output_constraint{"json_schema", json::parse(schema).dump()});
  CHECK(constraint_of(kind, R"("structured_outputs":{"regex":"\\d{3}"})") == output_constraint{"regex", R"(\d{3})"});
  CHECK(constraint_of(kind, R"("structured_outputs":{"choice":["a","b"]})") == output_constraint{"choice", R"(["a","b"])"});
  CHECK(constraint_of(kind, R"("structured_outputs":{"grammar":"root ::= [0-9]+"})")
        == output_constraint{"grammar", "root ::= [0-9]+"});
  CHECK(constraint_of(kind, R"("structured_outputs":{"json_object":true})") == output_constraint{"json_object", ""});
  CHECK(constraint_of(kind, R"("structured_outputs":{"json_object":false})").kind.empty());
  // null members are absent; options that only pick an implementation are accepted and ignored
  CHECK(constraint_of(kind, R"("structured_outputs":{"regex":"a","json":null,"disable_fallback":true,
    "disable_any_whitespace":false,"disable_additional_properties":false,"whitespace_pattern":null})")
        == output_constraint{"regex", "a"});
  CHECK(constraint_of(kind, R"("guided_regex":"a","guided_decoding_backend":"xgrammar:no-fallback")")
        == output_constraint{"regex", "a"});
  CHECK(constraint_of(kind, R"("guided_decoding_backend":"outlines")").kind.empty());
}

TEST_CASE("two constraints in one request are refused naming both fields", "[vllm]") {
  const auto kind = api_kind::completion;
  auto e = refusal_of(kind, R"("guided_regex":"a","response_format":{"type":"json_schema","json_schema":{"schema":{}}})");
  CHECK(e.param == "guided_regex");
  CHECK_THAT(e.message, Catch::Contains("at most one constraint") && Catch::Contains("(got response_format and guided_regex)"));
  CHECK(refusal_of(kind, R"("guided_regex":"a","guided_choice":["a"])").message.find("guided_regex and guided_choice")
        != std::string::npos);
  CHECK(refusal_of(kind, R"("regex":"a","guided_regex":"a")").message.find("regex and guided_regex") != std::string::npos);
  CHECK(refusal_of(kind, R"("guided_json":{},"structured_outputs":{"json":{}})").message.find(
          "guided_json and structured_outputs.json") != std::string::npos);
  e = refusal_of(kind, R"("structured_outputs":{"regex":"a","choice":["a"]})");
  CHECK(e.param == "structured_outputs.regex");  // members are read in name order: choice, then regex
  CHECK(e.message.find("structured_outputs.choice and structured_outputs.regex") != std::string::npos);
  CHECK(refusal_of(kind, R"("structured_outputs":{"json_object":true},"response_format":{"type":"json_object"})")
          .message.find("response_format and structured_outputs.json_object") != std::string::npos);
  // A constraint with ignore_eos is validate_request's refusal (test_openai_intake).
  CHECK(constraint_of(kind, R"("guided_regex":"a","ignore_eos":true)").kind == "regex");
}

TEST_CASE("bad vLLM constraint values are refused with the field and the problem", "[vllm]") {
  const auto kind = api_kind::chat;
  auto e = refusal_of(kind, R"("guided_regex":"(a")");
  CHECK(e.param == "guided_regex");
  CHECK_THAT(e.message, Catch::StartsWith("invalid guided_regex: ") && Catch::Contains("missing ')'"));
  e = refusal_of(kind, R"("guided_json":{"type":"string","pattern":"a+"})");
  CHECK(e.param == "guided_json");
  CHECK_THAT(e.message, Catch::Contains("unsupported keyword `pattern`"));
  CHECK_THAT(refusal_of(kind, R"("guided_json":"{not json")").message, Catch::Contains("not JSON"));
  CHECK(refusal_of(kind, R"("guided_json":3)").param == "guided_json");
  CHECK_THAT(refusal_of(kind, R"("guided_choice":[])").message, Catch::Contains("non-empty"));
  CHECK(refusal_of(kind, R"("guided_choice":["a",""])").param == "guided_choice");
  CHECK(refusal_of(kind, R"("guided_regex":["a"])").param == "guided_regex");
  CHECK_THAT(refusal_of(kind, R"("guided_grammar":"root ::= root \"a\" | \"b\"")").message, Catch::Contains("left-recursive"));
  e = refusal_of(kind, R"("structured_outputs":{"regex":"a(b"})");
  CHECK(e.param == "structured_outputs.regex");
  CHECK_THAT(e.message, Catch::StartsWith("invalid structured_outputs.regex: "));
  CHECK_THAT(refusal_of(kind, R"("structured_outputs":{"json":{"oneOf":[]}})").message, Catch::Contains("oneOf"));
  CHECK(refusal_of(kind, R"("structured_outputs":"regex")").param == "structured_outputs");
  CHECK(refusal_of(kind, R"("structured_outputs":{"regexp":"a"})").message == "unknown field structured_outputs.regexp");
  CHECK(refusal_of(kind, R"("structured_outputs":{"structural_tag":"{}"})").param == "structured_outputs.structural_tag");
  CHECK(refusal_of(kind, R"("structured_outputs":{"json_object":"yes"})").param == "structured_outputs.json_object");
  // options that would change which outputs are allowed are refused, never ignored
  CHECK(refusal_of(kind, R"("guided_json":{},"guided_whitespace_pattern":"[ ]*")").param == "guided_whitespace_pattern");
  CHECK(refusal_of(kind, R"("structured_outputs":{"json":{},"whitespace_pattern":" ?"})").param
        == "structured_outputs.whitespace_pattern");
  CHECK(refusal_of(kind, R"("structured_outputs":{"json":{},"disable_any_whitespace":true})").param
        == "structured_outputs.disable_any_whitespace");
  CHECK(refusal_of(kind, R"("structured_outputs":{"json":{},"disable_additional_properties":true})").param
        == "structured_outputs.disable_additional_properties");
  CHECK(refusal_of(kind, R"("guided_decoding_backend":1)").param == "guided_decoding_backend");
}

TEST_CASE("/tokenize encodes a prompt as a completion's prompt is encoded", "[vllm][tokenize]") {
  const auto r = tokenized(R"({"model":"m","prompt":"Hello world"})");
  CHECK(r["tokens"] == json(gpt2().encode("Hello world")));
  CHECK(r["count"] == 2);
  CHECK(r["max_model_len"] == 1024);
  CHECK_FALSE(r.contains("token_strs"));
  const auto s = tokenized(R"({"prompt":"Hello world","return_token_strs":true,"add_special_tokens":true})");
  CHECK(s["token_strs"] == json::array({"Hello", "\u0120world"}));  // vocab.json's spelling: space is U+0120
  CHECK(s["tokens"] == r["tokens"]);
  // GPT-2 adds no special tokens; a literal end-of-text is the special token, as in a prompt
  CHECK(tokenized(R"({"prompt":"Hello world","add_special_tokens":false})")["tokens"] == r["tokens"]);
  CHECK(tokenized(R"({"prompt":"<|endoftext|>"})")["tokens"] == json::array({gpt2().eos_id()}));
  CHECK(tokenized(R"({"prompt":""})")["count"] == 0);
  CHECK(token_spelling(gpt2(), gpt2().eos_id()) == "<|endoftext|>");
}

TEST_CASE("/tokenize renders messages with the chat endpoint's template", "[vllm][tokenize]") {
  const std::string messages = R"("messages":[{"role":"developer","content":"Be brief."},
    {"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]}])";
  const std::vector<proto::chat_message> as_chat{{proto::chat_role::system, "Be brief."},
                                                 {proto::chat_role::user, "Hi there"}};
  CHECK(tokenized("{" + messages + "}")["tokens"] == json(gpt2().encode(proto::render_chat_prompt(as_chat))));
  CHECK(tokenized("{" + messages + R"(,"add_generation_prompt":true})")["tokens"]
        == json(gpt2().encode(proto::render_chat_prompt(as_chat))));
  CHECK(tokenized("{" + messages + R"(,"add_generation_prompt":false})")["tokens"]
        == json(gpt2().encode("Be brief.\n\nUser: Hi there\n")));
  // the chat endpoint's refusals, with the same field names
  CHECK(tokenize_refused(R"({"messages":[{"role":"tool","content":"x"}]})").param == "messages[0].role");
  CHECK(tokenize_refused(R"({"messages":[]})").param == "messages");
}

TEST_CASE("/tokenize refuses what it cannot honour by name", "[vllm][tokenize]") {
  CHECK(tokenize_refused(R"({"prompt":"x","messages":[{"role":"user","content":"x"}]})").status == 400);
  CHECK_THAT(tokenize_refused(R"({"model":"m"})").message, Catch::Contains("prompt") && Catch::Contains("messages"));
  auto e = tokenize_refused(R"({"prompt":"x","continue_final_message":true})");
  CHECK(e.param == "continue_final_message");
  CHECK(e.message == "unknown or unsupported parameter: continue_final_message");
  CHECK(tokenize_refused(R"({"prompt":"x","add_generation_prompt":true})").param == "add_generation_prompt");
  CHECK(tokenize_refused(R"({"prompt":["x"]})").param == "prompt");
  CHECK(tokenize_refused(R"({"prompt":"x","add_special_tokens":"no"})").param == "add_special_tokens");
  CHECK(tokenize_refused(R"({"prompt":"x","return_token_strs":1})").param == "return_token_strs");
  CHECK(tokenize_refused(R"({"prompt":"x","model":7})").param == "model");
  CHECK(tokenize_refused(R"({"prompt":"x")").message == "the body is not valid JSON");
  CHECK(tokenize_refused(R"([1])").status == 400);
  e = std::get<api_error>(answer_tokenize(R"({"prompt":"0123456789"})", gpt2(), {1024, 9}));
  CHECK(e.code == "prompt_too_long");
  CHECK(e.status == 400);
  // null counts as absent; the model is handed to the gateway to check
  auto r = answer_tokenize(R"({"model":"shakespeare","prompt":"x","messages":null,"return_token_strs":null})", gpt2(),
                           {});
  REQUIRE(std::holds_alternative<tokenize_answer>(r));
  CHECK(std::get<tokenize_answer>(r).model == "shakespeare");
}

TEST_CASE("/detokenize decodes token ids and refuses ids outside the vocabulary", "[vllm][tokenize]") {
  const std::string text = "Once upon a time, na\xc3\xafve caf\xc3\xa9s.";
  const auto ids = gpt2().encode(text);
  auto r = answer_detokenize(json{{"model", "m"}, {"tokens", ids}}.dump(), gpt2());
  REQUIRE(std::holds_alternative<tokenize_answer>(r));
  CHECK(json::parse(std::get<tokenize_answer>(r).body) == json{{"prompt", text}});
  CHECK(std::get<tokenize_answer>(r).model == "m");
  CHECK(std::get<tokenize_answer>(answer_detokenize(R"({"tokens":[]})", gpt2())).body == R"({"prompt":""})");
  // a list that ends inside a character: U+FFFD, as generated text shows it
  const auto cut = gpt2().encode("\xf0\x9f\x98\x80");  // U+1F600: its 4 bytes in more than one token
  REQUIRE(cut.size() > 1);
  CHECK(json::parse(std::get<tokenize_answer>(answer_detokenize(json{{"tokens", json::array({cut[0]})}}.dump(), gpt2())).body)["prompt"]
        == "\xef\xbf\xbd");
  auto e = detokenize_refused(R"({"tokens":[15496, 50257]})");
  CHECK(e.param == "tokens");
  CHECK(e.message == "tokens[1]: token id 50257 is outside the vocabulary [0, 50257)");
  CHECK_THAT(detokenize_refused(R"({"tokens":[-1]})").message, Catch::Contains("token id -1"));
  CHECK_THAT(detokenize_refused(R"({"tokens":[18446744073709551615]})").message, Catch::Contains("18446744073709551615"));
  CHECK_THAT(detokenize_refused(R"({"tokens":[1.5]})").message, Catch::Contains("tokens[0] must be a token id"));
  CHECK(detokenize_refused(R"({"tokens":"15496"})").param == "tokens");
  CHECK(detokenize_refused(R"({})").param == "tokens");
  CHECK(detokenize_refused(R"({"tokens":[1],"skip_special_tokens":true})").param == "skip_special_tokens");
}
