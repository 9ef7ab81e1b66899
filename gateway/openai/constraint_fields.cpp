#include "gateway/openai/constraint_fields.hpp"

#include <nlohmann/json.hpp>

#include "constrain/constraint.hpp"

namespace lf::gateway {

using json = nlohmann::json;

// A named namespace around the file-local functions: a unity batch compiles this file with
// openai_request.cpp, whose own `fail` and `absent` have the same signatures.
namespace constraint_reading {
namespace {

/// Thrown inside the reader; read_constraint turns it into its field_refusal.
struct refused {
  field_refusal why;
};

[[noreturn]] void fail(const std::string& param, const std::string& message) { throw refused{{param, message}}; }

bool absent(const json& o, const char* key) { return !o.contains(key) || o.at(key).is_null(); }

const char* const one_constraint =
  "give at most one constraint: response_format (json_object, json_schema), regex, choice, grammar, guided_json, "
  "guided_regex, guided_choice, guided_grammar or one of structured_outputs' json, json_object, regex, choice, "
  "grammar";

/// Collects the constraint; a second one is refused naming both fields.
class collector {
public:
  void set(const std::string& param, std::string kind, std::string text) {
    if (!got_.param.empty())
      fail(param, std::string(one_constraint) + " (got " + got_.param + " and " + param + ")");
    got_.param = param;
    got_.constraint = {std::move(kind), std::move(text)};
  }

  body_constraint take() { return std::move(got_); }

private:
  body_constraint got_;
};

std::string regex_text(const json& v, const std::string& param) {
  if (!v.is_string())
    fail(param, param + " must be a string (a regular expression the whole output matches)");
  return v.get<std::string>();
}

std::string choice_text(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty())
    fail(param, param + " must be a non-empty array of strings");
  for (const auto& x : v)
    if (!x.is_string() || x.get<std::string>().empty())
      fail(param, param + " must be a non-empty array of non-empty strings");
  return v.dump();
}

std::string grammar_text(const json& v, const std::string& param) {
  if (!v.is_string())
    fail(param, param + " must be a string (GBNF, docs/http.md)");
  return v.get<std::string>();
}

/// vLLM's JSON schema: an object (or a boolean schema), or a string holding one.
std::string schema_text(const json& v, const std::string& param) {
  if (v.is_object() || v.is_boolean())
    return v.dump();
  if (!v.is_string())
    fail(param, param + " must be a JSON schema: an object, or a string holding one");
  const auto parsed = json::parse(v.get<std::string>(), nullptr, false);
  if (parsed.is_discarded())
    fail(param, param + " is a string but not JSON (it must hold a JSON schema)");
  return parsed.dump();
}

void read_response_format(const json& body, collector& c) {
  if (absent(body, "response_format"))
    return;
  const auto& f = body.at("response_format");
  if (!f.is_object() || !f.contains("type") || !f.at("type").is_string())
    fail("response_format", "response_format must be an object with a string `type`");
  const auto type = f.at("type").get<std::string>();
  for (const auto& [k, v] : f.items())
    if (k != "type" && !(type == "json_schema" && k == "json_schema"))
      fail("response_format", "unknown field response_format." + k);
  if (type == "json_object") {
    c.set("response_format", "json_object", "");
  } else if (type == "json_schema") {
    if (absent(f, "json_schema") || !f.at("json_schema").is_object())
      fail("response_format", "response_format.json_schema must be an object with a `schema`");
    const auto& js = f.at("json_schema");
    for (const auto& [k, v] : js.items())
      if (k != "name" && k != "schema" && k != "strict" && k != "description")
        fail("response_format", "unknown field response_format.json_schema." + k);
    if (!absent(js, "name") && !js.at("name").is_string())
      fail("response_format", "response_format.json_schema.name must be a string");
    if (!absent(js, "strict") && !js.at("strict").is_boolean())
      fail("response_format", "response_format.json_schema.strict must be a boolean");
    // Without a schema OpenAI accepts any JSON; strict or not, the output follows the schema.
    c.set("response_format", "json_schema", absent(js, "schema") ? "{}" : js.at("schema").dump());
  } else if (type != "text") {
    fail("response_format", "response_format.type must be text, json_object or json_schema (got \"" + type + "\")");
  }
}

/// regex, choice, grammar (lorafleet's) and guided_* (vLLM's before 0.10), top-level fields.
void read_plain_fields(const json& body, collector& c) {
  for (const std::string prefix : {"", "guided_"}) {
    if (const auto p = prefix + "regex"; !absent(body, p.c_str()))
      c.set(p, "regex", regex_text(body.at(p), p));
    if (const auto p = prefix + "choice"; !absent(body, p.c_str()))
      c.set(p, "choice", choice_text(body.at(p), p));
    if (const auto p = prefix + "grammar"; !absent(body, p.c_str()))
      c.set(p, "grammar", grammar_text(body.at(p), p));
    if (prefix == "guided_" && !absent(body, "guided_json"))
      c.set("guided_json", "json_schema", schema_text(body.at("guided_json"), "guided_json"));
  }
  if (!absent(body, "guided_decoding_backend") && !body.at("guided_decoding_backend").is_string())
    fail("guided_decoding_backend", "guided_decoding_backend must be a string (it is ignored: lorafleet has one "
                                    "implementation of structured outputs)");
  if (!absent(body, "guided_whitespace_pattern"))
    fail("guided_whitespace_pattern", "guided_whitespace_pattern is not supported by lorafleet (JSON output has at "
                                      "most one space between tokens, docs/http.md)");
}

/// vLLM >= 0.10's `structured_outputs` object (its StructuredOutputsParams).
void read_structured_outputs(const json& body, collector& c) {
  if (absent(body, "structured_outputs"))
    return;
  const auto& so = body.at("structured_outputs");
  if (!so.is_object())
    fail("structured_outputs", "structured_outputs must be an object with one of json, json_object, regex, choice, "
                               "grammar");
  auto flag = [&](const std::string& p, const json& v) {
    if (!v.is_boolean())
      fail(p, p + " must be true or false");
    return v.get<bool>();
  };
  for (const auto& [k, v] : so.items()) {
    const auto p = "structured_outputs." + k;
    if (v.is_null())
      continue;
    if (k == "json")
      c.set(p, "json_schema", schema_text(v, p));
    else if (k == "regex")
      c.set(p, "regex", regex_text(v, p));
    else if (k == "choice")
      c.set(p, "choice", choice_text(v, p));
    else if (k == "grammar")
      c.set(p, "grammar", grammar_text(v, p));
    else if (k == "json_object") {
      if (flag(p, v))
        c.set(p, "json_object", "");
    } else if (k == "disable_fallback") {
      flag(p, v);  // picks among vLLM's implementations; lorafleet has one
    } else if (k == "disable_any_whitespace" || k == "disable_additional_properties") {
      if (flag(p, v))
        fail(p, p + ": true is not supported by lorafleet (JSON output has at most one space between tokens and "
                    "no members beyond `properties`, docs/http.md)");
    } else if (k == "whitespace_pattern" || k == "structural_tag") {
      fail(p, p + " is not supported by lorafleet");
    } else {
      fail(p, "unknown field " + p);
    }
  }
}

std::variant<body_constraint, field_refusal> read_all(const json& body) {
  try {
    collector c;
    read_response_format(body, c);
    read_plain_fields(body, c);
    read_structured_outputs(body, c);
    auto got = c.take();
    if (got.param.empty())
      return got;
    if (got.constraint.text.size() > max_constraint_text)
      fail(got.param, got.param + " is too large (at most " + std::to_string(max_constraint_text) + " bytes)");
    if (auto why = constrain::check_constraint(got.constraint))
      fail(got.param, "invalid " + got.param + ": " + *why);
    return got;
  } catch (const refused& r) {
    return r.why;
  }
}

} // namespace
} // namespace constraint_reading

const std::vector<std::string>& constraint_keys() {
  static const std::vector<std::string> keys{"response_format", "regex", "choice", "grammar", "guided_json",
                                             "guided_regex", "guided_choice", "guided_grammar",
                                             "guided_decoding_backend", "guided_whitespace_pattern",
                                             "structured_outputs"};
  return keys;
}

std::variant<body_constraint, field_refusal> read_constraint(const json& body) {
  return constraint_reading::read_all(body);
}

} // namespace lf::gateway
