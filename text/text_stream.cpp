#include "text/text_stream.hpp"

#include "core/utf8.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf::text {

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
    if (feed("\xEF\xBF\xBD"))  // U+FFFD
      return settle();
  }
  // No more text can arrive, so partial matches are dead and a pending match is final.
  if (best_)
    return settle();
  return release(emitted_.size() + held_.size());
}

} // namespace lf::text
