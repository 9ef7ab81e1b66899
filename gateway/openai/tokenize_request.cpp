#include "gateway/openai/tokenize_request.hpp"

#include <nlohmann/json.hpp>

#include "core/utf8.hpp"
#include "text/bpe.hpp"
#include "text/tokenizer.hpp"

namespace lf::gateway {

using json = nlohmann::json;

// A named namespace around the file-local functions: a unity batch compiles this file with
// openai_request.cpp.
namespace tokenize_reading {
namespace {

api_error bad(std::string param, std::string message) {
  return {400, std::move(message), "invalid_request_error", std::move(param), "invalid_request"};
}

/// The body as a JSON object whose keys are all in `known` (null values count as absent).
std::variant<json, api_error> object_of(std::string_view text, std::initializer_list<const char*> known) {
  auto body = json::parse(text.begin(), text.end(), nullptr, false);
  if (body.is_discarded())
    return bad("", "the body is not valid JSON");
  if (!body.is_object())
    return bad("", "the body must be a JSON object");
  for (const auto& [k, v] : body.items()) {
    bool ok = v.is_null();
    for (const char* name : known)
      ok = ok || k == name;
    if (!ok)
      return bad(k, "unknown or unsupported parameter: " + k);
  }
  for (auto it = body.begin(); it != body.end();)
    it = it->is_null() ? body.erase(it) : std::next(it);
  return body;
}

/// `body[key]` as a bool (absent: `otherwise`), or the error naming it.
std::variant<bool, api_error> flag(const json& body, const char* key, bool otherwise) {
  if (!body.contains(key))
    return otherwise;
  if (!body.at(key).is_boolean())
    return bad(key, std::string(key) + " must be true or false");
  return body.at(key).get<bool>();
}

/// The model the body names, or "" (the error: not a string).
std::variant<std::string, api_error> model_of(const json& body) {
  if (!body.contains("model"))
    return std::string();
  if (!body.at("model").is_string())
    return bad("model", "model must be a string (the base model's name or an adapter's)");
  return body.at("model").get<std::string>();
}

/// The text /tokenize encodes: `prompt` as given, or `messages` rendered as the chat endpoint
/// renders them (the "Assistant:" that starts the answer only with add_generation_prompt).
std::variant<std::string, api_error> text_of(const json& body) {
  const bool chat = body.contains("messages");
  if (chat == body.contains("prompt"))
    return bad(chat ? "messages" : "prompt", "give either prompt (a string) or messages (a chat), not both");
  if (!chat) {
    if (body.contains("add_generation_prompt"))
      return bad("add_generation_prompt", "add_generation_prompt applies to messages only");
    if (!body.at("prompt").is_string())
      return bad("prompt", "prompt must be a string");
    return body.at("prompt").get<std::string>();
  }
  const auto generation = flag(body, "add_generation_prompt", true);
  if (const auto* e = std::get_if<api_error>(&generation))
    return *e;
  auto messages = parse_chat_messages(body);
  if (auto* e = std::get_if<api_error>(&messages))
    return *e;
  return proto::render_chat_prompt(std::get<std::vector<proto::chat_message>>(messages), std::get<bool>(generation));
}

} // namespace
} // namespace tokenize_reading

std::variant<tokenize_answer, api_error> answer_tokenize(std::string_view text, const text::tokenizer& tok,
                                                         const tokenize_limits& limits) {
  using namespace tokenize_reading;
  auto parsed = object_of(text, {"model", "prompt", "messages", "add_generation_prompt", "add_special_tokens",
                                 "return_token_strs"});
  if (auto* e = std::get_if<api_error>(&parsed))
    return *e;
  const auto& body = std::get<json>(parsed);
  auto model = model_of(body);
  auto special = flag(body, "add_special_tokens", true);  // GPT-2 adds none either way
  auto strs = flag(body, "return_token_strs", false);
  auto prompt = text_of(body);
  for (const api_error* e : {std::get_if<api_error>(&model), std::get_if<api_error>(&special),
                             std::get_if<api_error>(&strs), std::get_if<api_error>(&prompt)})
    if (e != nullptr)
      return *e;
  const auto& in = std::get<std::string>(prompt);
  if (in.size() > limits.max_prompt_bytes)
    return to_api_error(serve_errc::prompt_too_long, "prompt is " + std::to_string(in.size()) + " bytes; the limit is "
                                                       + std::to_string(limits.max_prompt_bytes));
  const auto ids = tok.encode(in);
  json reply{{"count", ids.size()}, {"max_model_len", limits.max_model_len}, {"tokens", ids}};
  if (std::get<bool>(strs)) {
    auto& out = reply["token_strs"] = json::array();
    for (auto id : ids)
      out.push_back(token_spelling(tok, id));
  }
  return tokenize_answer{std::get<std::string>(model), reply.dump()};
}

std::variant<tokenize_answer, api_error> answer_detokenize(std::string_view text, const text::tokenizer& tok) {
  using namespace tokenize_reading;
  auto parsed = object_of(text, {"model", "tokens"});
  if (auto* e = std::get_if<api_error>(&parsed))
    return *e;
  const auto& body = std::get<json>(parsed);
  auto model = model_of(body);
  if (auto* e = std::get_if<api_error>(&model))
    return *e;
  if (!body.contains("tokens") || !body.at("tokens").is_array())
    return bad("tokens", "tokens must be an array of token ids");
  std::vector<std::int32_t> ids;
  const auto& list = body.at("tokens");
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& v = list[i];
    const auto at = "tokens[" + std::to_string(i) + "]";
    if (!v.is_number_integer())
      return bad("tokens", at + " must be a token id (an integer; got " + v.dump() + ")");
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() >= static_cast<std::uint64_t>(vocab)
                               : v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= vocab)
      return bad("tokens", at + ": token id " + v.dump() + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    ids.push_back(static_cast<std::int32_t>(v.get<std::int64_t>()));
  }
  return tokenize_answer{std::get<std::string>(model), json{{"prompt", replace_invalid_utf8(tok.decode(ids))}}.dump()};
}

std::string token_spelling(const text::tokenizer& tok, std::int32_t id) {
  std::string out;
  for (const char byte : tok.decode_token(id))
    append_utf8(out, text::byte_to_unicode(static_cast<std::uint8_t>(byte)));
  return out;
}

} // namespace lf::gateway
