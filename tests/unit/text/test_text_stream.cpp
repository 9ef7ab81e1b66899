#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "text/text_stream.hpp"

using lf::is_valid_utf8;
using lf::replace_invalid_utf8;
using lf::text::text_stream;

namespace {

const std::string fffd = "\xEF\xBF\xBD";

struct run_result {
  std::vector<std::string> deltas; ///< one per push, then finish() when it was called
  std::string text;
  bool stopped = false;
  std::string matched;
};

/// Pushes `tokens` until a stop, then finish() unless stopped. Every delta must be valid UTF-8.
run_result run(std::vector<std::string> stops, const std::vector<std::string>& tokens) {
  text_stream ts(std::move(stops));
  run_result r;
  for (const auto& t : tokens) {
    auto st = ts.push(t);
    CHECK(is_valid_utf8(st.delta));
    r.deltas.push_back(st.delta);
    r.text += st.delta;
    if (st.stopped) {
      r.stopped = true;
      r.matched = st.matched_stop;
      CHECK(ts.stopped());
      CHECK(ts.matched_stop() == st.matched_stop);
      CHECK_THROWS_AS(ts.push("x"), std::logic_error);
      CHECK(ts.finish().empty());
      CHECK(ts.emitted() == r.text);
      return r;
    }
  }
  auto rest = ts.finish();
  CHECK(is_valid_utf8(rest));
  r.deltas.push_back(rest);
  r.text += rest;
  r.stopped = ts.stopped();
  r.matched = ts.matched_stop();
  CHECK(ts.emitted() == r.text);
  CHECK_THROWS_AS(ts.push("x"), std::logic_error);
  return r;
}

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("replace_invalid_utf8 follows the maximal-subpart practice", "[text_stream]") {
  CHECK(replace_invalid_utf8("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")
        == "plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(replace_invalid_utf8("\xFF") == fffd);
  CHECK(replace_invalid_utf8("a\x80" "b") == "a" + fffd + "b");
  CHECK(replace_invalid_utf8("\xE2\x82" "A") == fffd + "A");   // truncated 3-byte char
  CHECK(replace_invalid_utf8("\xF0\x9F\x98") == fffd);         // truncated at the end
  CHECK(replace_invalid_utf8("\xE0\x80\x80") == fffd + fffd + fffd); // overlong
  CHECK(replace_invalid_utf8("\xED\xA0\x80") == fffd + fffd + fffd); // surrogate
  CHECK(replace_invalid_utf8("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd); // > U+10FFFF
  CHECK(replace_invalid_utf8("\xC0\xAF") == fffd + fffd);
  CHECK(is_valid_utf8("\xEF\xBF\xBD ok"));
  CHECK_FALSE(is_valid_utf8("\xC3"));
  CHECK_FALSE(is_valid_utf8("\xC3\xA9\xFE"));
}

TEST_CASE("without stops the deltas concatenate to the input", "[text_stream]") {
  auto r = run({}, {"Hello", ",", " world", "!\n"});
  CHECK(r.deltas == strings{"Hello", ",", " world", "!\n", ""});
  CHECK_FALSE(r.stopped);
  r = run({"zzz"}, {"Hello", ",", " world"});
  CHECK(r.text == "Hello, world");
  CHECK_FALSE(r.stopped);
  CHECK(r.matched.empty());
}

TEST_CASE("a stop sequence across token boundaries", "[text_stream]") {
  auto r = run({"END"}, {"hello E", "N", "D more"});
  CHECK(r.deltas == strings{"hello ", "", ""});
  CHECK(r.text == "hello ");
  CHECK(r.stopped);
  CHECK(r.matched == "END");
  // A held partial match that fails is released.
  r = run({"END"}, {"a E", "Nx", "b"});
  CHECK(r.deltas == strings{"a ", "ENx", "b", ""});
  CHECK_FALSE(r.stopped);
}

TEST_CASE("a stop sequence at the very start", "[text_stream]") {
  auto r = run({"###"}, {"###", "tail"});
  CHECK(r.deltas == strings{""});
  CHECK(r.stopped);
  r = run({"\n"}, {"\nabc"});
  CHECK(r.text.empty());
  CHECK(r.stopped);
}

TEST_CASE("several stop sequences: the earliest occurrence wins", "[text_stream]") {
  auto r = run({"world", "lo"}, {"hello world"});
  CHECK(r.text == "hel");
  CHECK(r.matched == "lo");
  r = run({"lo", "he"}, {"hel", "lo"});
  CHECK(r.text.empty());
  CHECK(r.matched == "he");
  // Same start: the shorter stop completes first and is reported.
  r = run({"abc", "ab"}, {"xabcd"});
  CHECK(r.text == "x");
  CHECK(r.matched == "ab");
}

TEST_CASE("a completed stop waits for a longer one starting earlier", "[text_stream]") {
  auto r = run({"bc", "abcd"}, {"abc", "d"});
  CHECK(r.deltas == strings{"", ""});
  CHECK(r.matched == "abcd");
  r = run({"bc", "abcd"}, {"abc", "x"});
  CHECK(r.deltas == strings{"", "a"});
  CHECK(r.matched == "bc");
  // Generation ends while undecided: finish() settles on the match found.
  r = run({"bc", "abcd"}, {"zab", "c"});
  CHECK(r.deltas == strings{"z", "", "a"});
  CHECK(r.stopped);
  CHECK(r.matched == "bc");
  // All within one token.
  r = run({"bc", "abcd"}, {"zabcdef"});
  CHECK(r.text == "z");
  CHECK(r.matched == "abcd");
}

TEST_CASE("overlapping partial matches", "[text_stream]") {
  auto r = run({"aab"}, {"a", "a", "a", "b"});
  CHECK(r.deltas == strings{"", "", "a", ""});
  CHECK(r.matched == "aab");
  // The stop begins inside a held-back partial match that then fails.
  r = run({"abc"}, {"ab", "abc"});
  CHECK(r.deltas == strings{"", "ab"});
  CHECK(r.stopped);
  r = run({"abab"}, {"aba", "bab"});
  CHECK(r.text.empty());
  r = run({"abac"}, {"ab", "ab", "ab", "ac"});
  CHECK(r.text == "abab");
}

TEST_CASE("UTF-8 split across tokens is never emitted partially", "[text_stream]") {
  const std::string emoji = "\xF0\x9F\x98\x80";
  auto r = run({}, {emoji.substr(0, 1), emoji.substr(1, 1), emoji.substr(2, 1), emoji.substr(3)});
  CHECK(r.deltas == strings{"", "", "", emoji, ""});
  r = run({}, {"caf\xC3", "\xA9 \xE2\x82", "\xAC"});
  CHECK(r.deltas == strings{"caf", "\xC3\xA9 ", "\xE2\x82\xAC", ""});
  // A stop sequence made of a split multi-byte character.
  r = run({"\xC3\xA9!"}, {"caf\xC3", "\xA9", "!?"});
  CHECK(r.text == "caf");
  CHECK(r.matched == "\xC3\xA9!");
  // Invalid bytes become U+FFFD as soon as they are known to be invalid.
  r = run({}, {"a\xE2\x82", "b", "\xFF"});
  CHECK(r.deltas == strings{"a", fffd + "b", fffd, ""});
}

TEST_CASE("finish() releases what is held back", "[text_stream]") {
  auto r = run({"STOP"}, {"abc ST"});
  CHECK(r.deltas == strings{"abc ", "ST"});
  CHECK_FALSE(r.stopped);
  // An incomplete character at the very end becomes U+FFFD.
  r = run({}, {"ok\xF0\x9F"});
  CHECK(r.deltas == strings{"ok", fffd});
  // ... which can itself complete a stop sequence.
  r = run({"k" + fffd}, {"ok\xF0\x9F"});
  CHECK(r.text == "o");
  CHECK(r.stopped);
  text_stream ts({"x"});
  CHECK(ts.finish().empty());
  CHECK(ts.finish().empty());
  CHECK_THROWS_AS(ts.push("a"), std::logic_error);
  CHECK_THROWS_AS(text_stream({"a", ""}), std::invalid_argument);
}

namespace {

/// Reference: the text before the earliest occurrence of any stop, the shortest stop on ties.
run_result reference(const std::string& text, const strings& stops) {
  run_result r;
  std::size_t best = std::string::npos;
  for (const auto& s : stops) {
    auto pos = text.find(s);
    if (pos != std::string::npos
        && (pos < best || (pos == best && s.size() < r.matched.size()))) {
      best = pos;
      r.matched = s;
    }
  }
  r.stopped = best != std::string::npos;
  r.text = r.stopped ? text.substr(0, best) : text;
  return r;
}

/// Longest suffix of `text` that is a proper prefix of one of `stops`.
std::size_t longest_partial(const std::string& text, const strings& stops) {
  std::size_t best = 0;
  for (const auto& s : stops)
    for (std::size_t len = std::min(s.size() - 1, text.size()); len > best; --len)
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        best = len;
        break;
      }
  return best;
}

/// Length of the longest prefix of valid UTF-8 `bytes` made of complete characters.
std::size_t complete_prefix(const std::string& bytes) {
  std::size_t i = bytes.size();
  std::size_t back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(bytes[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++back;
  }
  if (i == 0)
    return 0;
  const auto lead = static_cast<unsigned char>(bytes[i - 1]);
  const std::size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  return back + 1 == len ? bytes.size() : i - 1;
}

} // namespace

TEST_CASE("randomized: random splits and stops agree with the reference", "[text_stream]") {
  const strings alphabet{"a", "b", "c", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", " "};
  std::mt19937 gen(20240601);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(gen() % n); };
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const std::size_t chars = pick(40);
    const std::size_t letters = 2 + pick(alphabet.size() - 1); // small alphabets overlap a lot
    for (std::size_t i = 0; i < chars; ++i)
      text += alphabet[pick(letters)];
    strings stops;
    const std::size_t nstops = pick(4);
    for (std::size_t k = 0; k < nstops; ++k) {
      std::string s;
      const std::size_t len = 1 + pick(5);
      for (std::size_t i = 0; i < len; ++i)
        s += alphabet[pick(letters)];
      stops.push_back(s);
    }
    // Random byte-level split, including inside characters and empty tokens.
    strings tokens;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t len = std::min(text.size() - at, pick(7));
      tokens.push_back(text.substr(at, len));
      at += len;
    }
    INFO("round " << round << " text '" << text << "' stops " << stops.size());

    const auto want = reference(text, stops);
    text_stream ts(stops);
    std::string seen;
    std::string pushed;
    bool stopped = false;
    for (const auto& t : tokens) {
      auto st = ts.push(t);
      pushed += t;
      seen += st.delta;
      REQUIRE(is_valid_utf8(st.delta));
      // Exactly what may be released: complete characters, minus a possible stop prefix, minus
      // a match that could still be beaten.
      const std::string complete = pushed.substr(0, complete_prefix(pushed));
      const auto now = reference(complete, stops);
      const std::size_t hold_from = complete.size() - longest_partial(complete, stops);
      if (now.stopped && hold_from >= now.text.size()) {
        REQUIRE(st.stopped);
        CHECK(st.matched_stop == now.matched);
        stopped = true;
        break;
      }
      REQUIRE_FALSE(st.stopped);
      REQUIRE(seen == complete.substr(0, std::min(hold_from, now.text.size())));
    }
    if (!stopped)
      seen += ts.finish();
    CHECK(seen == want.text);
    CHECK(ts.emitted() == want.text);
    CHECK(ts.stopped() == want.stopped);
    CHECK(ts.matched_stop() == want.matched);
  }
}

TEST_CASE("randomized: arbitrary bytes decode like replace_invalid_utf8", "[text_stream]") {
  std::mt19937 gen(7);
  const std::string interesting = "\x80\xBF\xC2\xC3\xDF\xE0\xE2\xED\xEF\xF0\xF4\xF5\xFF" "ab";
  for (int round = 0; round < 3000; ++round) {
    std::string bytes;
    const std::size_t n = gen() % 30;
    for (std::size_t i = 0; i < n; ++i)
      bytes += gen() % 2 ? interesting[gen() % interesting.size()] : static_cast<char>(gen() % 256);
    const std::string text = replace_invalid_utf8(bytes);
    REQUIRE(is_valid_utf8(text));
    strings stops;
    if (round % 2 && !text.empty()) {
      // A stop taken from the decoded text, so it matches somewhere.
      const std::size_t at = gen() % text.size();
      const auto s = replace_invalid_utf8(text.substr(at, 1 + gen() % 4));
      if (is_valid_utf8(s) && !s.empty())
        stops.push_back(s);
    }
    text_stream ts(stops);
    std::string seen;
    bool stopped = false;
    for (std::size_t at = 0; at < bytes.size() && !stopped;) {
      const std::size_t len = std::min<std::size_t>(bytes.size() - at, gen() % 5);
      auto st = ts.push(std::string_view(bytes).substr(at, len));
      REQUIRE(is_valid_utf8(st.delta));
      seen += st.delta;
      stopped = st.stopped;
      at += len;
    }
    if (!stopped)
      seen += ts.finish();
    const auto want = reference(text, stops);
    INFO("round " << round);
    CHECK(seen == want.text);
    CHECK(ts.stopped() == want.stopped);
  }
}
