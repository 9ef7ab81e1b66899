#include "constrain/json_schema.hpp"

#include <map>
#include <set>
#include <stdexcept>

namespace lf::constrain {

namespace {

using ranges_t = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

expr lit(const char* s) { return expr::literal(s); }
expr ref(const char* s) { return expr::ref(s); }
expr seq(std::vector<expr> v) { return expr::seq(std::move(v)); }
expr alt(std::vector<expr> v) { return expr::alt(std::move(v)); }
expr opt(expr x) { return expr::repeat(std::move(x), 0, 1); }
expr star(expr x) { return expr::repeat(std::move(x), 0, unbounded); }
expr cls(ranges_t r) { return expr::chars(std::move(r)); }

/// The shared JSON rules (names start with "json-").
void add_base(rule_set& rs) {
  auto hex = cls({{'0', '9'}, {'A', 'F'}, {'a', 'f'}});
  // Whitespace: at most one space between tokens (outlines' default, as TGI uses it). Newlines
  // and indentation are left out: given them, small models pad with tabs until max_tokens.
  rs.rules.emplace_back("json-ws", opt(lit(" ")));
  rs.rules.emplace_back(
      "json-char",
      alt({cls(complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}})),
           seq({lit("\\"), alt({cls({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'},
                                     {'r', 'r'}, {'t', 't'}}),
                                seq({lit("u"), alt({seq({cls({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}}),
                                                         expr::repeat(hex, 3, 3)}),
                                                    seq({cls({{'D', 'D'}, {'d', 'd'}}), cls({{'0', '7'}}),
                                                         expr::repeat(hex, 2, 2)})})})})})}));
  rs.rules.emplace_back("json-string", seq({lit("\""), star(ref("json-char")), lit("\"")}));
  // Numbers are bounded (16 digits before and after the point, 2 in the exponent: every one
  // fits a double), so a number cannot run on forever.
  rs.rules.emplace_back("json-integer", seq({opt(lit("-")), alt({lit("0"), seq({cls({{'1', '9'}}),
                                                                               expr::repeat(cls({{'0', '9'}}), 0, 15)})})}));
  rs.rules.emplace_back("json-number", seq({ref("json-integer"), opt(seq({lit("."), expr::repeat(cls({{'0', '9'}}), 1, 16)})),
                                            opt(seq({cls({{'E', 'E'}, {'e', 'e'}}), opt(cls({{'+', '+'}, {'-', '-'}})),
                                                     expr::repeat(cls({{'0', '9'}}), 1, 2)}))}));
  rs.rules.emplace_back("json-boolean", alt({lit("true"), lit("false")}));
  rs.rules.emplace_back("json-null", lit("null"));
  rs.rules.emplace_back("json-value", alt({ref("json-object"), ref("json-array"), ref("json-string"),
                                           ref("json-number"), ref("json-boolean"), ref("json-null")}));
  auto member = seq({ref("json-string"), ref("json-ws"), lit(":"), ref("json-ws"), ref("json-value")});
  rs.rules.emplace_back(
      "json-object",
      seq({lit("{"), ref("json-ws"),
           opt(seq({member, star(seq({ref("json-ws"), lit(","), ref("json-ws"), member})), ref("json-ws")})),
           lit("}")}));
  rs.rules.emplace_back(
      "json-array",
      seq({lit("["), ref("json-ws"),
           opt(seq({ref("json-value"), star(seq({ref("json-ws"), lit(","), ref("json-ws"), ref("json-value")})),
                    ref("json-ws")})),
           lit("]")}));
}

const std::set<std::string> ignored{"title", "description", "default", "examples", "$schema", "$id",
                                    "$comment", "deprecated", "readOnly", "writeOnly"};
const std::set<std::string> known{"type", "properties", "required", "additionalProperties", "items",
                                  "minItems", "maxItems", "minLength", "maxLength", "enum", "const",
                                  "anyOf", "allOf", "$ref", "$defs", "definitions"};

struct compiler {
  const json_value& root;
  rule_set rs;
  std::map<std::string, std::string> by_pointer;
  int next = 0;

  [[noreturn]] static void fail(const std::string& path, const std::string& m) {
    throw std::invalid_argument("JSON schema at " + path + ": " + m);
  }
  std::string fresh(const std::string& hint) { return "s" + std::to_string(next++) + "-" + hint; }

  std::uint32_t count(const json_value& s, const char* key, const std::string& path, std::uint32_t dflt) {
    const auto* v = s.find(key);
    if (!v)
      return dflt;
    if (!v->is(json_value::kind::number) || v->text.find_first_of(".eE-") != std::string::npos ||
        v->text.size() > 5 || std::stoul(v->text) > 1000)
      fail(path, std::string("`") + key + "` must be an integer in [0, 1000]");
    return static_cast<std::uint32_t>(std::stoul(v->text));
  }

  std::string pointer_rule(const std::string& ptr, const std::string& path, int depth) {
    const auto it = by_pointer.find(ptr);
    if (it != by_pointer.end())
      return it->second;
    const json_value* target = &root;
    if (ptr != "#") {
      if (ptr.rfind("#/", 0) != 0)
        fail(path, "`$ref` must point inside this schema (\"#\", \"#/$defs/...\"), got \"" + ptr + "\"");
      std::size_t b = 2;
      while (b <= ptr.size()) {
        auto e = ptr.find('/', b);
        if (e == std::string::npos)
          e = ptr.size();
        auto part = ptr.substr(b, e - b);
        for (std::size_t k; (k = part.find("~1")) != std::string::npos;)
          part.replace(k, 2, "/");
        for (std::size_t k; (k = part.find("~0")) != std::string::npos;)
          part.replace(k, 2, "~");
        target = target->is(json_value::kind::object) ? target->find(part) : nullptr;
        if (!target)
          fail(path, "`$ref` \"" + ptr + "\" points at nothing");
        b = e + 1;
      }
    }
    const auto name = fresh("ref");
    by_pointer[ptr] = name;
    const auto idx = rs.rules.size();
    rs.rules.emplace_back(name, expr{});
    auto body = compile(*target, ptr, depth + 1);
    rs.rules[idx].second = std::move(body);
    return name;
  }

  expr compile(const json_value& s, const std::string& path, int depth) {
    if (depth > 64)
      fail(path, "nested deeper than 64");
    if (s.is(json_value::kind::boolean)) {
      if (!s.b)
        fail(path, "the schema `false` matches nothing");
      return ref("json-value");
    }
    if (!s.is(json_value::kind::object))
      fail(path, "a schema must be an object or a boolean");
    for (const auto& m : s.members)
      if (!known.count(m.first) && !ignored.count(m.first))
        fail(path, "unsupported keyword `" + m.first + "`");
    if (const auto* r = s.find("$ref")) {
      if (!r->is(json_value::kind::string))
        fail(path, "`$ref` must be a string");
      return expr::ref(pointer_rule(r->text, path + "/$ref", depth));
    }
    if (const auto* c = s.find("const"))
      return expr::literal(dump_json(*c));
    if (const auto* e = s.find("enum")) {
      if (!e->is(json_value::kind::array) || e->items.empty())
        fail(path, "`enum` must be a non-empty array");
      std::vector<expr> alts;
      for (const auto& v : e->items)
        alts.push_back(expr::literal(dump_json(v)));
      return alt(std::move(alts));
    }
    if (const auto* a = s.find("anyOf")) {
      if (!a->is(json_value::kind::array) || a->items.empty())
        fail(path, "`anyOf` must be a non-empty array");
      std::vector<expr> alts;
      for (std::size_t j = 0; j < a->items.size(); ++j)
        alts.push_back(compile(a->items[j], path + "/anyOf/" + std::to_string(j), depth + 1));
      return alt(std::move(alts));
    }
    if (const auto* a = s.find("allOf")) {
      if (!a->is(json_value::kind::array) || a->items.size() != 1)
        fail(path, "`allOf` is supported with exactly one schema");
      return compile(a->items[0], path + "/allOf/0", depth + 1);
    }
    std::vector<std::string> types;
    if (const auto* t = s.find("type")) {
      if (t->is(json_value::kind::string)) {
        types.push_back(t->text);
      } else if (t->is(json_value::kind::array) && !t->items.empty()) {
        for (const auto& x : t->items) {
          if (!x.is(json_value::kind::string))
            fail(path, "`type` must be a string or an array of strings");
          types.push_back(x.text);
        }
      } else {
        fail(path, "`type` must be a string or a non-empty array of strings");
      }
    } else if (s.find("properties") || s.find("additionalProperties")) {
      types.push_back("object");
    } else if (s.find("items")) {
      types.push_back("array");
    } else {
      return ref("json-value");
    }
    std::vector<expr> alts;
    for (const auto& t : types)
      alts.push_back(typed(s, t, path, depth));
    return alt(std::move(alts));
  }

  expr typed(const json_value& s, const std::string& t, const std::string& path, int depth) {
    if (t == "string") {
      const auto lo = count(s, "minLength", path, 0);
      const auto hi = count(s, "maxLength", path, unbounded);
      if (hi < lo)
        fail(path, "`maxLength` is below `minLength`");
      if (lo == 0 && hi == unbounded)
        return ref("json-string");
      return seq({lit("\""), expr::repeat(ref("json-char"), lo, hi), lit("\"")});
    }
    if (t == "number")
      return ref("json-number");
    if (t == "integer")
      return ref("json-integer");
    if (t == "boolean")
      return ref("json-boolean");
    if (t == "null")
      return ref("json-null");
    if (t == "array")
      return array(s, path, depth);
    if (t == "object")
      return object(s, path, depth);
    fail(path, "unknown type \"" + t + "\"");
  }

  expr array(const json_value& s, const std::string& path, int depth) {
    expr item = ref("json-value");
    if (const auto* it = s.find("items")) {
      if (it->is(json_value::kind::array))
        fail(path, "`items` as an array (tuples) is not supported");
      item = compile(*it, path + "/items", depth + 1);
    }
    const auto lo = count(s, "minItems", path, 0);
    const auto hi = count(s, "maxItems", path, unbounded);
    if (hi < lo)
      fail(path, "`maxItems` is below `minItems`");
    const auto item_rule = fresh("item");
    rs.rules.emplace_back(item_rule, std::move(item));
    if (hi == 0)
      return seq({lit("["), ref("json-ws"), lit("]")});
    auto more = seq({ref("json-ws"), lit(","), ref("json-ws"), expr::ref(item_rule)});
    auto body = seq({expr::ref(item_rule),
                     expr::repeat(std::move(more), lo == 0 ? 0 : lo - 1, hi == unbounded ? unbounded : hi - 1),
                     ref("json-ws")});
    return seq({lit("["), ref("json-ws"), lo == 0 ? opt(std::move(body)) : std::move(body), lit("]")});
  }

  expr object(const json_value& s, const std::string& path, int depth) {
    const auto* props = s.find("properties");
    const auto* extra = s.find("additionalProperties");
    if (props && !props->is(json_value::kind::object))
      fail(path, "`properties` must be an object");
    std::set<std::string> required;
    if (const auto* r = s.find("required")) {
      if (!r->is(json_value::kind::array))
        fail(path, "`required` must be an array of names");
      for (const auto& n : r->items) {
        if (!n.is(json_value::kind::string))
          fail(path, "`required` must be an array of names");
        if (!props || !props->find(n.text))
          fail(path, "required property \"" + n.text + "\" is not in `properties`");
        required.insert(n.text);
      }
    }
    if (!props || props->members.empty()) {
      if (extra && extra->is(json_value::kind::boolean) && !extra->b)
        return seq({lit("{"), ref("json-ws"), lit("}")});
      if (!extra || extra->is(json_value::kind::boolean))
        return ref("json-object");
      const auto value_rule = fresh("extra");
      rs.rules.emplace_back(value_rule, compile(*extra, path + "/additionalProperties", depth + 1));
      auto member = seq({ref("json-string"), ref("json-ws"), lit(":"), ref("json-ws"), expr::ref(value_rule)});
      return seq({lit("{"), ref("json-ws"),
                  opt(seq({member, star(seq({ref("json-ws"), lit(","), ref("json-ws"), member})), ref("json-ws")})),
                  lit("}")});
    }
    if (extra && !extra->is(json_value::kind::boolean))
      compile(*extra, path + "/additionalProperties", depth + 1);  // checked, never generated
    // rest(i, first): the members from i on; `first` when none was written yet.
    const auto n = props->members.size();
    const auto base = fresh("obj");
    auto rest_name = [&](std::size_t i, bool first) {
      return base + "-" + std::to_string(i) + (first ? "f" : "a");
    };
    std::vector<std::string> value_rules;
    for (const auto& [key, sub] : props->members) {
      value_rules.push_back(fresh("prop"));
      const auto idx = rs.rules.size();
      rs.rules.emplace_back(value_rules.back(), expr{});
      auto body = compile(sub, path + "/properties/" + key, depth + 1);
      rs.rules[idx].second = std::move(body);
    }
    for (std::size_t i = 0; i <= n; ++i) {
      for (const bool first : {true, false}) {
        if (i == n) {
          rs.rules.emplace_back(rest_name(i, first), expr{});
          continue;
        }
        const auto& key = props->members[i].first;
        const auto& value_rule = value_rules[i];
        std::vector<expr> parts;
        if (!first)
          parts.insert(parts.end(), {lit(","), ref("json-ws")});
        parts.insert(parts.end(), {expr::literal(quote_json(key)), ref("json-ws"), lit(":"), ref("json-ws"),
                                   expr::ref(value_rule), ref("json-ws"), expr::ref(rest_name(i + 1, false))});
        auto present = seq(std::move(parts));
        if (required.count(key))
          rs.rules.emplace_back(rest_name(i, first), std::move(present));
        else
          rs.rules.emplace_back(rest_name(i, first), alt({std::move(present), expr::ref(rest_name(i + 1, first))}));
      }
    }
    return seq({lit("{"), ref("json-ws"), expr::ref(rest_name(0, true)), lit("}")});
  }
};

} // namespace

rule_set json_any_rules() {
  rule_set rs;
  rs.rules.emplace_back("root", seq({ref("json-ws"), ref("json-value"), ref("json-ws")}));
  add_base(rs);
  return rs;
}

rule_set json_schema_rules(const json_value& schema) {
  compiler c{schema, {}, {}, 0};
  c.rs.rules.emplace_back("root", expr{});
  auto body = c.compile(schema, "#", 0);
  c.rs.rules[0].second = seq({ref("json-ws"), std::move(body), ref("json-ws")});
  add_base(c.rs);
  return c.rs;
}

rule_set choice_rules(const std::vector<std::string>& choices) {
  if (choices.empty())
    throw std::invalid_argument("`choice` must list at least one string");
  std::vector<expr> alts;
  for (const auto& c : choices)
    alts.push_back(expr::literal(c));
  rule_set rs;
  rs.rules.emplace_back("root", alt(std::move(alts)));
  return rs;
}

} // namespace lf::constrain
