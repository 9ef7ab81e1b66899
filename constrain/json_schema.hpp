#pragma once
/// JSON constraints as rule sets: any JSON value (`json_object`), a JSON schema (the subset of
/// OpenAI's strict mode, below), a list of literal choices.
///
/// Supported schema keywords: `type` (string, number, integer, boolean, null, object, array, or a
/// list of them), `properties`, `required`, `additionalProperties`, `items`, `minItems`,
/// `maxItems`, `minLength`, `maxLength`, `enum`, `const`, `anyOf`, `allOf` with one schema,
/// `$ref` to "#", "#/$defs/..." or "#/definitions/..." (recursion allowed), `$defs`,
/// `definitions`; annotations that do not constrain (`title`, `description`, `default`,
/// `examples`, `$schema`, `$id`, `$comment`, `deprecated`, `readOnly`, `writeOnly`) are ignored.
/// Every other keyword is refused by name (`pattern`, `format`, `minimum`, `oneOf`, `not`, ...).
///
/// What is generated: properties in the schema's order, each required one present and the
/// others optional; no properties beyond those listed (valid whatever additionalProperties says;
/// an object schema without properties allows any members unless additionalProperties is false);
/// up to 16 whitespace bytes (space, tab, newline) around structural characters and at the ends;
/// numbers of at most 16 digits before the point, 16 after it and 2 in the exponent.

#include <string>
#include <vector>

#include "constrain/grammar.hpp"
#include "constrain/json_value.hpp"

namespace lf::constrain {

/// Any one JSON value, optionally surrounded by whitespace.
rule_set json_any_rules();

/// Values valid under `schema`. Throws std::invalid_argument naming the keyword and its path.
rule_set json_schema_rules(const json_value& schema);

/// Exactly one of `choices` (each taken literally).
rule_set choice_rules(const std::vector<std::string>& choices);

} // namespace lf::constrain
