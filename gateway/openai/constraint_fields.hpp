#pragma once
/// The structured-output fields of a /v1/completions or /v1/chat/completions body, read into the
/// one output_constraint a request may carry. Pure C++ (nlohmann-json); openai_request.cpp calls
/// it. Three spellings ask for the same five constraint kinds (docs/http.md "Structured outputs",
/// "vLLM compatibility"):
///
///   kind          OpenAI / lorafleet                      vLLM < 0.10       vLLM >= 0.10
///   json_object   response_format {type: json_object}     -                 structured_outputs.json_object: true
///   json_schema   response_format {type: json_schema}     guided_json       structured_outputs.json
///   regex         regex                                   guided_regex      structured_outputs.regex
///   choice        choice                                  guided_choice     structured_outputs.choice
///   grammar       grammar (GBNF)                          guided_grammar    structured_outputs.grammar
///
/// At most one of them per request (a second is a 400 naming both fields). vLLM's JSON schema may
/// be an object or a string holding one. vLLM's options that pick an implementation
/// (`guided_decoding_backend`, `structured_outputs.disable_fallback`) are accepted and ignored:
/// lorafleet has one, and it enforces the constraint all the same. Options that would change
/// which outputs are allowed (`guided_whitespace_pattern`, `structured_outputs.whitespace_pattern`,
/// `disable_any_whitespace` / `disable_additional_properties` true, `structural_tag`) are refused
/// by name, never ignored.

#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/sampling_params.hpp"

namespace lf::gateway {

/// The constraint a body asks for.
struct body_constraint {
  /// The field that asked ("response_format", "guided_regex", "structured_outputs.json", ...);
  /// empty: no constraint.
  std::string param;
  output_constraint constraint;  ///< kind empty when param is
};

/// A refused field: the field at fault and the reason (a 400 invalid_request).
struct field_refusal {
  std::string param;
  std::string message;
};

/// The top-level body keys read_constraint() reads, for the parser's unknown-key check.
const std::vector<std::string>& constraint_keys();

/// Reads every structured-output field of `body` (a JSON object), checks that at most one
/// constraint is asked for, and compiles it (constrain::check_constraint), so a bad one is
/// refused here with the field and the problem rather than on a worker.
std::variant<body_constraint, field_refusal> read_constraint(const nlohmann::json& body);

} // namespace lf::gateway
