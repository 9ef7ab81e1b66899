// Seeded random constraints over GPT-2's real vocabulary: 120 random JSON schemas and 120 random
// regular expressions (and json_object), each walked by random allowed tokens and then finished
// along the shortest way to acceptance. Every output must validate under an independent checker
// (nlohmann::json plus a small schema validator written here; std::regex), every step's token
// must be in the mask, and sampled masks must equal the slow reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "constrain/constraint.hpp"
#include "constrain/matcher.hpp"
#include "text/tokenizer.hpp"

using namespace lf::constrain;
using nlohmann::json;

namespace {

std::shared_ptr<const vocab_trie> gpt2_vocab() {
  static const auto v = [] {
    const auto tok = lf::text::tokenizer::from_dir(LF_SOURCE_DIR "/models/tokenizer");
    std::vector<std::string> bytes;
    for (std::size_t i = 0; i < tok.vocab_size(); ++i)
      bytes.push_back(tok.decode_token(static_cast<std::int32_t>(i)));
    return std::make_shared<const vocab_trie>(std::move(bytes), tok.eos_id());
  }();
  return v;
}

// ---- random schemas ---------------------------------------------------------------------------

json random_schema(std::mt19937_64& rng, int depth, json& defs) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int k = depth > 2 ? pick(6) : pick(10);
  switch (k) {
    case 0: {
      json s{{"type", "string"}};
      if (pick(3) == 0) {
        s["minLength"] = pick(3);
        s["maxLength"] = s["minLength"].get<int>() + pick(4);
      }
      return s;
    }
    case 1: return {{"type", "number"}};
    case 2: return {{"type", "integer"}};
    case 3: return {{"type", pick(2) ? "boolean" : "null"}};
    case 4: {
      json e = json::array();
      const int n = 1 + pick(4);
      for (int i = 0; i < n; ++i)
        e.push_back(pick(3) == 0 ? json(pick(100) - 50) : json("v" + std::to_string(pick(1000))));
      return {{"enum", e}};
    }
    case 5: return {{"const", pick(2) ? json("c\"q\\") : json({{"x", 1}})}};
    case 6:
    case 7: {
      json props = json::object(), req = json::array();
      const int n = 1 + pick(5);
      for (int i = 0; i < n; ++i) {
        const auto name = "p" + std::to_string(i) + (pick(4) == 0 ? " é\"" : "");
        props[name] = random_schema(rng, depth + 1, defs);
        if (pick(3) != 0)
          req.push_back(name);
      }
      return {{"type", "object"}, {"properties", props}, {"required", req}, {"additionalProperties", false}};
    }
    case 8: {
      json s{{"type", "array"}, {"items", random_schema(rng, depth + 1, defs)}};
      if (pick(2)) {
        s["minItems"] = pick(2);
        s["maxItems"] = s["minItems"].get<int>() + pick(3);
      }
      return s;
    }
    default: {
      if (pick(2)) {
        const auto name = "d" + std::to_string(defs.size());
        defs[name] = json::object();  // taken before its body is drawn (which may add more)
        defs[name] = random_schema(rng, depth + 1, defs);
        return {{"$ref", "#/$defs/" + name}};
      }
      return {{"anyOf", {random_schema(rng, depth + 1, defs), random_schema(rng, depth + 1, defs)}}};
    }
  }
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

/// An independent check of `v` against the schema subset generated above.
bool valid(const json& v, const json& s, const json& root) {
  if (s.contains("$ref")) {
    const auto ref = s["$ref"].get<std::string>();
    return valid(v, ref == "#" ? root : root["$defs"][ref.substr(8)], root);
  }
  if (s.contains("const"))
    return v == s["const"];
  if (s.contains("enum")) {
    for (const auto& e : s["enum"])
      if (v == e)
        return true;
    return false;
  }
  if (s.contains("anyOf")) {
    for (const auto& a : s["anyOf"])
      if (valid(v, a, root))
        return true;
    return false;
  }
  const auto t = s["type"].get<std::string>();
  if (t == "string") {
    if (!v.is_string())
      return false;
    const auto n = code_points(v.get<std::string>());
    return n >= s.value("minLength", 0u) && n <= s.value("maxLength", 1u << 30);
  }
  if (t == "number")
    return v.is_number();
  if (t == "integer")
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  if (t == "boolean")
    return v.is_boolean();
  if (t == "null")
    return v.is_null();
  if (t == "array") {
    if (!v.is_array() || v.size() < s.value("minItems", 0u) || v.size() > s.value("maxItems", 1u << 30))
      return false;
    for (const auto& x : v)
      if (!valid(x, s["items"], root))
        return false;
    return true;
  }
  if (!v.is_object())
    return false;
  for (const auto& r : s["required"])
    if (!v.contains(r.get<std::string>()))
      return false;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (!s["properties"].contains(it.key()) || !valid(it.value(), s["properties"][it.key()], root))
      return false;
  return true;
}

// ---- random regexes (ASCII constructs std::regex reads the same way) ----------------------------

std::string random_regex(std::mt19937_64& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::string out;
  const int parts = 1 + pick(4);
  for (int p = 0; p < parts; ++p) {
    std::string atom;
    switch (depth > 2 ? pick(5) : pick(7)) {
      case 0: atom = std::string(1, static_cast<char>('a' + pick(26))); break;
      case 1: atom = pick(2) ? "[a-f0-9]" : "[xyz_ ]"; break;
      case 2: atom = pick(3) == 0 ? "\\d" : pick(2) ? "\\w" : "\\."; break;
      case 3: atom = pick(2) ? "\\s" : "-"; break;
      case 4: atom = "[A-Z]"; break;
      case 5: atom = "(" + random_regex(rng, depth + 1) + "|" + random_regex(rng, depth + 1) + ")"; break;
      default: atom = "(?:" + random_regex(rng, depth + 1) + ")"; break;
    }
    switch (pick(6)) {
      case 0: atom += "?"; break;
      case 1: atom += "*"; break;
      case 2: atom += "+"; break;
      case 3: atom += "{" + std::to_string(pick(3)) + "," + std::to_string(3 + pick(3)) + "}"; break;
      default: break;
    }
    out += atom;
  }
  return out;
}

// ---- the walk -----------------------------------------------------------------------------------

struct walker {
  std::shared_ptr<const vocab_trie> vocab = gpt2_vocab();
  std::vector<std::int32_t> byte_token = [this] {
    std::vector<std::int32_t> t(256, -1);
    for (std::size_t i = 0; i < vocab->vocab_size(); ++i)
      if (vocab->bytes(static_cast<std::int32_t>(i)).size() == 1 && static_cast<std::int32_t>(i) != vocab->eos())
        t[static_cast<unsigned char>(vocab->bytes(static_cast<std::int32_t>(i))[0])] = static_cast<std::int32_t>(i);
    return t;
  }();
  int reference_checks = 0;
  int short_lists = 0;

  /// Random allowed tokens for `free_steps`, then the shortest way to acceptance, then the end.
  std::string walk(token_automaton& a, std::mt19937_64& rng, int free_steps) {
    auto c = a.start();
    std::string out;
    for (int step = 0; step < 4000; ++step) {
      const auto m = a.mask(c);
      REQUIRE(m->allowed > 0);  // never a dead end
      if (!m->ids.empty()) {  // the short list, when there is one, is the mask's bits
        ++short_lists;
        REQUIRE(m->ids.size() == m->allowed);
        REQUIRE(std::is_sorted(m->ids.begin(), m->ids.end()));
        for (const auto id : m->ids)
          REQUIRE(m->test(id));
      }
      if (reference_checks < 60 && rng() % 8 == 0) {
        ++reference_checks;
        REQUIRE(a.reference_mask(c).bits == m->bits);
      }
      std::int32_t tok = -1;
      if (step < free_steps) {
        std::vector<std::int32_t> ids;
        for (std::size_t i = 0; i < vocab->vocab_size(); ++i)
          if (m->test(static_cast<std::int32_t>(i)))
            ids.push_back(static_cast<std::int32_t>(i));
        tok = ids[rng() % ids.size()];
      } else if (a.accepting(c)) {
        tok = vocab->eos();
      } else {
        // The byte that brings acceptance closest, as a one-byte token.
        std::uint32_t best = ~0u;
        const auto next = next_bytes(a.rules(), *c.state);
        for (unsigned b = 0; b < 256; ++b) {
          if (!next.test(b))
            continue;
          const auto s = advance(a.rules(), *c.state, static_cast<std::uint8_t>(b));
          const auto d = distance_to_accept(a.rules(), s);
          if (d < best) {
            best = d;
            tok = byte_token[b];
          }
        }
        REQUIRE(tok >= 0);
        REQUIRE(m->test(tok));
      }
      REQUIRE(m->test(tok));
      if (tok == vocab->eos()) {
        REQUIRE(a.accepting(c));
        return out;
      }
      auto n = a.advance(c, tok);
      REQUIRE(n.has_value());
      c = *n;
      out += vocab->bytes(tok);
    }
    FAIL("the walk did not end");
    return out;
  }
};

} // namespace

TEST_CASE("random JSON schemas: every walk's output validates", "[constrain][random][json]") {
  walker w;
  std::mt19937_64 rng(20261126);
  constraint_cache cache(w.vocab, 16);
  int compiled = 0;
  for (int i = 0; i < 120; ++i) {
    json defs = json::object();
    auto schema = random_schema(rng, 0, defs);
    if (!defs.empty())
      schema["$defs"] = defs;
    const auto text = schema.dump();
    INFO("schema " << i << ": " << text);
    auto a = cache.get(lf::output_constraint{"json_schema", text});
    ++compiled;
    for (int run = 0; run < 2; ++run) {
      const auto out = w.walk(*a, rng, static_cast<int>(rng() % 12));
      INFO("output: " << out);
      json v;
      REQUIRE_NOTHROW(v = json::parse(out));
      CHECK(valid(v, schema, schema));
    }
  }
  CHECK(compiled == 120);
  CHECK(cache.size() <= 16);
  CHECK(w.reference_checks > 10);
  CHECK(w.short_lists > 100);
}

TEST_CASE("random regexes: every walk's output matches std::regex", "[constrain][random][regex]") {
  walker w;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 120; ++i) {
    const auto pattern = random_regex(rng, 0);
    INFO("regex " << i << ": " << pattern);
    const auto g = compile_constraint(lf::output_constraint{"regex", pattern});
    token_automaton a(std::make_shared<const grammar>(g), w.vocab);
    const std::regex re(pattern, std::regex::ECMAScript);
    for (int run = 0; run < 2; ++run) {
      const auto out = w.walk(a, rng, static_cast<int>(rng() % 6));
      INFO("output: \"" << out << "\"");
      CHECK(std::regex_match(out, re));
      CHECK(matches(g, out));
    }
  }
}

TEST_CASE("json_object: walks give JSON values", "[constrain][random][json]") {
  walker w;
  std::mt19937_64 rng(11);
  auto a = constraint_cache(w.vocab, 2).get(lf::output_constraint{"json_object", ""});
  for (int run = 0; run < 20; ++run) {
    const auto out = w.walk(*a, rng, static_cast<int>(rng() % 20));
    INFO("output: " << out);
    CHECK_NOTHROW(json::parse(out));
  }
}
