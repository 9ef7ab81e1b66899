#pragma once
/// A small JSON document model and parser for the constraint engine's own inputs (JSON schemas,
/// enum values). Standard library only, so the engine can be used by the gateway and the worker
/// alike. Numbers keep their source text (an enum's 1.50 is emitted as written, never rounded).

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lf::constrain {

/// One JSON value. Objects keep their members in source order (a schema's properties are emitted
/// in the order the schema lists them); duplicate keys are refused by the parser.
struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind k = kind::null;
  bool b = false;
  std::string text;  ///< number: its source text; string: its decoded UTF-8 bytes
  std::vector<json_value> items;                             ///< array
  std::vector<std::pair<std::string, json_value>> members;  ///< object, in source order

  /// The member named `key`, or nullptr (objects only).
  const json_value* find(std::string_view key) const noexcept;
  bool is(kind want) const noexcept { return k == want; }
};

/// Parses `text` as one JSON value (RFC 8259; nesting at most `max_depth`). Throws
/// std::invalid_argument naming the problem and its byte offset.
json_value parse_json(std::string_view text, std::size_t max_depth = 128);

/// Writes `v` as compact JSON (no spaces); strings escaped with \" \\ \n \r \t \b \f and \u00XX
/// for the other control bytes; numbers as their source text.
std::string dump_json(const json_value& v);

/// `s` as a JSON string literal, quotes included (the escaping of dump_json).
std::string quote_json(std::string_view s);

} // namespace lf::constrain
