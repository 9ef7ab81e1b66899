#include "worker/engine/text_stream.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf::engine {

namespace {

constexpr std::string_view replacement_char = "\xEF\xBF\xBD"; // U+FFFD

/// Decodes `in` onto `out`, replacing each maximal invalid subpart with U+FFFD. Returns how many
/// bytes were consumed: everything, unless `in` ends inside a character that could still be
/// completed and `final` is false; the caller keeps that tail for the next call.
std::size_t decode_utf8(std::string_view in, std::string& out, bool final) {
  const auto* b = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = b[i];
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    // Continuation count and the allowed range of the first continuation byte: the narrowed
    // ranges after E0, ED, F0 and F4 exclude overlongs, surrogates and values above U+10FFFF.
    std::size_t need = 0;
    unsigned lo = 0x80;
    unsigned hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0)
        lo = 0xA0;
      else if (c == 0xED)
        hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0)
        lo = 0x90;
      else if (c == 0xF4)
        hi = 0x8F;
    } else {
      out.append(replacement_char);
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    std::size_t got = 0;
    while (got < need && j < n && b[j] >= lo && b[j] <= hi) {
      lo = 0x80;
      hi = 0xBF;
      ++j;
      ++got;
    }
    if (got == need) {
      out.append(in.data() + i, j - i);
    } else if (j == n && !final) {
      return i; // a valid beginning; the next token may complete it
    } else {
      out.append(replacement_char); // one U+FFFD for the whole maximal subpart
    }
    i = j;
  }
  return n;
}

} // namespace

bool is_valid_utf8(std::string_view s) {
  std::string decoded;
  decoded.reserve(s.size());
  // Valid prefixes are copied verbatim, and the first replacement would put EF BF BD where the
  // input has bytes that did not decode, so the output equals the input exactly when it is valid.
  return decode_utf8(s, decoded, true) == s.size() && decoded == s;
}

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  decode_utf8(bytes, out, true);
  return out;
}

text_stream::text_stream(std::vector<std::string> stop_sequences) {
  matchers_.reserve(stop_sequences.size());
  for (auto& s : stop_sequences) {
    if (s.empty())
      throw std::invalid_argument("text_stream: empty stop sequence");
    matcher m;
    m.pattern = std::move(s);
    const auto& p = m.pattern;
    m.border.assign(p.size(), 0);
    for (std::size_t i = 1, k = 0; i < p.size(); ++i) {
      while (k > 0 && p[i] != p[k])
        k = m.border[k - 1];
      if (p[i] == p[k])
        ++k;
      m.border[i] = k;
    }
    matchers_.push_back(std::move(m));
  }
}

bool text_stream::feed(std::string_view text) {
  if (matchers_.empty()) {
    held_.append(text);
    return false;
  }
  for (char c : text) {
    held_.push_back(c);
    const std::size_t offset = emitted_.size() + held_.size(); // text length after `c`
    for (std::size_t k = 0; k < matchers_.size(); ++k) {
      auto& m = matchers_[k];
      while (m.state > 0 && m.pattern[m.state] != c)
        m.state = m.border[m.state - 1];
      if (m.pattern[m.state] == c)
        ++m.state;
      if (m.state == m.pattern.size()) {
        const std::size_t start = offset - m.pattern.size();
        // Strict: at an equal start the stop found first (the shorter one) is kept.
        if (!best_ || start < best_->start)
          best_ = match{start, k};
        m.state = m.border[m.state - 1];
      }
    }
    if (best_) {
      // Settled once no partial match starts before it; the longest partial per automaton is
      // the earliest-starting one, so checking `state` suffices.
      bool beatable = false;
      for (const auto& m : matchers_)
        beatable = beatable || offset - m.state < best_->start;
      if (!beatable)
        return true;
    }
  }
  return false;
}

std::string text_stream::release(std::size_t end) {
  const std::size_t count = end - emitted_.size();
  std::string delta = held_.substr(0, count);
  held_.erase(0, count);
  emitted_.append(delta);
  return delta;
}

std::string text_stream::settle() {
  std::string delta = release(best_->start);
  held_.clear();
  stopped_ = true;
  matched_stop_ = matchers_[best_->index].pattern;
  return delta;
}

text_stream::step text_stream::push(std::string_view token_bytes) {
  if (stopped_ || finished_)
    throw std::logic_error(stopped_ ? "text_stream: push() after a stop sequence ended the text"
                                    : "text_stream: push() after finish()");
  scratch_.clear();
  std::size_t consumed;
  if (utf8_tail_.empty()) {
    consumed = decode_utf8(token_bytes, scratch_, false);
    utf8_tail_.assign(token_bytes.substr(consumed));
  } else {
    // The tail is at most 3 bytes; joining it to the token is cheaper than a resumable decoder.
    std::string joined = utf8_tail_;
    joined.append(token_bytes);
    consumed = decode_utf8(joined, scratch_, false);
    utf8_tail_ = joined.substr(consumed);
  }

  step out;
  if (feed(scratch_)) {
    out.delta = settle();
    out.stopped = true;
    out.matched_stop = matched_stop_;
    return out;
  }
  std::size_t longest_partial = 0;
  for (const auto& m : matchers_)
    longest_partial = std::max(longest_partial, m.state);
  std::size_t end = emitted_.size() + held_.size() - longest_partial;
  if (best_)
    end = std::min(end, best_->start);
  out.delta = release(end);
  return out;
}

std::string text_stream::finish() {
  if (stopped_ || finished_)
    return {};
  finished_ = true;
  // The replacement character goes through the matchers too: a stop string may contain it.
  if (!utf8_tail_.empty()) {
    utf8_tail_.clear();
    if (feed(replacement_char))
      return settle();
  }
  // No more text can arrive, so partial matches are dead and a pending match is final.
  if (best_)
    return settle();
  return release(emitted_.size() + held_.size());
}

} // namespace lf::engine
