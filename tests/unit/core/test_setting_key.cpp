// The settings tables' row type: fields read and written through a row, ranges and choices as
// messages, the docs and --help write them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/setting_key.hpp"

using namespace lf::settings;
using Catch::Matchers::Contains;

namespace test_setting_key {

enum class shape { round, square };

struct inner {
  double weight = 1.5;
};

struct demo {
  std::uint32_t count = 4;
  std::chrono::milliseconds wait{100};
  double aging = 1000;  // a floating-point field set as an integer
  inner nested;
  bool cache = true;
  bool admit = true;
  std::string device = "cpu";
  std::string model;
  shape form = shape::round;
  bool on_prefix = true;
  std::vector<std::string> roots;
};

const std::vector<setting_key<demo>>& demo_keys() {
  static const auto keys = [] {
    table<demo> t;
    t.integer("count", LF_SETTING(count), 1, 1 << 20, "how many");
    t.integer("wait_ms", LF_SETTING(wait), 0, 86'400'000, "how long");
    t.integer("aging_ms", LF_SETTING(aging), 0, 1'000'000, "aging");
    t.number("weight", LF_SETTING(nested.weight), 0, 0.9, "a weight");
    t.boolean("cache", LF_SETTING(cache), "reuse blocks").bool_style = bool_flag::no_switch;
    t.boolean("admit", LF_SETTING(admit), "refuse early");
    t.text("device", LF_SETTING(device), "where");
    t.path("model", LF_SETTING(model), "a model").meta = "DIR";
    t.choice("form", LF_SETTING(form), std::vector<std::pair<std::string, shape>>{{"round", shape::round}, {"square", shape::square}},
             "its shape")
      .flag = "shape";
    t.choice("scope", LF_SETTING(on_prefix), std::vector<std::pair<std::string, bool>>{{"prefix", true}, {"all", false}},
             "what counts");
    t.paths("roots", LF_SETTING(roots), "where from").scope = key_scope::file_only;
    return t.rows;
  }();
  return keys;
}

const setting_key<demo>& row(std::string_view name) { return *find(demo_keys(), name); }

} // namespace test_setting_key

using namespace test_setting_key;

TEST_CASE("a flag is the key with dashes unless the row names another", "[core][settings]") {
  CHECK(flag_of("max_batched_tokens") == "max-batched-tokens");
  CHECK(row("wait_ms").flag_name() == "wait-ms");
  CHECK(row("form").flag_name() == "shape");
  const auto name = flag_namer(demo_keys());
  CHECK(name("form") == "--shape");
  CHECK(name("wait_ms") == "--wait-ms");
  CHECK(name("not_in_the_table") == "--not-in-the-table");
  CHECK(file_key("form") == "form");
}

TEST_CASE("rows read and write their fields, nested ones and durations too", "[core][settings]") {
  demo d;
  CHECK(std::get<std::int64_t>(row("count").get(d)) == 4);
  CHECK(row("count").set(d, value{std::int64_t{7}}));
  CHECK(d.count == 7);
  CHECK(row("wait_ms").set(d, value{std::int64_t{250}}));
  CHECK(d.wait == std::chrono::milliseconds(250));
  CHECK(std::get<std::int64_t>(row("wait_ms").get(d)) == 250);
  CHECK(row("aging_ms").set(d, value{std::int64_t{20}}));
  CHECK(d.aging == 20.0);
  CHECK(row("weight").set(d, value{0.25}));
  CHECK(d.nested.weight == 0.25);
  CHECK(row("cache").set(d, value{false}));
  CHECK_FALSE(d.cache);
  CHECK(row("model").set(d, value{std::string("/m")}));
  CHECK(d.model == "/m");
  CHECK(row("roots").set(d, value{std::vector<std::string>{"/a", "/b"}}));
  CHECK(d.roots == std::vector<std::string>{"/a", "/b"});
  CHECK(value_text(row("roots").get(d)) == "/a,/b");
}

TEST_CASE("a choice takes only its spellings and shows the field's", "[core][settings]") {
  demo d;
  CHECK(std::get<std::string>(row("form").get(d)) == "round");
  CHECK(row("form").set(d, value{std::string("square")}));
  CHECK(d.form == shape::square);
  CHECK_FALSE(row("form").set(d, value{std::string("oval")}));
  CHECK(d.form == shape::square);
  CHECK(row("scope").set(d, value{std::string("all")}));
  CHECK_FALSE(d.on_prefix);
  CHECK(std::get<std::string>(row("scope").get(d)) == "all");
  CHECK(row("form").choices == std::vector<std::string>{"round", "square"});
}

TEST_CASE("bounds are written as the docs write them", "[core][settings]") {
  CHECK(quantity(1 << 20) == "2^20");
  CHECK(quantity(65536) == "2^16");
  CHECK(quantity(1024) == "1024");
  CHECK(quantity(4096) == "4096");
  CHECK(quantity(1'000'000) == "10^6");
  CHECK(quantity(1e6) == "10^6");
  CHECK(quantity(86'400'000) == "86400000");
  CHECK(quantity(4294967295.0) == "4294967295");
  CHECK(quantity(0.9) == "0.9");
  CHECK(quantity(0) == "0");
  CHECK(range_text(row("count")) == "1..2^20");
  CHECK(range_text(row("weight")) == "0..0.9");
  CHECK(range_text(row("device")).empty());
}

TEST_CASE("each type has its column in the docs' key tables", "[core][settings]") {
  CHECK(doc_type(row("count")) == "integer 1..2^20");
  CHECK(doc_type(row("wait_ms")) == "integer 0..86400000");
  CHECK(doc_type(row("weight")) == "number 0..0.9");
  CHECK(doc_type(row("cache")) == "bool");
  CHECK(doc_type(row("device")) == "string");
  CHECK(doc_type(row("model")) == "path");
  CHECK(doc_type(row("roots")) == "array of paths");
  CHECK(doc_type(row("form")) == "`\"round\"` or `\"square\"`");
}

TEST_CASE("a wrong choice is worded for a flag or for a config file", "[core][settings]") {
  CHECK(choice_list({"a", "b", "c"}, false) == "a, b or c");
  CHECK(choice_list({"a", "b"}, true) == "\"a\" or \"b\"");
  CHECK(choice_list({"only"}, false) == "only");
  CHECK(not_a_choice(row("form"), "oval", false) == "must be round or square (got 'oval')");
  CHECK(not_a_choice(row("form"), "oval", true) == "must be \"round\" or \"square\" (got \"oval\")");
}

TEST_CASE("help lines name the flag, its value, the doc, the range and the default", "[core][settings]") {
  const demo d;
  const auto count = help_lines(row("count"), row("count").get(d));
  CHECK_THAT(count, Contains("--count N") && Contains("how many (1..2^20; default 4)"));
  CHECK(count.back() == '\n');
  CHECK_THAT(help_lines(row("cache"), row("cache").get(d)), Contains("--no-cache") && Contains("turns this off: reuse blocks"));
  CHECK_THAT(help_lines(row("admit"), row("admit").get(d)), Contains("--admit on|off") && Contains("default on"));
  CHECK_THAT(help_lines(row("form"), row("form").get(d)), Contains("--shape round|square") && Contains("default round"));
  CHECK_THAT(help_lines(row("model"), row("model").get(d)), Contains("--model DIR") && !Contains("default"));
  // A long doc wraps under its column.
  key_info long_doc = row("device");
  long_doc.doc = std::string(60, 'a') + " " + std::string(60, 'b');
  const auto lines = help_lines(long_doc, value{std::string("cpu")});
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 3);  // a's, b's, then the default
  CHECK_THAT(lines, Contains("\n" + std::string(44, ' ') + std::string(60, 'b') + "\n"));
}

TEST_CASE("the first issue's message, or none", "[core][settings]") {
  CHECK(first_message({}).empty());
  CHECK(first_message({{"a", "one"}, {"b", "two"}}) == "one");
}
