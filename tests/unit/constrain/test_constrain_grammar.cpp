// The constraint engine's languages: regexes, GBNF grammars, JSON schemas, json_object and
// choices match what they should and nothing else; bad constraints are refused by name; token
// masks over a small vocabulary equal the slow reference.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "constrain/constraint.hpp"
#include "constrain/json_schema.hpp"
#include "constrain/json_value.hpp"
#include "constrain/matcher.hpp"
#include "constrain/syntax.hpp"
#include "constrain/token_automaton.hpp"

using namespace lf::constrain;
using lf::output_constraint;

namespace {

grammar compile(const std::string& kind, const std::string& text) {
  return compile_constraint(output_constraint{kind, text});
}

std::string refusal(const std::string& kind, const std::string& text) {
  const auto m = check_constraint(output_constraint{kind, text});
  return m ? *m : std::string();
}

} // namespace

TEST_CASE("regexes match whole outputs", "[constrain][regex]") {
  const auto g = compile("regex", "^(ab|c)+[0-9]{2,3}\\.x?$");
  CHECK(matches(g, "ab12."));
  CHECK(matches(g, "cabc123.x"));
  CHECK_FALSE(matches(g, "ab1."));
  CHECK_FALSE(matches(g, "ab1234."));
  CHECK_FALSE(matches(g, "12."));
  CHECK_FALSE(matches(g, "ab12.xx"));
  const auto d = compile("regex", "\\d+-\\w*\\s?[^a-c]");
  CHECK(matches(d, "42-foo_ d"));
  CHECK(matches(d, "1-\xC3\xA9"));  // é: a negated class admits any other code point
  CHECK_FALSE(matches(d, "1-a"));
  CHECK_FALSE(matches(d, "1-\xC3"));  // half a character
  const auto u = compile("regex", "[α-ω]{2}|.");
  CHECK(matches(u, "\xCE\xB1\xCF\x89"));  // αω
  CHECK(matches(u, "x"));
  CHECK_FALSE(matches(u, "\n"));
  const auto nullable = compile("regex", "(a?b?)*(c*)+x");  // repetitions of what can be empty
  CHECK(matches(nullable, "x"));
  CHECK(matches(nullable, "abbaccx"));
  CHECK_FALSE(matches(nullable, "abxc"));
  const auto lazy = compile("regex", "(?:a|b)*?c(?<n>d)");
  CHECK(matches(lazy, "ababcd"));
}

TEST_CASE("choices are literal", "[constrain][choice]") {
  const auto g = compile("choice", R"(["yes", "no", "a.b"])");
  CHECK(matches(g, "yes"));
  CHECK(matches(g, "a.b"));
  CHECK_FALSE(matches(g, "axb"));
  CHECK_FALSE(matches(g, "ye"));
}

TEST_CASE("GBNF grammars, recursion included", "[constrain][grammar]") {
  const auto g = compile("grammar", R"g(
# balanced parentheses then a word
root ::= parens " " word
parens ::= "(" parens ")" parens |
word ::= [a-z]+ ("-" [a-z]+)?
)g");
  CHECK(matches(g, "(()()) ab-cd"));
  CHECK(matches(g, " x"));
  CHECK_FALSE(matches(g, "(() ab"));
  CHECK_FALSE(matches(g, "() ab-"));
  const auto e = compile("grammar", "root ::= \"\\x41\" [^\\n]{1,2} \"\\u00e9\"");
  CHECK(matches(e, "Ab\xC3\xA9"));
  CHECK_FALSE(matches(e, "A\xC3\xA9"));
}

TEST_CASE("json_object accepts any JSON value and nothing else", "[constrain][json]") {
  const auto g = compile("json_object", "");
  for (const char* ok : {R"({"a": [1, -2.5e3, true, null, "x\"\u00e9"], "b": {}})", "[]", " 12 ", R"("s")",
                         R"({ "k" : false })", R"({"k":[1,2]})"})
    CHECK(matches(g, ok));
  // At most one space between tokens: no newlines, tabs or runs of spaces (small models pad with them).
  for (const char* bad : {"{", R"({"a" 1})", "01", "[1,]", "tru", R"("\ud800")", "\"\x01\"", "{} {}",
                          "{\n  \"k\": false\n}", "[1,\t2]", R"({"k":  1})", "  1"})
    CHECK_FALSE(matches(g, bad));
}

TEST_CASE("JSON schemas: objects, enums, arrays, anyOf, $defs and recursion", "[constrain][json]") {
  const auto g = compile("json_schema", R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 3},
      "kind": {"enum": ["a", "b", 3]},
      "tags": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
      "score": {"type": "number"},
      "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
      "opt": {"type": "boolean"}
    },
    "required": ["name", "kind", "tags", "score", "next"],
    "additionalProperties": false,
    "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
              "n": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "n"]}}
  })");
  CHECK(matches(g, R"({"name": "ab", "kind": "a", "tags": [1], "score": 1.5, "next": null})"));
  CHECK(matches(g, R"({"name":"","kind":3,"tags":[1,-2],"score":0,"next":{"v":1,"n":{"v":2,"n":null}},"opt":true})"));
  CHECK_FALSE(matches(g, R"({"name": "abcd", "kind": "a", "tags": [1], "score": 1, "next": null})"));
  CHECK_FALSE(matches(g, R"({"name": "a", "kind": "c", "tags": [1], "score": 1, "next": null})"));
  CHECK_FALSE(matches(g, R"({"name": "a", "kind": "a", "tags": [], "score": 1, "next": null})"));
  CHECK_FALSE(matches(g, R"({"name": "a", "kind": "a", "tags": [1.5], "score": 1, "next": null})"));
  CHECK_FALSE(matches(g, R"({"kind": "a", "name": "a", "tags": [1], "score": 1, "next": null})"));
  CHECK_FALSE(matches(g, R"({"name": "a", "kind": "a", "tags": [1], "score": 1})"));
  const auto opt = compile("json_schema", R"({"properties": {"a": {"const": 1}, "b": {"type": "null"}}})");
  CHECK(matches(opt, "{}"));
  CHECK(matches(opt, R"({"b": null})"));
  CHECK(matches(opt, R"({"a": 1, "b": null})"));
  CHECK_FALSE(matches(opt, R"({"a": 1,})"));
  CHECK_FALSE(matches(opt, R"({, "b": null})"));
  const auto root_rec = compile("json_schema", R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})");
  CHECK(matches(root_rec, "[[], [[]]]"));
  CHECK_FALSE(matches(root_rec, "[[], [], []]"));
}

TEST_CASE("bad constraints are refused with a message naming the problem", "[constrain][refusal]") {
  CHECK_THAT(refusal("json_schema", R"({"type": "string", "pattern": "a+"})"),
             Catch::Contains("unsupported keyword `pattern`"));
  CHECK_THAT(refusal("json_schema", R"({"oneOf": [{"type": "string"}]})"), Catch::Contains("`oneOf`"));
  CHECK_THAT(refusal("json_schema", R"({"type": "strin"})"), Catch::Contains("unknown type"));
  CHECK_THAT(refusal("json_schema", R"({"type": "object", "properties": {}, "required": ["x"]})"),
             Catch::Contains("required property \"x\""));
  CHECK_THAT(refusal("json_schema", R"({"$ref": "#/$defs/none"})"), Catch::Contains("points at nothing"));
  CHECK_THAT(refusal("json_schema", R"({"$ref": "http://x/y"})"), Catch::Contains("inside this schema"));
  CHECK_THAT(refusal("json_schema", R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})"),
             Catch::Contains("never end"));
  CHECK_THAT(refusal("json_schema", "{\"type\": "), Catch::Contains("invalid JSON"));
  CHECK_THAT(refusal("json_schema", "false"), Catch::Contains("matches nothing"));
  CHECK_THAT(refusal("regex", "a(b"), Catch::Contains("missing ')'"));
  CHECK_THAT(refusal("regex", "(a)\\1"), Catch::Contains("backreferences"));
  CHECK_THAT(refusal("regex", "a(?=b)"), Catch::Contains("lookaround"));
  CHECK_THAT(refusal("regex", "*a"), Catch::Contains("nothing to repeat"));
  CHECK_THAT(refusal("regex", "[b-a]"), Catch::Contains("out of order"));
  CHECK_THAT(refusal("regex", "a{99999}"), Catch::Contains("repetition count"));
  CHECK_THAT(refusal("grammar", "root ::= a \"x\"\na ::= \"\" | root"), Catch::Contains("left-recursive"));
  std::string huge;
  for (int i = 0; i < 200; ++i)
    huge += "a{9999}";
  CHECK_THAT(refusal("regex", huge), Catch::Contains("too large"));
  CHECK_FALSE(check_constraint(output_constraint{"regex", "(a{1000}){1000}"}));  // one rule, shared
  CHECK_THAT(refusal("regex", std::string(lf::max_constraint_text + 1, 'a')), Catch::Contains("too large"));
  CHECK_THAT(refusal("grammar", "root ::= foo"), Catch::Contains("undefined rule `foo`"));
  CHECK_THAT(refusal("grammar", "start ::= \"a\""), Catch::Contains("undefined rule `root`"));
  CHECK_THAT(refusal("grammar", "root ::= root \"a\" | \"b\""), Catch::Contains("left-recursive"));
  CHECK_THAT(refusal("grammar", "root ::= \"a\" root"), Catch::Contains("never end"));
  CHECK_THAT(refusal("grammar", "root ::= \"a"), Catch::Contains("unterminated"));
  CHECK_THAT(refusal("choice", "[]"), Catch::Contains("at least one"));
  CHECK_THAT(refusal("choice", "[1]"), Catch::Contains("array of non-empty strings"));
  CHECK_THAT(refusal("nope", "x"), Catch::Contains("unknown constraint kind"));
  CHECK_FALSE(check_constraint(output_constraint{"regex", "[a-z]+"}));
}

TEST_CASE("token masks over a small vocabulary equal the reference, tokens crossing states",
          "[constrain][mask]") {
  // ids: 0 "{", 1 "\"", 2 "a", 3 "\":", 4 " 1", 5 "}", 6 "1}", 7 "<eos>", 8 "ab\"", 9 "xyz"
  auto vocab = std::make_shared<const vocab_trie>(
      std::vector<std::string>{"{", "\"", "a", "\":", " 1", "}", "1}", "<eos>", "ab\"", "xyz"}, 7);
  auto g = std::make_shared<const grammar>(compile("json_schema",
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})"));
  token_automaton a(g, vocab, {});
  auto c = a.start();
  auto allowed = [&](const token_automaton::cursor& at) {
    std::vector<int> ids;
    const auto m = a.mask(at);
    for (int i = 0; i < 10; ++i)
      if (m->test(i))
        ids.push_back(i);
    const auto r = a.reference_mask(at);
    CHECK(r.bits == m->bits);
    return ids;
  };
  CHECK(allowed(c) == std::vector<int>{0});
  c = *a.advance(c, 0);
  CHECK(allowed(c) == std::vector<int>{1});
  c = *a.advance(c, 1);
  CHECK(allowed(c) == std::vector<int>{2});  // "ab\"" is not the key
  c = *a.advance(c, 2);
  CHECK(allowed(c) == std::vector<int>{1, 3});
  c = *a.advance(c, 3);
  CHECK(allowed(c) == std::vector<int>{4, 6});  // "1}" crosses the value and the object's end
  c = *a.advance(c, 4);
  CHECK(allowed(c) == std::vector<int>{5, 6});
  CHECK_FALSE(a.allows(c, 7));
  c = *a.advance(c, 6);
  CHECK(a.accepting(c));
  CHECK(allowed(c) == std::vector<int>{7});
  CHECK_FALSE(a.advance(c, 5).has_value());
}

TEST_CASE("a full state table resets and cursors from before go on", "[constrain][mask]") {
  auto vocab = std::make_shared<const vocab_trie>(std::vector<std::string>{"a", "b", "ab", "E"}, 3);
  auto g = std::make_shared<const grammar>(compile("regex", "(a|b){0,40}"));
  token_automaton::limits lim;
  lim.max_states = 8;
  token_automaton a(g, vocab, lim);
  auto c = a.start();
  for (int i = 0; i < 39; ++i) {
    const auto m = a.mask(c);
    REQUIRE(m->test(0));
    CHECK(m->bits == a.reference_mask(c).bits);
    c = *a.advance(c, i % 3 == 2 ? 1 : 0);
  }
  CHECK(a.generation() > 1);
  CHECK(a.states() <= 8 + 4);
  CHECK(a.mask(c)->test(0));
  CHECK_FALSE(a.mask(c)->test(2));  // "ab" would make 41
  c = *a.advance(c, 0);
  CHECK(a.mask(c)->allowed == 1);  // only the end
}
