// The OpenAI request parser and reply formats (gateway/openai/openai_request, openai_response): pure.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gateway/common/host_port.hpp"
#include "gateway/openai/openai_request.hpp"
#include "gateway/openai/openai_response.hpp"

using namespace lf;
using namespace lf::gateway;
using json = nlohmann::json;

namespace {

openai_request ok(api_kind kind, const std::string& body) {
  auto r = parse_openai_request(kind, body);
  if (auto* e = std::get_if<api_error>(&r))
    FAIL("refused: " << e->message);
  return std::get<openai_request>(r);
}

api_error refused(api_kind kind, const std::string& body) {
  auto r = parse_openai_request(kind, body);
  REQUIRE(std::holds_alternative<api_error>(r));
  return std::get<api_error>(r);
}

std::string bytes_of(std::int32_t t) { return "<" + std::to_string(t) + ">"; }

std::vector<json> sse_events(const std::string& s) {
  std::vector<json> out;
  std::size_t at = 0;
  while ((at = s.find("data: ", at)) != std::string::npos) {
    const auto end = s.find("\n\n", at);
    const auto payload = s.substr(at + 6, end - at - 6);
    out.push_back(payload == "[DONE]" ? json("[DONE]") : json::parse(payload));
    at = end;
  }
  return out;
}

} // namespace

TEST_CASE("completion bodies read into the request draft's fields") {
  auto r = ok(api_kind::completion, R"({"model":"m","prompt":"Hi","max_tokens":7,"temperature":0,"top_p":0.5,
    "seed":3,"stop":"\n","n":2,"stream":true,"stream_options":{"include_usage":true},"logprobs":2,
    "top_k":5,"repetition_penalty":1.2,"ignore_eos":true,"user":"alice","deadline_ms":900,"ttft_ms":300})");
  CHECK(r.model == "m");
  REQUIRE(r.prompts.size() == 1);
  CHECK(r.prompts[0].text == "Hi");
  CHECK(r.base.params.max_tokens == 7);
  CHECK(r.max_tokens_given);
  CHECK(r.base.params.temperature == 0.0f);
  CHECK(r.base.params.top_p == 0.5f);
  CHECK(r.base.params.seed == std::optional<std::uint64_t>(3));
  CHECK(r.base.params.stop == std::vector<std::string>{"\n"});
  CHECK(r.n == 2);
  CHECK(r.stream);
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.logprobs);
  CHECK(r.top_logprobs == 2);
  CHECK(r.base.params.top_k == 5);
  CHECK(r.base.params.repetition_penalty == 1.2f);
  CHECK(r.base.params.ignore_eos);
  CHECK(r.user == "alice");
  CHECK(r.base.tenant == "alice");  // the end user is the tenant
  CHECK(r.base.timeout_ms == 900);
  CHECK(r.base.ttft_ms == 300);
  CHECK(r.base.speculative == -1);  // the worker's policy
}

TEST_CASE("speculative: on, off, auto or a proposal length") {
  const auto body = [](const std::string& v) { return R"({"model":"m","prompt":"x","speculative":)" + v + "}"; };
  CHECK(ok(api_kind::completion, body("true")).base.speculative == -2);
  CHECK(ok(api_kind::completion, body("\"on\"")).base.speculative == -2);
  CHECK(ok(api_kind::completion, body("false")).base.speculative == 0);
  CHECK(ok(api_kind::completion, body("\"off\"")).base.speculative == 0);
  CHECK(ok(api_kind::completion, body("\"auto\"")).base.speculative == -1);
  CHECK(ok(api_kind::chat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"speculative":8})")
          .base.speculative == 8);
  for (const auto* bad : {"17", "-1", "\"maybe\"", "1.5", "[]"}) {
    auto e = refused(api_kind::completion, body(bad));
    CHECK(e.param == "speculative");
    CHECK_THAT(e.message, Catch::Matchers::Contains("speculative must be"));
  }
}

TEST_CASE("user names the tenant, as read: its rules are validate_request's (test_openai_intake)") {
  const auto body = [](const std::string& user) {
    return R"({"model":"m","prompt":"x","user":)" + json(user).dump() + "}";
  };
  CHECK(ok(api_kind::completion, body(std::string(65, 'u'))).base.tenant == std::string(65, 'u'));
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","user":7})").param == "user");
}

TEST_CASE("prompts may be strings, arrays of strings, token ids or arrays of token ids") {
  CHECK(ok(api_kind::completion, R"({"model":"m","prompt":["a","b"]})").prompts.size() == 2);
  auto t = ok(api_kind::completion, R"({"model":"m","prompt":[1,2,3]})");
  REQUIRE(t.prompts.size() == 1);
  CHECK(t.prompts[0].is_tokens);
  CHECK(t.prompts[0].tokens == std::vector<std::int32_t>{1, 2, 3});
  CHECK(ok(api_kind::completion, R"({"model":"m","prompt":[[1],[2,3]]})").prompts.size() == 2);
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":[-1]})").param == "prompt");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":{}})").param == "prompt");
  CHECK(refused(api_kind::completion, R"({"model":"m"})").param == "prompt");
}

TEST_CASE("chat messages keep their roles, developer is a system message, text parts concatenate") {
  auto r = ok(api_kind::chat, R"({"model":"m","messages":[{"role":"developer","content":"Be brief."},
    {"role":"user","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},
    {"role":"assistant","content":null}],"max_completion_tokens":9,"logprobs":true,"top_logprobs":3})");
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[0].role == proto::chat_role::system);
  CHECK(r.messages[1].content == "Hello");
  CHECK(r.messages[2].role == proto::chat_role::assistant);
  REQUIRE(r.prompts.size() == 1);  // the conversation rendered: what is tokenized
  CHECK(r.prompts[0].text == proto::render_chat_prompt(r.messages));
  CHECK(r.base.params.max_tokens == 9);
  CHECK(r.logprobs);
  CHECK(r.top_logprobs == 3);
  CHECK(refused(api_kind::chat, R"({"model":"m","messages":[{"role":"tool","content":"x"}]})").param
        == "messages[0].role");
  CHECK(refused(api_kind::chat, R"({"model":"m","messages":[{"role":"user","content":"x","name":"bob"}]})").param
        == "messages[0].name");
  CHECK(refused(api_kind::chat, R"({"model":"m","messages":[]})").param == "messages");
}

TEST_CASE("parameters lorafleet cannot honour are refused by name, never ignored") {
  const std::string chat = R"("model":"m","messages":[{"role":"user","content":"x"}])";
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","echo":true,"logprobs":1})").param == "echo");
  CHECK(refused(api_kind::chat, "{" + chat + R"(,"echo":true})").param == "echo");  // OpenAI's chat has none
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","best_of":3})").param == "best_of");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","suffix":"y"})").param == "suffix");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","frequency_penalty":0.5})").param
        == "frequency_penalty");
  CHECK(refused(api_kind::chat, "{" + chat + R"(,"tools":[{}]})").param == "tools");
  CHECK(refused(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"xml"}})").param
        == "response_format");
  CHECK(refused(api_kind::chat, "{" + chat + R"(,"messages2":1})").message.find("unknown") != std::string::npos);
  // Neutral values pass.
  ok(api_kind::completion, R"({"model":"m","prompt":"x","echo":false,"frequency_penalty":0,"logit_bias":{},
     "best_of":1,"presence_penalty":null})");
  ok(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"text"},"tool_choice":"none","store":false})");
}

TEST_CASE("logit_bias maps token ids to biases in [-100, 100], refused by name otherwise") {
  auto r = ok(api_kind::completion, R"({"model":"m","prompt":"x","logit_bias":{"50256":-100,"13":2.5,"7":100}})");
  CHECK(r.base.params.logit_bias == std::map<std::int32_t, float>{{7, 100.0f}, {13, 2.5f}, {50256, -100.0f}});
  auto c = ok(api_kind::chat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"logit_bias":{"1":-1}})");
  CHECK(c.base.params.logit_bias.at(1) == -1.0f);
  CHECK(c.base.params.stop == std::vector<std::string>{"\nUser:", "\nSystem:"});  // a chat's stops
  for (const char* bad : {R"("x":1)", R"("-1":1)", R"("1.5":1)", R"("":1)", R"("99999999999":1)", R"("1":"5")",
                          R"("1":null)"}) {
    auto e = refused(api_kind::completion, std::string(R"({"model":"m","prompt":"x","logit_bias":{)") + bad + "}}");
    CHECK(e.param == "logit_bias");
    CHECK(e.status == 400);
  }
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","logit_bias":[1]})").param == "logit_bias");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","logit_bias":{"1":1,"01":2}})").message.find("twice")
        != std::string::npos);
  // A bias's range and the entries' count are validate_request's (test_openai_intake).
  CHECK(ok(api_kind::completion, R"({"model":"m","prompt":"x","logit_bias":{"1":100.5}})").base.params.logit_bias.at(1)
        == 100.5f);
  // The router's vocabulary check names the field too.
  CHECK(to_api_error(serve_errc::invalid_request, "logit_bias token id 60000 is outside the vocabulary").param
        == "logit_bias");
}

TEST_CASE("echo: allowed on completions, max_tokens 0 only with it") {
  auto r = ok(api_kind::completion, R"({"model":"m","prompt":"x","echo":true,"max_tokens":0})");
  CHECK(r.echo);
  CHECK(r.base.params.max_tokens == 0);  // without echo, validate_request refuses 0 (test_openai_intake)
}

TEST_CASE("an echoed completion starts with its prompt, streamed as each choice's first chunk") {
  auto req = ok(api_kind::completion, R"({"model":"m","prompt":"Hi","echo":true,"n":2,"stream":true})");
  openai_reply r(req, "cmpl-1", 100, 2, bytes_of);
  r.echo(0, "Hi");
  r.echo(1, "Hi");
  auto a = sse_events(r.on_token(0, 7, " there", nullptr));
  REQUIRE(a.size() == 2);
  CHECK(a[0]["choices"][0]["text"] == "Hi");
  CHECK(a[0]["choices"][0]["index"] == 0);
  CHECK(a[1]["choices"][0]["text"] == " there");
  CHECK(sse_events(r.on_token(0, 8, "!", nullptr)).size() == 1);  // the prompt only once
  auto d = sse_events(r.on_done(1, "length", {1, 0, 0}));
  REQUIRE(d.size() == 2);
  CHECK(d[0]["choices"][0]["text"] == "Hi");
  CHECK(d[0]["choices"][0]["index"] == 1);
  CHECK(d[1]["choices"][0]["finish_reason"] == "length");

  auto whole = ok(api_kind::completion, R"({"model":"m","prompt":"Hi","echo":true})");
  openai_reply w(whole, "cmpl-2", 100, 1, bytes_of);
  w.echo(0, "Hi");
  CHECK(w.on_token(0, 7, " there", nullptr).empty());
  w.on_done(0, "eos", {1, 1, 0});
  CHECK(json::parse(w.body())["choices"][0]["text"] == "Hi there");
}

TEST_CASE("bad values and bad JSON are 400s naming the field") {
  auto e = refused(api_kind::completion, R"({"model":"m","prompt":"x","max_tokens":-1})");
  CHECK(e.status == 400);
  CHECK(e.param == "max_tokens");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","max_tokens":1.5})").param == "max_tokens");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","n":17})").param == "n");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","seed":-1})").param == "seed");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","temperature":"hot"})").param == "temperature");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","stream_options":{"include_usage":true}})").param
        == "stream_options");
  CHECK(refused(api_kind::completion, R"({"prompt":"x"})").param == "model");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":["a","b","c","d","e"],"n":16})").param == "prompt");
  CHECK(refused(api_kind::completion, "{not json").message.find("not valid JSON") != std::string::npos);
  CHECK(refused(api_kind::completion, "[1]").status == 400);
}

TEST_CASE("serve errors map to OpenAI statuses") {
  CHECK(to_api_error(serve_errc::invalid_request, "x").status == 400);
  CHECK(to_api_error(serve_errc::prompt_too_long, "x").status == 400);
  CHECK(to_api_error(serve_errc::unknown_adapter, "x").status == 404);
  CHECK(to_api_error(serve_errc::overloaded, "x").status == 429);
  CHECK(to_api_error(serve_errc::shutting_down, "x").status == 503);
  CHECK(to_api_error(serve_errc::deadline_unmeetable, "x").status == 503);
  CHECK(to_api_error(serve_errc::deadline_unmeetable, "x").code == "deadline_unmeetable");
  // The SDKs map 401 and 403 to AuthenticationError and PermissionDeniedError.
  CHECK(to_api_error(serve_errc::unauthenticated, "x").status == 401);
  CHECK(to_api_error(serve_errc::unauthenticated, "x").type == "authentication_error");
  CHECK(to_api_error(serve_errc::forbidden, "x").status == 403);
  CHECK(to_api_error(serve_errc::forbidden, "x").code == "forbidden");
  CHECK(to_api_error(serve_errc::timeout, "x").status == 504);
  CHECK(to_api_error(serve_errc::internal, "x").status == 500);
  auto body = json::parse(error_body(to_api_error(serve_errc::unknown_adapter, "no such adapter")));
  CHECK(body["error"]["message"] == "no such adapter");
  CHECK(body["error"]["type"] == "not_found_error");
  CHECK(body["error"]["code"] == "unknown_adapter");
  CHECK(body["error"]["param"].is_null());
}

TEST_CASE("a streamed chat: role first, one chunk per token, finish, usage, [DONE]") {
  auto req = ok(api_kind::chat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"n":2,"stream":true,
    "stream_options":{"include_usage":true}})");
  openai_reply r(req, "chatcmpl-1", 100, 2, bytes_of);
  auto a = sse_events(r.on_token(0, 7, "Hi", nullptr));
  REQUIRE(a.size() == 1);
  CHECK(a[0]["object"] == "chat.completion.chunk");
  CHECK(a[0]["choices"][0]["delta"]["role"] == "assistant");
  CHECK(a[0]["choices"][0]["delta"]["content"] == "Hi");
  CHECK(r.on_token(0, 8, "", nullptr).empty());  // nothing final yet: no chunk
  auto b = sse_events(r.on_token(0, 9, " there", nullptr));
  CHECK_FALSE(b[0]["choices"][0]["delta"].contains("role"));
  auto d0 = sse_events(r.on_done(0, "eos", {5, 3, 2}));
  CHECK(d0[0]["choices"][0]["finish_reason"] == "stop");
  CHECK_FALSE(r.all_done());
  auto d1 = sse_events(r.on_done(1, "length", {5, 4, 2}));
  CHECK(d1[0]["choices"][0]["index"] == 1);
  CHECK(d1[0]["choices"][0]["delta"]["role"] == "assistant");  // its first chunk
  CHECK(d1[0]["choices"][0]["finish_reason"] == "length");
  REQUIRE(r.all_done());
  auto end = sse_events(r.stream_end());
  REQUIRE(end.size() == 2);
  CHECK(end[0]["choices"].empty());
  CHECK(end[0]["usage"]["prompt_tokens"] == 5);  // one prompt, n = 2: counted once
  CHECK(end[0]["usage"]["completion_tokens"] == 7);
  CHECK(end[0]["usage"]["total_tokens"] == 12);
  CHECK(end[0]["usage"]["prompt_tokens_details"]["cached_tokens"] == 2);
  CHECK(end[1] == "[DONE]");
}

TEST_CASE("a non-streamed completion with logprobs in OpenAI's legacy layout") {
  auto req = ok(api_kind::completion, R"({"model":"m","prompt":["a","b"],"logprobs":2})");
  openai_reply r(req, "cmpl-1", 100, 2, bytes_of);
  token_logprobs lp{-0.5f, {4, 9}, {-0.25f, -1.5f}};
  CHECK(r.on_token(0, 4, "ab", &lp).empty());
  CHECK(r.on_token(0, 9, "c", &lp).empty());
  r.on_done(0, "length", {1, 2, 0});
  r.on_token(1, 4, "x", &lp);
  r.on_done(1, "stop", {2, 1, 0});
  auto body = json::parse(r.body());
  CHECK(body["object"] == "text_completion");
  REQUIRE(body["choices"].size() == 2);
  const auto& c0 = body["choices"][0];
  CHECK(c0["text"] == "abc");
  CHECK(c0["logprobs"]["tokens"] == json({"<4>", "<9>"}));
  CHECK(c0["logprobs"]["token_logprobs"][0] == -0.5);
  CHECK(c0["logprobs"]["text_offset"] == json({0, 2}));
  CHECK(c0["logprobs"]["top_logprobs"][0]["<4>"] == -0.25);
  CHECK(body["usage"]["prompt_tokens"] == 3);  // two prompts, each once
  CHECK(body["usage"]["completion_tokens"] == 3);
  CHECK(body["choices"][1]["finish_reason"] == "stop");
}

TEST_CASE("a stream that fails after it started ends with an error event and [DONE]") {
  auto ev = sse_events(openai_reply::stream_error(to_api_error(serve_errc::worker_lost, "lost")));
  REQUIRE(ev.size() == 2);
  CHECK(ev[0]["error"]["code"] == "worker_lost");
  CHECK(ev[1] == "[DONE]");
}

TEST_CASE("host:port addresses parse strictly, with the reason when they do not") {
  auto a = parse_host_port("127.0.0.1:8000");
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 8000);
  auto v6 = parse_host_port("[::1]:0");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 0);
  std::string why;
  CHECK_FALSE(parse_host_port("8000", &why));
  CHECK(why.find("HOST:PORT") != std::string::npos);
  CHECK_FALSE(parse_host_port("h:80x", &why));
  CHECK(why.find("port must be a number") != std::string::npos);
  CHECK_FALSE(parse_host_port("h:65536"));
  CHECK_FALSE(parse_host_port("h:"));
  CHECK_FALSE(parse_host_port("h:-1"));
  CHECK_FALSE(parse_host_port("tcp://h:80", &why));
  CHECK(why.find("without a scheme") != std::string::npos);
  CHECK_FALSE(parse_host_port("::1:80"));
}

TEST_CASE("structured output: response_format and the regex, choice and grammar extensions") {
  const std::string chat = R"("model":"m","messages":[{"role":"user","content":"x"}])";
  auto j = ok(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"json_object"}})");
  CHECK(j.base.params.constraint.kind == "json_object");
  CHECK(j.base.params.constraint.text.empty());
  auto s = ok(api_kind::completion, R"({"model":"m","prompt":"x","response_format":{"type":"json_schema",
    "json_schema":{"name":"p","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}},
    "required":["a"],"additionalProperties":false}}}})");
  CHECK(s.base.params.constraint.kind == "json_schema");
  CHECK(json::parse(s.base.params.constraint.text)["required"][0] == "a");
  CHECK(ok(api_kind::completion, R"({"model":"m","prompt":"x","regex":"[a-z]+"})").base.params.constraint.text == "[a-z]+");
  CHECK(ok(api_kind::chat, "{" + chat + R"(,"choice":["a","b"]})").base.params.constraint.text == R"(["a","b"])");
  CHECK(ok(api_kind::chat, "{" + chat + R"(,"grammar":"root ::= \"x\""})").base.params.constraint.kind == "grammar");
  CHECK(ok(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"text"}})").base.params.constraint.kind.empty());
  // Refusals name the field and the problem.
  auto e = refused(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"json_schema","json_schema":
    {"name":"p","schema":{"type":"string","pattern":"a"}}}})");
  CHECK(e.param == "response_format");
  CHECK_THAT(e.message, Catch::Contains("unsupported keyword `pattern`"));
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","regex":"(a"})").param == "regex");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","grammar":"root ::= nope"})").param == "grammar");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","choice":[]})").param == "choice");
  CHECK(refused(api_kind::completion, R"({"model":"m","prompt":"x","choice":["a"],"regex":"a"})").param == "choice");
  CHECK(refused(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"json_schema"}})").param
        == "response_format");
  CHECK(refused(api_kind::chat, "{" + chat + R"(,"response_format":{"type":"json_object","x":1}})").param
        == "response_format");
}
