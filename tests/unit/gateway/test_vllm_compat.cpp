// vLLM's spellings on lorafleet's HTTP API (gateway/constraint_fields): guided_* and
// structured_outputs map onto the same constraints as response_format and the regex / choice /
// grammar extensions. Pure.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gateway/openai_request.hpp"

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
  const auto& m = std::get<openai_request>(r).base;
  return {m.constraint_kind, m.constraint};
}

api_error refusal_of(api_kind kind, const std::string& extra) {
  auto r = parse_openai_request(kind, body_with(kind, extra));
  REQUIRE(std::holds_alternative<api_error>(r));
  const auto e = std::get<api_error>(r);
  CHECK(e.status == 400);
  CHECK(e.code == "invalid_request");
  return e;
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
  CHECK(refusal_of(kind, R"("guided_regex":"a","ignore_eos":true)").param == "ignore_eos");
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
