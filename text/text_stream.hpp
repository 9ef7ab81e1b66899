#pragma once
/// Incremental detokenization with stop sequences: turns the raw bytes of generated tokens into
/// text that is safe to send to a client as it arrives. Pure C++17.
///
/// Two stages. A UTF-8 decoder holds back a tail that is still a valid beginning of a character (a
/// GPT-2 token can end in the middle of one) and replaces invalid bytes with U+FFFD, so the client
/// text is always valid UTF-8 (JSON encoders reject anything else). A stop-sequence matcher (one
/// KMP automaton per stop string, so each byte is looked at a constant number of times per stop)
/// then holds back whatever could still turn out to be part of a stop sequence.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.hpp"

namespace lf::text {

/// The text of one generated sequence, released as it becomes final.
///
/// Text semantics: the stream's text is replace_invalid_utf8(concatenation of all token bytes).
/// Without a stop, the deltas of push() followed by finish() concatenate to exactly that text.
/// With stop sequences, the emitted text is exactly the text before the earliest occurrence of
/// any stop sequence; when several occurrences start at the same position the shortest stop
/// string is reported (it completes first). Stop sequences spanning several tokens, or starting
/// inside a held-back partial match that later fails, are found all the same.
///
/// Held back at any time: an incomplete UTF-8 tail, the longest suffix of the text that is a
/// proper prefix of some stop sequence, and, rarely, a completed match that a longer stop string
/// starting earlier could still beat (stops "bc" and "abcd", text "abc": it is "abcd" or "bc"
/// depending on the next byte). After each push() the held-back text is shorter than the longest
/// stop sequence, plus at most 3 bytes of an incomplete character. Amortised linear time: each
/// byte is decoded once and fed once to each stop automaton.
class text_stream {
public:
  /// Throws std::invalid_argument on an empty stop sequence (it would match before any text).
  explicit text_stream(std::vector<std::string> stop_sequences);

  /// What one push() releases.
  struct step {
    /// New text: complete UTF-8 that cannot be the beginning of a stop sequence.
    std::string delta;
    /// A stop sequence was found; `delta` ends right before it and the stream is closed.
    bool stopped = false;
    /// The stop sequence found (when `stopped`).
    std::string matched_stop;
  };

  /// Appends one token's bytes. Throws std::logic_error once the stream has stopped or finished.
  step push(std::string_view token_bytes);

  /// End of generation without a stop from push(): returns everything still held back. An
  /// incomplete UTF-8 tail at the very end becomes U+FFFD (so the client text stays valid UTF-8,
  /// matching replace_invalid_utf8 of the whole byte string). A held-back completed match is
  /// settled here, so check stopped() afterwards to learn whether the text ended at a stop.
  /// Returns "" when the stream has already stopped or finished.
  std::string finish();

  /// All text emitted so far (the concatenation of the deltas and finish()).
  const std::string& emitted() const noexcept {
    return emitted_;
  }

  /// True once a stop sequence ended the text (reported by push() or settled by finish()).
  bool stopped() const noexcept {
    return stopped_;
  }

  /// The stop sequence that ended the text; empty unless stopped().
  const std::string& matched_stop() const noexcept {
    return matched_stop_;
  }

private:
  /// KMP automaton for one stop sequence.
  struct matcher {
    std::string pattern;
    std::vector<std::size_t> border; ///< border[i]: longest proper border of pattern[0..i]
    std::size_t state = 0;           ///< longest prefix of `pattern` that is a suffix of the text
  };
  struct match {
    std::size_t start;  ///< text offset of the first byte
    std::size_t index;  ///< which matcher
  };

  /// Feeds decoded text to the matchers; returns true when a stop is settled (`stopped_` set).
  bool feed(std::string_view text);
  /// Moves text up to absolute offset `end` from `held_` to `emitted_` and returns it.
  std::string release(std::size_t end);
  /// Ends the stream at `best_`; returns the last delta.
  std::string settle();

  std::vector<matcher> matchers_;
  std::string utf8_tail_;   ///< raw bytes of an incomplete character
  std::string held_;        ///< decoded text after `emitted_`, not yet released
  std::string scratch_;     ///< reused buffer for decoding
  std::string emitted_;
  std::optional<match> best_; ///< earliest completed match not yet settled
  std::string matched_stop_;
  bool stopped_ = false;
  bool finished_ = false;
};

} // namespace lf::text
