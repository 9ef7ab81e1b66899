// GPT-2 tokenizer: parity with an independent implementation (the golden file from js-tiktoken,
// see tools/tokenizer_golden), round trips, the hand-written pre-tokenizer, special tokens and
// loading errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/pretokenizer.hpp"
#include "text/tokenizer.hpp"
#include "text/unicode_tables.hpp"

using lf::text::tokenizer;
namespace fs = std::filesystem;

namespace {

const std::string model_dir = LF_SOURCE_DIR "/models/tokenizer";
const std::string golden_path = LF_SOURCE_DIR "/tests/data/tokenizer_golden.json";

/// Loaded once: parsing vocab.json takes a noticeable fraction of a second.
const tokenizer& gpt2() {
  static const tokenizer tok = tokenizer::from_dir(model_dir);
  return tok;
}

/// Control bytes and backslashes escaped, so failing strings show whitespace exactly.
std::string escaped(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string ids_str(const std::vector<std::int32_t>& ids) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < ids.size(); ++i)
    os << (i ? "," : "") << ids[i];
  os << "]";
  return os.str();
}

void append_utf8(std::string& s, char32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// Random valid UTF-8 over many scripts. Uses the raw mt19937 output (fully specified by the
/// standard) rather than distributions, so every platform sees the same strings.
std::string random_utf8(std::mt19937& rng, std::size_t max_len) {
  static const std::vector<std::pair<char32_t, char32_t>> ranges = {
    {0x20, 0x7E},     {0x09, 0x0D},     {0x20, 0x20},       {0xA0, 0x24F},    {0x300, 0x36F},
    {0x370, 0x52F},   {0x590, 0x6FF},   {0x900, 0x97F},     {0xE00, 0xE7F},   {0x1100, 0x11FF},
    {0x2000, 0x206F}, {0x2150, 0x218F}, {0x3000, 0x30FF},   {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3},
    {0xE000, 0xE0FF}, {0xFE00, 0xFFFF}, {0x10000, 0x1034F}, {0x1D400, 0x1D7FF},
    {0x1F1E6, 0x1F1FF}, {0x1F300, 0x1FAFF}, {0x20000, 0x2A6DF}, {0xE0000, 0xE007F},
    {0x10FF00, 0x10FFFF},
  };
  std::string s;
  const std::size_t len = rng() % (max_len + 1);
  for (std::size_t i = 0; i < len; ++i) {
    const auto& [lo, hi] = ranges[rng() % ranges.size()];
    append_utf8(s, lo + static_cast<char32_t>(rng() % (hi - lo + 1)));
  }
  return s;
}

/// A temporary directory, removed with everything in it at scope exit.
struct temp_dir {
  fs::path path;

  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("lf_tokenizer_test_" + std::to_string(rd()));
    fs::create_directories(path);
  }

  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }

  std::string write(const std::string& name, const std::string& content) const {
    auto p = path / name;
    std::ofstream{p, std::ios::binary} << content;
    return p.string();
  }
};

/// The message of the std::runtime_error `f` throws, or "" if it throws nothing.
template <class F>
std::string runtime_error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("tokenizer matches the golden file from js-tiktoken", "[tokenizer]") {
  std::ifstream in{golden_path, std::ios::binary};
  REQUIRE(in.good());
  const auto golden = nlohmann::json::parse(in);
  const auto& cases = golden.at("cases");
  REQUIRE(cases.size() >= 250);
  const auto& tok = gpt2();
  std::size_t failures = 0;
  for (const auto& c : cases) {
    const auto label = c.at("label").get<std::string>();
    const auto text = c.at("text").get<std::string>();
    const bool allow_special = c.at("allow_special").get<bool>();
    const auto want = c.at("ids").get<std::vector<std::int32_t>>();
    const auto got = tok.encode(text, allow_special);
    if (got != want) {
      ++failures;
      FAIL_CHECK(label << ": \"" << escaped(text) << "\"\n  expected " << ids_str(want)
                       << "\n  got      " << ids_str(got));
    }
    // Without the special token in the text, allow_special must not matter.
    if (text.find("<|endoftext|>") == std::string::npos && tok.encode(text, !allow_special) != got)
      FAIL_CHECK(label << ": allow_special changes the encoding of \"" << escaped(text) << '"');
    if (tok.decode(want) != text)
      FAIL_CHECK(label << ": decode does not give back \"" << escaped(text) << '"');
  }
  CHECK(failures == 0);
}

TEST_CASE("decode(encode(s)) gives back random valid UTF-8", "[tokenizer]") {
  const auto& tok = gpt2();
  std::mt19937 rng{12345};
  for (int i = 0; i < 3000; ++i) {
    const auto text = random_utf8(rng, 40);
    const auto ids = tok.encode(text, false);
    for (auto id : ids)
      REQUIRE((id >= 0 && static_cast<std::size_t>(id) < tok.vocab_size()));
    if (tok.decode(ids) != text)
      FAIL("round trip failed for \"" << escaped(text) << '"');
  }
}

TEST_CASE("invalid UTF-8 is encoded byte for byte and round-trips", "[tokenizer]") {
  const auto& tok = gpt2();
  const std::vector<std::string> samples = {
    "\xff",           "\xc0\x80",      "\xed\xa0\x80",      "\xf4\x90\x80\x80", "abc\xe2\x82",
    "\xe2\x82 euro",  " \xffword",     "caf\xc3",           "\x80\x80\x80",     "\xf0\x9f\x98",
    "a\xfe\xfe b",    "'\xffs",        "\xc3\xa9\xc3",      "\n\x85x",          "1\xff" "2",
  };
  for (const auto& s : samples) {
    INFO("\"" << escaped(s) << '"');
    CHECK(tok.decode(tok.encode(s)) == s);
  }
  std::mt19937 rng{777};
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 24, '\0');
    for (auto& ch : s)
      ch = static_cast<char>(rng() % 4 == 0 ? 0x80 | (rng() % 0x80) : rng() % 256);
    if (tok.decode(tok.encode(s)) != s)
      FAIL("round trip failed for \"" << escaped(s) << '"');
  }
}

TEST_CASE("pre-tokenization follows GPT-2's pattern", "[tokenizer]") {
  using pieces = std::vector<std::string_view>;
  using lf::text::pretokenize;
  CHECK(pretokenize("") == pieces{});
  CHECK(pretokenize("Hello world") == pieces{"Hello", " world"});
  // \s+(?!\S): the run gives back its last space, which leads the next word.
  CHECK(pretokenize("a   b") == pieces{"a", "  ", " b"});
  CHECK(pretokenize("  word") == pieces{" ", " word"});
  // Only U+0020 can lead a word; another last whitespace character stands alone through \s+.
  CHECK(pretokenize("\n\nword") == pieces{"\n", "\n", "word"});
  CHECK(pretokenize("a \tb") == pieces{"a", " ", "\t", "b"});
  CHECK(pretokenize("a\t b") == pieces{"a", "\t", " b"});
  CHECK(pretokenize("x  !") == pieces{"x", " ", " !"});
  CHECK(pretokenize("word  ") == pieces{"word", "  "});
  CHECK(pretokenize("a\xc2\xa0\xc2\xa0" "b") == pieces{"a", "\xc2\xa0", "\xc2\xa0", "b"});
  CHECK(pretokenize("I'm you're it'S") == pieces{"I", "'m", " you", "'re", " it", "'", "S"});
  CHECK(pretokenize("?'s") == pieces{"?'", "s"});
  CHECK(pretokenize("abc123 45!?") == pieces{"abc", "123", " 45", "!?"});
  CHECK(pretokenize("x\xc2\xb2") == pieces{"x", "\xc2\xb2"});
  // Invalid bytes are `other` units: they join punctuation runs and take a leading space.
  CHECK(pretokenize(" \xff\xfe!a") == pieces{" \xff\xfe!", "a"});
  CHECK(pretokenize("\xed\xa0\x80x") == pieces{"\xed\xa0\x80", "x"});
  CHECK(pretokenize("\xc3") == pieces{"\xc3"});
}

TEST_CASE("unicode tables are sorted and classify correctly", "[tokenizer]") {
  namespace u = lf::text::unicode;
  REQUIRE(u::class_range_count > 0);
  for (std::size_t i = 0; i < u::class_range_count; ++i) {
    REQUIRE(u::class_ranges[i].first <= u::class_ranges[i].last);
    REQUIRE(u::class_ranges[i].cls != u::char_class::other);
    if (i > 0)
      REQUIRE(u::class_ranges[i - 1].last < u::class_ranges[i].first);
  }
  using cc = u::char_class;
  CHECK(u::classify(U'a') == cc::letter);
  CHECK(u::classify(U'\u00e9') == cc::letter);
  CHECK(u::classify(U'\u4e2d') == cc::letter);
  CHECK(u::classify(U'\U0001D400') == cc::letter);
  CHECK(u::classify(U'7') == cc::number);
  CHECK(u::classify(U'\u0663') == cc::number);  // Arabic-Indic three
  CHECK(u::classify(U'\u00b2') == cc::number);  // superscript two
  CHECK(u::classify(U'\u216b') == cc::number);  // roman numeral twelve
  CHECK(u::classify(U' ') == cc::whitespace);
  CHECK(u::classify(U'\u3000') == cc::whitespace);
  CHECK(u::classify(U'\ufeff') == cc::whitespace);
  CHECK(u::classify(U'\u0085') == cc::other);  // White_Space, but not JavaScript's \s
  CHECK(u::classify(U'\u0301') == cc::other);
  CHECK(u::classify(U'\U0001F600') == cc::other);
  CHECK(u::classify(0x110000) == cc::other);
}

TEST_CASE("<|endoftext|> is special only when allowed", "[tokenizer]") {
  const auto& tok = gpt2();
  CHECK(tok.eos_id() == 50256);
  CHECK(tok.vocab_size() == 50257);
  CHECK(tok.encode("<|endoftext|>") == std::vector<std::int32_t>{50256});
  CHECK(tok.encode("a<|endoftext|>b", true)
        == std::vector<std::int32_t>{tok.encode("a")[0], 50256, tok.encode("b")[0]});
  const auto plain = tok.encode("<|endoftext|>", false);
  CHECK(plain.size() > 1);
  CHECK(std::find(plain.begin(), plain.end(), 50256) == plain.end());
  CHECK(tok.decode(plain) == "<|endoftext|>");
  CHECK(tok.decode({50256}) == "<|endoftext|>");
  CHECK(tok.decode_token(50256) == "<|endoftext|>");
  CHECK(tok.decode_token(220) == " ");
  // A token may be part of a UTF-8 sequence: "é" is two byte-level tokens ('Ã' '©').
  CHECK(tok.decode_token(tok.encode("\xf0\x9f\x98\x80")[0]).size() < 4);
}

TEST_CASE("ids outside the vocabulary throw std::out_of_range", "[tokenizer]") {
  const auto& tok = gpt2();
  CHECK_THROWS_AS(tok.decode({15496, 50257}), std::out_of_range);
  CHECK_THROWS_AS(tok.decode({-1}), std::out_of_range);
  CHECK_THROWS_AS(tok.decode_token(1 << 30), std::out_of_range);
  CHECK_THROWS_WITH(tok.decode_token(50257),
                    Catch::Contains("50257") && Catch::Contains("vocabulary size 50257"));
}

TEST_CASE("loading errors name the file", "[tokenizer]") {
  temp_dir dir;
  const std::string vocab = model_dir + "/vocab.json";
  const std::string merges = model_dir + "/merges.txt";
  const std::string missing = (dir.path / "nope.json").string();
  CHECK_THAT(runtime_error_of([&] { tokenizer::from_files(missing, merges); }),
             Catch::Contains(missing));
  const std::string missing_merges = (dir.path / "nope.txt").string();
  CHECK_THAT(runtime_error_of([&] { tokenizer::from_files(vocab, missing_merges); }),
             Catch::Contains(missing_merges));
  CHECK_THAT(runtime_error_of([&] { tokenizer::from_dir(dir.path.string()); }),
             Catch::Contains("vocab.json"));
  for (const char* bad : {"{\"a\": 1,", "[1, 2, 3]", "{\"a\": \"x\"}", "{\"a\": 5}", "not json"}) {
    const auto path = dir.write("bad_vocab.json", bad);
    INFO(bad);
    CHECK_THAT(runtime_error_of([&] { tokenizer::from_files(path, merges); }),
               Catch::Contains(path));
  }
  const std::vector<std::pair<std::string, std::string>> bad_merges = {
    {"#version: 0.2\n\xc4\xa0 t\nmissing_space\n", ":3:"},
    {"\xc4\xa0 t\na b c\n", ":2:"},
    {"#version: 0.2\n\xc4\xa0t \n", ":2:"},
    {"#version: 0.2\n\xc4\xa0 t\n\xc4\xa0 \xe2\x98\x83\n", ":3:"},  // snowman: not a token
  };
  for (const auto& [content, where] : bad_merges) {
    const auto path = dir.write("bad_merges.txt", content);
    INFO(escaped(content));
    CHECK_THAT(runtime_error_of([&] { tokenizer::from_files(vocab, path); }),
               Catch::Contains(path + where));
  }
  // A good small merges file loads: only the first merge, so " t" becomes one token.
  const auto small = dir.write("small_merges.txt", "#version: 0.2\r\n\xc4\xa0 t\r\n");
  const auto tok = tokenizer::from_files(vocab, small);
  CHECK(tok.encode(" to") == std::vector<std::int32_t>{gpt2().encode(" t")[0], 78});
}

TEST_CASE("one tokenizer can be shared by threads and moved", "[tokenizer]") {
  static_assert(std::is_nothrow_move_constructible_v<tokenizer>);
  static_assert(std::is_nothrow_move_assignable_v<tokenizer>);
  // A fresh instance, so the threads start on a cold cache and race on filling it.
  tokenizer copy = tokenizer::from_dir(model_dir);
  tokenizer moved = std::move(copy);
  std::mt19937 rng{99};
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back(random_utf8(rng, 30) + " the cat sat on the mat " + std::to_string(i));
  std::vector<std::vector<std::int32_t>> want;
  for (const auto& t : texts)
    want.push_back(gpt2().encode(t));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (std::size_t i = 0; i < texts.size(); ++i)
          mismatches[t] += moved.encode(texts[(i + t * 37) % texts.size()])
                           != want[(i + t * 37) % texts.size()];
    });
  for (auto& th : threads)
    th.join();
  CHECK(mismatches == std::vector<int>(4, 0));
}

TEST_CASE("encode throughput on 1 MB of English", "[tokenizer][.perf]") {
  const auto& tok = gpt2();
  std::ifstream in{golden_path, std::ios::binary};
  const auto golden = nlohmann::json::parse(in);
  std::string corpus;
  for (const auto& c : golden.at("cases"))
    if (c.at("label").get<std::string>().rfind("ascii_prose", 0) == 0)
      corpus += c.at("text").get<std::string>() + "\n";
  std::string text;
  std::mt19937 rng{5};
  while (text.size() < (1u << 20))
    text += corpus.substr(rng() % corpus.size(), 200) + std::to_string(rng()) + ' ';
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tok.encode(text);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  WARN("encoded " << text.size() << " bytes into " << ids.size() << " tokens in "
                  << took.count() << " s (" << text.size() / took.count() / 1e6 << " MB/s)");
  CHECK(tok.decode(ids) == text);
}
