#include "gateway/openai/openai_request.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/request.hpp"
#include "gateway/openai/constraint_fields.hpp"
#include "proto/protocol.hpp"

namespace lf::gateway {

using json = nlohmann::json;

namespace {

/// Thrown inside the parser; parse_openai_request turns it into its api_error.
struct bad_field {
  std::string param, message;
  serve_errc code = serve_errc::invalid_request;
};

[[noreturn]] void fail(const std::string& param, const std::string& why) { throw bad_field{param, why}; }

/// What an integer field must fit (the draft's int); its range is validate_request's.
constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();

/// "FIELD is N bytes; the limit is L" (the ZeroMQ protocol's wording for the same limits).
std::string over_bytes(const std::string& field, std::size_t got, std::size_t limit) {
  return field + " is " + std::to_string(got) + " bytes; the limit is " + std::to_string(limit);
}

[[noreturn]] void unsupported(const std::string& param, const std::string& what) {
  fail(param, what + " is not supported by lorafleet");
}

bool absent(const json& o, const char* key) { return !o.contains(key) || o.at(key).is_null(); }

std::int64_t get_int(const json& o, const char* key, std::int64_t lo, std::int64_t hi) {
  const auto& v = o.at(key);
  if (!v.is_number_integer())
    fail(key, std::string(key) + " must be an integer");
  const auto x = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                   ? hi + 1
                   : v.get<std::int64_t>();
  if (x < lo || x > hi)
    fail(key, std::string(key) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got "
                + v.dump() + ")");
  return x;
}

double get_number(const json& o, const char* key) {
  const auto& v = o.at(key);
  if (!v.is_number())
    fail(key, std::string(key) + " must be a number");
  return v.get<double>();
}

bool get_bool(const json& o, const char* key) {
  const auto& v = o.at(key);
  if (!v.is_boolean())
    fail(key, std::string(key) + " must be true or false");
  return v.get<bool>();
}

/// `speculative`: true / "on" (-2), false / "off" (0), "auto" (absent: the worker's policy) or
/// the most tokens to propose per step, 0 to max_speculative.
std::optional<std::int32_t> get_speculative(const json& o) {
  const auto& v = o.at("speculative");
  if (v.is_boolean())
    return v.get<bool>() ? -2 : 0;
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "on" || s == "off" || s == "auto")
      return s == "on" ? std::optional<std::int32_t>(-2) : s == "off" ? std::optional<std::int32_t>(0) : std::nullopt;
  } else if (v.is_number_integer()) {
    return static_cast<std::int32_t>(get_int(o, "speculative", 0, max_speculative));
  }
  fail("speculative", "speculative must be true, false, \"on\", \"off\", \"auto\" or an integer in [0, "
                        + std::to_string(max_speculative) + "]");
}

std::string get_string(const json& o, const char* key) {
  const auto& v = o.at(key);
  if (!v.is_string())
    fail(key, std::string(key) + " must be a string");
  return v.get<std::string>();
}

std::vector<std::int32_t> token_list(const json& v, const std::string& param) {
  std::vector<std::int32_t> out;
  for (const auto& t : v) {
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0 || t.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      fail(param, param + " must hold token ids (integers >= 0)");
    out.push_back(static_cast<std::int32_t>(t.get<std::int64_t>()));
  }
  if (out.empty())
    fail(param, param + " must not be empty");
  return out;
}

std::vector<prompt_input> read_prompts(const json& body) {
  if (absent(body, "prompt"))
    fail("prompt", "prompt is required");
  const auto& p = body.at("prompt");
  std::vector<prompt_input> out;
  if (p.is_string()) {
    out.push_back({p.get<std::string>(), {}, false});
  } else if (p.is_array() && !p.empty() && p.front().is_number()) {
    out.push_back({{}, token_list(p, "prompt"), true});
  } else if (p.is_array() && !p.empty()) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const auto name = "prompt[" + std::to_string(i) + "]";
      if (p[i].is_string())
        out.push_back({p[i].get<std::string>(), {}, false});
      else if (p[i].is_array())
        out.push_back({{}, token_list(p[i], name), true});
      else
        fail("prompt", name + " must be a string or an array of token ids");
    }
  } else {
    fail("prompt", "prompt must be a string, an array of strings, or token ids");
  }
  for (const auto& in : out) {
    if (!in.is_tokens && in.text.empty())
      fail("prompt", "prompt must not be empty");
    if (in.text.size() > proto::max_prompt_bytes)
      fail("prompt", over_bytes("prompt", in.text.size(), proto::max_prompt_bytes));
  }
  return out;
}

std::vector<proto::chat_message> read_messages(const json& body) {
  if (absent(body, "messages") || !body.at("messages").is_array() || body.at("messages").empty())
    fail("messages", "messages must be a non-empty array");
  std::vector<proto::chat_message> out;
  const auto& ms = body.at("messages");
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto at = "messages[" + std::to_string(i) + "]";
    const auto& m = ms[i];
    if (!m.is_object() || absent(m, "role") || !m.at("role").is_string())
      fail(at, at + " must be an object with a role");
    for (const auto& [k, v] : m.items())
      if (k != "role" && k != "content" && !v.is_null())
        unsupported(at + "." + k, "a message's `" + k + "`");
    const auto role = m.at("role").get<std::string>();
    proto::chat_message cm;
    if (role == "system" || role == "developer")
      cm.role = proto::chat_role::system;
    else if (role == "user")
      cm.role = proto::chat_role::user;
    else if (role == "assistant")
      cm.role = proto::chat_role::assistant;
    else
      fail(at + ".role", at + ".role must be system, developer, user or assistant (got \"" + role + "\")");
    const auto content = m.contains("content") ? m.at("content") : json();
    if (content.is_string()) {
      cm.content = content.get<std::string>();
    } else if (content.is_array()) {
      for (const auto& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part.at("text").is_string())
          unsupported(at + ".content", "a content part other than {\"type\": \"text\", \"text\": ...}");
        cm.content += part.at("text").get<std::string>();
      }
    } else if (!(content.is_null() && cm.role == proto::chat_role::assistant)) {
      fail(at + ".content", at + ".content must be a string or an array of text parts");
    }
    out.push_back(std::move(cm));
  }
  return out;
}

void read_stop(const json& body, std::vector<std::string>& stop) {
  if (absent(body, "stop"))
    return;
  const auto& s = body.at("stop");
  if (s.is_string()) {
    stop.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    for (const auto& x : s) {
      if (!x.is_string())
        fail("stop", "stop must be a string or an array of strings");
      stop.push_back(x.get<std::string>());
    }
  } else {
    fail("stop", "stop must be a string or an array of strings");
  }
}

/// OpenAI fields lorafleet accepts only at their neutral value.
void refuse_non_neutral(const json& body) {
  for (const char* k : {"frequency_penalty", "presence_penalty"})
    if (!absent(body, k) && !(body.at(k).is_number() && body.at(k).get<double>() == 0.0))
      unsupported(k, std::string(k) + " other than 0 (use the `repetition_penalty` extension)");
}

/// OpenAI's logit_bias: an object from token ids (as strings: JSON keys) to numbers. The biases'
/// range, the entries' count and ids beyond the vocabulary are validate_request's.
std::map<std::int32_t, float> read_logit_bias(const json& body) {
  std::map<std::int32_t, float> out;
  if (absent(body, "logit_bias"))
    return out;
  const auto& b = body.at("logit_bias");
  if (!b.is_object())
    fail("logit_bias", "logit_bias must be an object mapping token ids to biases in [-100, 100]");
  for (const auto& [k, v] : b.items()) {
    const bool digits = !k.empty() && k.size() <= 10 && k.find_first_not_of("0123456789") == std::string::npos;
    const auto id = digits ? std::stoll(k) : -1;
    if (id < 0 || id > std::numeric_limits<std::int32_t>::max())
      fail("logit_bias", "logit_bias keys must be token ids (decimal integers >= 0; got \"" + k.substr(0, 32) + "\")");
    if (!v.is_number())
      fail("logit_bias", "logit_bias[\"" + k + "\"] must be a number in [-100, 100] (got " + v.dump() + ")");
    if (!out.emplace(static_cast<std::int32_t>(id), static_cast<float>(v.get<double>())).second)
      fail("logit_bias", "logit_bias names token " + std::to_string(id) + " twice");
  }
  return out;
}

const std::set<std::string>& known_keys(api_kind kind) {
  static const std::set<std::string> common = [] {
    std::set<std::string> s{
      "model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "seed", "user",
      "logprobs", "frequency_penalty", "presence_penalty", "logit_bias",
      // lorafleet's extensions
      "top_k", "repetition_penalty", "ignore_eos", "deadline_ms", "ttft_ms", "speculative"};
    // response_format, the constraint extensions and vLLM's spellings (constraint_fields.hpp)
    s.insert(constraint_keys().begin(), constraint_keys().end());
    return s;
  }();
  static const std::set<std::string> completion = [] {
    auto s = common;
    s.insert({"prompt", "echo", "best_of", "suffix"});
    return s;
  }();
  static const std::set<std::string> chat = [] {
    auto s = common;
    s.insert({"messages", "max_completion_tokens", "top_logprobs", "store", "service_tier",
              "tool_choice", "modalities"});
    return s;
  }();
  return kind == api_kind::chat ? chat : completion;
}

void read_kind_specific(api_kind kind, const json& body, openai_request& r) {
  if (kind == api_kind::completion) {
    r.prompts = read_prompts(body);
    if (!absent(body, "logprobs")) {
      r.top_logprobs = static_cast<int>(get_int(body, "logprobs", 0, std::numeric_limits<std::int32_t>::max()));
      r.logprobs = true;
    }
    if (!absent(body, "echo"))
      r.echo = get_bool(body, "echo");
    if (r.echo && r.logprobs)
      unsupported("echo", "echo with logprobs (it needs the prompt tokens' log-probabilities, which the engine "
                          "does not compute)");
    if (!absent(body, "best_of") && get_int(body, "best_of", 1, 1 << 10) != r.n)
      unsupported("best_of", "best_of other than n");
    if (!absent(body, "suffix") && !(body.at("suffix").is_string() && body.at("suffix").get<std::string>().empty()))
      unsupported("suffix", "suffix");
    return;
  }
  r.messages = read_messages(body);
  // The ZeroMQ protocol's bounds on a chat (the rendered prompt's own: parse_openai_request).
  if (r.messages.size() > proto::max_messages)
    fail("messages", "messages must have at most " + std::to_string(proto::max_messages) + " entries (got "
                       + std::to_string(r.messages.size()) + ")");
  std::size_t content_bytes = 0;
  for (const auto& m : r.messages)
    content_bytes += m.content.size();
  if (content_bytes > proto::max_prompt_bytes)
    fail("messages", over_bytes("the messages' content together", content_bytes, proto::max_prompt_bytes));
  r.prompts = {prompt_input{proto::render_chat_prompt(r.messages), {}, false}};
  // The model's reply ends where it would write the user's next turn.
  for (const auto& s : proto::chat_stop_sequences())
    if (std::find(r.base.params.stop.begin(), r.base.params.stop.end(), s) == r.base.params.stop.end())
      r.base.params.stop.push_back(s);
  if (!absent(body, "max_completion_tokens")) {
    r.base.params.max_tokens = static_cast<int>(get_int(body, "max_completion_tokens", 0, int32_max));
    r.max_tokens_given = true;
  }
  if (!absent(body, "logprobs"))
    r.logprobs = get_bool(body, "logprobs");
  if (!absent(body, "top_logprobs"))
    r.top_logprobs = static_cast<int>(get_int(body, "top_logprobs", 0, int32_max));
  if (!absent(body, "store") && get_bool(body, "store"))
    unsupported("store", "store: true");
  if (!absent(body, "tool_choice") && body.at("tool_choice") != "none")
    unsupported("tool_choice", "tool calling");
  if (!absent(body, "modalities") && body.at("modalities") != json::array({"text"}))
    unsupported("modalities", "modalities other than [\"text\"]");
}

} // namespace

std::variant<std::vector<proto::chat_message>, api_error> parse_chat_messages(const json& body) {
  try {
    return read_messages(body);
  } catch (const bad_field& b) {
    return api_error{400, b.message, "invalid_request_error", b.param, "invalid_request"};
  }
}

std::variant<openai_request, api_error> parse_openai_request(api_kind kind, std::string_view body_text,
                                                             const openai_limits& limits) {
  json body;
  try {
    body = json::parse(body_text.begin(), body_text.end());
  } catch (const json::parse_error& e) {
    return api_error{400, std::string("the body is not valid JSON: ") + e.what(), "invalid_request_error", "", ""};
  }
  if (!body.is_object())
    return api_error{400, "the body must be a JSON object", "invalid_request_error", "", ""};
  try {
    const auto& keys = known_keys(kind);
    for (const auto& [k, v] : body.items())
      if (!keys.count(k) && !v.is_null())
        fail(k, "unknown or unsupported parameter: " + k);
    openai_request r;
    r.kind = kind;
    if (absent(body, "model") || !body.at("model").is_string())
      fail("model", "model is required (the base model's name or an adapter's)");
    r.model = body.at("model").get<std::string>();
    refuse_non_neutral(body);
    auto& m = r.base.params;
    if (!absent(body, "n"))
      r.n = static_cast<int>(get_int(body, "n", 1, limits.max_n));
    if (!absent(body, "max_tokens")) {
      m.max_tokens = static_cast<int>(get_int(body, "max_tokens", 0, int32_max));
      r.max_tokens_given = true;
    }
    if (!absent(body, "temperature"))
      m.temperature = static_cast<float>(get_number(body, "temperature"));
    if (!absent(body, "top_p"))
      m.top_p = static_cast<float>(get_number(body, "top_p"));
    if (!absent(body, "top_k"))
      m.top_k = static_cast<int>(get_int(body, "top_k", 0, int32_max));
    if (!absent(body, "repetition_penalty"))
      m.repetition_penalty = static_cast<float>(get_number(body, "repetition_penalty"));
    if (!absent(body, "ignore_eos"))
      m.ignore_eos = get_bool(body, "ignore_eos");
    if (!absent(body, "seed"))
      m.seed = static_cast<std::uint64_t>(get_int(body, "seed", 0, std::numeric_limits<std::int64_t>::max()));
    // Both at most a day: they fit the draft's 32 bits.
    if (!absent(body, "deadline_ms"))
      r.base.timeout_ms = static_cast<std::uint32_t>(get_int(body, "deadline_ms", 1, proto::max_deadline_ms));
    if (!absent(body, "ttft_ms"))
      r.base.ttft_ms = static_cast<std::uint32_t>(get_int(body, "ttft_ms", 1, proto::max_deadline_ms));
    if (!absent(body, "speculative"))
      r.base.speculative = get_speculative(body).value_or(-1);
    if (!absent(body, "user")) {
      // The end user names the tenant (scheduling share, per-tenant limits).
      r.user = get_string(body, "user");
      r.base.tenant = r.user;
    }
    read_stop(body, m.stop);
    m.logit_bias = read_logit_bias(body);
    if (!absent(body, "stream"))
      r.stream = get_bool(body, "stream");
    if (!absent(body, "stream_options")) {
      const auto& so = body.at("stream_options");
      if (!r.stream)
        fail("stream_options", "stream_options is only allowed with stream: true");
      if (!so.is_object())
        fail("stream_options", "stream_options must be an object");
      for (const auto& [k, v] : so.items())
        if (k != "include_usage")
          unsupported("stream_options." + k, "stream_options." + k);
      if (!absent(so, "include_usage"))
        r.include_usage = get_bool(so, "include_usage");
    }
    read_kind_specific(kind, body, r);
    auto constraint = read_constraint(body);
    if (auto* no = std::get_if<field_refusal>(&constraint))
      fail(no->param, no->message);
    m.constraint = std::move(std::get<body_constraint>(constraint).constraint);
    // The tokenizer's bound, on what it would read (a chat rendered).
    for (const auto& in : r.prompts)
      if (in.text.size() > limits.max_prompt_bytes)
        throw bad_field{kind == api_kind::chat ? "messages" : "prompt",
                        over_bytes("prompt", in.text.size(), limits.max_prompt_bytes), serve_errc::prompt_too_long};
    const auto prompts = r.prompts.size();
    if (prompts * static_cast<std::size_t>(r.n) > limits.max_choices)
      fail(kind == api_kind::chat ? "n" : "prompt",
           "prompts x n must be at most " + std::to_string(limits.max_choices) + " (got "
             + std::to_string(prompts * static_cast<std::size_t>(r.n)) + ")");
    return r;
  } catch (const bad_field& b) {
    return api_error{400, b.message, "invalid_request_error", b.param, std::string(to_string(b.code))};
  } catch (const json::exception& e) {
    return api_error{400, std::string("bad field type: ") + e.what(), "invalid_request_error", "", "invalid_request"};
  }
}

} // namespace lf::gateway
