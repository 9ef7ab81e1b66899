#pragma once
/// GPT-2's byte-level BPE tokenizer, loaded from the `vocab.json` + `merges.txt` pair that
/// Hugging Face's `gpt2` repository ships. Pure C++17: no torch, no CAF, no regex library.
///
/// Encoding matches OpenAI's GPT-2 encoder (checked against js-tiktoken's "gpt2" encoding by the
/// golden tests): the text is split with GPT-2's pre-tokenization pattern (see pretokenizer.hpp),
/// each piece's bytes are mapped through GPT-2's byte alphabet and merged by BPE rank.
/// Any byte string can be encoded, invalid UTF-8 included, and `decode(encode(s)) == s` always.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lf::text {

/// A loaded GPT-2 tokenizer. Immutable after loading apart from an internal, mutex-protected
/// cache, so one instance (or copies of it) can be used from any number of threads at once.
/// Copies share the loaded tables, so copying and moving are cheap. A moved-from tokenizer may
/// only be assigned to or destroyed.
class tokenizer {
public:
  /// The text of GPT-2's only special token.
  static constexpr std::string_view end_of_text = "<|endoftext|>";

  /// Loads a tokenizer from `vocab_json_path` (a JSON object mapping token strings, written in
  /// GPT-2's byte alphabet, to ids 0..N-1) and `merges_txt_path` (one merge "A B" per line, lowest
  /// rank first, an optional `#version` first line). The vocabulary must contain all 256
  /// single-byte tokens and `<|endoftext|>`; every merge's parts and result must be in it.
  /// Throws std::runtime_error naming the file (and for merges.txt the line) on any problem.
  static tokenizer from_files(const std::string& vocab_json_path,
                              const std::string& merges_txt_path);

  /// Loads `dir/vocab.json` and `dir/merges.txt`; see `from_files`.
  static tokenizer from_dir(const std::string& dir);

  /// Encodes `text` (UTF-8; invalid bytes are kept and encoded as their own bytes) into token
  /// ids. With `allow_special`, each literal "<|endoftext|>" becomes `eos_id()` and the text
  /// between them is encoded separately; without it, "<|endoftext|>" is ordinary text.
  std::vector<std::int32_t> encode(std::string_view text, bool allow_special = true) const;

  /// Concatenates the bytes of `ids`. The result is the original text, which may end in the
  /// middle of a UTF-8 sequence if `ids` is a prefix of an encoding. Throws std::out_of_range
  /// naming the id and the vocabulary size for an id outside [0, vocab_size()).
  std::string decode(const std::vector<std::int32_t>& ids) const;

  /// The raw bytes of one token, possibly an incomplete UTF-8 sequence (for streaming output).
  /// Throws std::out_of_range like `decode`.
  std::string decode_token(std::int32_t id) const;

  /// The id of `<|endoftext|>` (50256 for GPT-2).
  std::int32_t eos_id() const;

  /// Number of tokens in the vocabulary, special tokens included (50257 for GPT-2).
  std::size_t vocab_size() const;

private:
  struct impl;

  explicit tokenizer(std::shared_ptr<const impl> ptr) noexcept;

  /// Appends the encoding of `text`, which holds no special tokens, to `out`.
  void encode_ordinary(std::string_view text, std::vector<std::int32_t>& out) const;

  /// The bytes of token `id`; throws std::out_of_range if there is no such token.
  const std::string& token(std::int32_t id) const;

  std::shared_ptr<const impl> impl_;
};

} // namespace lf::text
