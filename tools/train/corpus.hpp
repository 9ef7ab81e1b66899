#pragma once
/// Training text as GPT-2 tokens: one stream per corpus file, each split into a training part and
/// a held-out tail, plus the deterministic batch sampling the trainer uses. Pure C++17 (the
/// tokenizer is pure too); no torch, so the sampling and splitting are tested alone.
///
/// Windows never cross files. Every batch is a function of (seed, step, micro-batch) only, so a
/// resumed run sees exactly the batches an uninterrupted run would have seen.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lf::text {
class tokenizer;
}

namespace lf::train {

/// One corpus file as tokens. Tokens [0, train_end) are for training, [train_end, size) are the
/// held-out validation tail ("the last X% of tokens").
struct token_stream {
  std::string name; ///< File name without directory and extension ("shakespeare").
  std::vector<std::int32_t> tokens;
  std::size_t train_end = 0;

  std::size_t train_size() const noexcept { return train_end; }
  std::size_t val_size() const noexcept { return tokens.size() - train_end; }
};

/// The streams of a training run and how often each is drawn.
struct corpus {
  std::vector<token_stream> streams;
  /// Probability that a training window comes from each stream (same order, sums to 1).
  std::vector<double> weights;

  /// Training tokens over all streams.
  std::size_t train_tokens() const noexcept;
  /// Held-out tokens over all streams.
  std::size_t val_tokens() const noexcept;
};

/// Splits `tokens` so the last `val_fraction` of them (rounded down) are held out. Throws
/// std::invalid_argument if val_fraction is outside [0, 0.5].
token_stream make_stream(std::string name, std::vector<std::int32_t> tokens, double val_fraction);

/// Builds a corpus whose sampling weight per stream is train_size^mix_power, normalised
/// (mix_power 1: proportional to size, 0: every file equally often, 0.5 in between). Throws
/// std::invalid_argument naming the stream if its training part is shorter than `context` + 1
/// tokens, or if there are no streams.
corpus make_corpus(std::vector<token_stream> streams, double mix_power, int context);

/// Reads and tokenizes `files` (UTF-8 text; a literal "<|endoftext|>" becomes the end-of-text
/// token, so documents can be separated) and calls make_stream / make_corpus. Throws
/// std::runtime_error naming a file that cannot be read.
corpus load_corpus(const std::vector<std::string>& files, const text::tokenizer& tok,
                   double val_fraction, double mix_power, int context);

/// The name a stream of `path` gets: the file name without its extension.
std::string stream_name(const std::string& path);

/// `rows` training windows of `context` + 1 consecutive tokens each, row-major, for optimizer step
/// `step` and micro-batch `micro`: each row picks a stream by weight and a uniform start within
/// that stream's training part. Deterministic in (seed, step, micro).
std::vector<std::int32_t> sample_windows(const corpus& c, std::uint64_t seed, std::int64_t step,
                                         int micro, int rows, int context);

/// Held-out windows of one stream, row-major.
struct window_set {
  int length = 0; ///< Tokens per window (context + 1, or the whole tail if it is shorter).
  int count = 0;
  std::vector<std::int32_t> tokens;
};

/// Consecutive windows of `context` + 1 tokens over the validation tail of `s`, each starting
/// where the previous one's last token was (so every held-out token after the first is predicted
/// once), covering at most `max_tokens` tokens of the tail; 0 means all of it. A tail shorter than
/// one window gives a single shorter window; a tail under 2 tokens gives none.
window_set validation_windows(const token_stream& s, int context, std::size_t max_tokens);

} // namespace lf::train
