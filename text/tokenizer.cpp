#include "text/tokenizer.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "text/bpe.hpp"
#include "text/pretokenizer.hpp"

namespace lf::text {

namespace {

/// Remembers the ids of recently seen short pieces: natural text repeats a small set of words, so
/// most pieces skip BPE. Sharded by hash so threads encoding at once rarely wait on each other;
/// each shard is simply emptied when full, which bounds memory without bookkeeping.
class piece_cache {
public:
  /// Longer pieces are rare and would bloat the cache, so they always run BPE.
  static constexpr std::size_t max_piece_size = 32;

  /// Appends the cached ids of `piece` to `out` and returns true, or returns false.
  bool lookup(std::string_view piece, std::vector<std::int32_t>& out) {
    auto& s = shard_for(piece);
    std::lock_guard<std::mutex> guard{s.mtx};
    auto it = s.map.find(std::string{piece});
    if (it == s.map.end())
      return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void store(std::string_view piece, std::vector<std::int32_t> ids) {
    auto& s = shard_for(piece);
    std::lock_guard<std::mutex> guard{s.mtx};
    if (s.map.size() >= shard_capacity)
      s.map.clear();
    s.map.emplace(std::string{piece}, std::move(ids));
  }

private:
  static constexpr std::size_t shard_count = 16;
  static constexpr std::size_t shard_capacity = 8192;

  struct shard {
    std::mutex mtx;
    std::unordered_map<std::string, std::vector<std::int32_t>> map;
  };

  shard& shard_for(std::string_view piece) {
    return shards_[std::hash<std::string_view>{}(piece) % shard_count];
  }

  std::array<shard, shard_count> shards_;
};

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("tokenizer: cannot read " + path
                             + (std::filesystem::exists(path, ec) ? ": not a regular file"
                                                                  : ": no such file"));
  std::ifstream in{path, std::ios::binary};
  std::string data{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  if (!in.good() && !in.eof())
    throw std::runtime_error("tokenizer: cannot read " + path);
  return data;
}

/// The raw bytes a vocab.json / merges.txt token stands for, or nothing if it contains a
/// character outside GPT-2's byte alphabet.
std::optional<std::string> alphabet_to_bytes(std::string_view token) {
  std::string bytes;
  bytes.reserve(token.size());
  for (std::size_t pos = 0; pos < token.size();) {
    const auto unit = decode_utf8_unit(token, pos);
    // An invalid byte decodes to a size-1 unit carrying the byte value; it is never a character.
    const bool valid = unit.size > 1 || unit.cp < 0x80;
    const int b = valid ? unicode_to_byte(unit.cp) : -1;
    if (b < 0)
      return std::nullopt;
    bytes.push_back(static_cast<char>(b));
    pos += unit.size;
  }
  return bytes;
}

std::string utf8_of(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    // The byte alphabet ends at U+0143, so nothing longer is ever needed here.
    throw std::logic_error("utf8_of: codepoint beyond the byte alphabet");
  }
  return s;
}

} // namespace

struct tokenizer::impl {
  /// Raw bytes of every token, indexed by id.
  std::vector<std::string> token_bytes;
  std::optional<bpe_merges> merges;
  std::int32_t eos = -1;
  /// The only mutable state; it does not change what encode returns.
  mutable piece_cache cache;
};

tokenizer::tokenizer(std::shared_ptr<const impl> ptr) noexcept : impl_(std::move(ptr)) {}

tokenizer tokenizer::from_files(const std::string& vocab_json_path,
                                const std::string& merges_txt_path) {
  auto result = std::make_shared<impl>();
  // vocab.json: token text (in the byte alphabet) -> dense ids.
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(read_file(vocab_json_path));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("tokenizer: " + vocab_json_path + ": malformed JSON: " + e.what());
  }
  auto vocab_error = [&](const std::string& what) {
    return std::runtime_error("tokenizer: " + vocab_json_path + ": " + what);
  };
  if (!vocab.is_object() || vocab.empty())
    throw vocab_error("expected a non-empty JSON object mapping token strings to ids");
  const std::size_t n = vocab.size();
  std::unordered_map<std::string, std::int32_t> ids_by_text;
  ids_by_text.reserve(n);
  std::vector<bool> seen(n, false);
  result->token_bytes.resize(n);
  for (const auto& [text, value] : vocab.items()) {
    if (!value.is_number_integer())
      throw vocab_error("token '" + text + "' has a non-integer id " + value.dump());
    const auto id = value.get<std::int64_t>();
    if (id < 0 || static_cast<std::uint64_t>(id) >= n)
      throw vocab_error("token '" + text + "' has id " + std::to_string(id) + ", outside 0.."
                        + std::to_string(n - 1) + " (ids must be dense)");
    if (seen[id])
      throw vocab_error("id " + std::to_string(id) + " is used twice");
    seen[id] = true;
    auto bytes = alphabet_to_bytes(text);
    if (!bytes)
      throw vocab_error("token '" + text + "' has a character outside GPT-2's byte alphabet");
    result->token_bytes[id] = std::move(*bytes);
    ids_by_text.emplace(text, static_cast<std::int32_t>(id));
  }
  if (auto it = ids_by_text.find(std::string{end_of_text}); it != ids_by_text.end())
    result->eos = it->second;
  else
    throw vocab_error("missing the special token " + std::string{end_of_text});
  std::array<std::int32_t, 256> byte_ids{};
  for (int b = 0; b < 256; ++b) {
    auto it = ids_by_text.find(utf8_of(byte_to_unicode(static_cast<std::uint8_t>(b))));
    if (it == ids_by_text.end())
      throw vocab_error("missing the single-byte token for byte " + std::to_string(b));
    byte_ids[b] = it->second;
  }
  // merges.txt: "left right" per line, lowest rank first.
  auto& merges = result->merges.emplace(byte_ids);
  std::istringstream lines{read_file(merges_txt_path)};
  std::string line;
  for (std::size_t line_no = 1; std::getline(lines, line); ++line_no) {
    auto merges_error = [&](const std::string& what) {
      return std::runtime_error("tokenizer: " + merges_txt_path + ":" + std::to_string(line_no)
                                + ": " + what);
    };
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0))
      continue;
    const auto space = line.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == line.size()
        || line.find(' ', space + 1) != std::string::npos)
      throw merges_error("malformed merge '" + line
                         + "' (expected two tokens separated by one space)");
    const std::string left = line.substr(0, space);
    const std::string right = line.substr(space + 1);
    auto id_of = [&](const std::string& text, const char* role) {
      auto it = ids_by_text.find(text);
      if (it == ids_by_text.end())
        throw merges_error(std::string{role} + " '" + text + "' of merge '" + line
                           + "' is not in the vocabulary");
      return it->second;
    };
    merges.add(id_of(left, "left part"), id_of(right, "right part"),
               id_of(left + right, "result"));
  }
  return tokenizer{std::move(result)};
}

tokenizer tokenizer::from_dir(const std::string& dir) {
  return from_files(dir + "/vocab.json", dir + "/merges.txt");
}

std::vector<std::int32_t> tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<std::int32_t> out;
  // English averages a little over four bytes per token.
  out.reserve(text.size() / 4 + 1);
  if (!allow_special) {
    encode_ordinary(text, out);
    return out;
  }
  for (std::size_t start = 0;;) {
    const auto hit = text.find(end_of_text, start);
    if (hit == std::string_view::npos) {
      encode_ordinary(text.substr(start), out);
      return out;
    }
    // As in the reference, the text on each side is pre-tokenized on its own.
    encode_ordinary(text.substr(start, hit - start), out);
    out.push_back(impl_->eos);
    start = hit + end_of_text.size();
  }
}

void tokenizer::encode_ordinary(std::string_view text, std::vector<std::int32_t>& out) const {
  const auto& merges = *impl_->merges;
  auto& cache = impl_->cache;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = next_pretoken_end(text, pos);
    const auto piece = text.substr(pos, end - pos);
    pos = end;
    if (piece.size() > piece_cache::max_piece_size) {
      merges.encode(piece, out);
    } else if (!cache.lookup(piece, out)) {
      const std::size_t first = out.size();
      merges.encode(piece, out);
      cache.store(piece, {out.begin() + first, out.end()});
    }
  }
}

std::string tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size() * 4);
  for (auto id : ids)
    out += token(id);
  return out;
}

std::string tokenizer::decode_token(std::int32_t id) const {
  return token(id);
}

const std::string& tokenizer::token(std::int32_t id) const {
  const auto& bytes = impl_->token_bytes;
  if (id < 0 || static_cast<std::size_t>(id) >= bytes.size())
    throw std::out_of_range("tokenizer: token id " + std::to_string(id)
                            + " is outside the vocabulary (vocabulary size "
                            + std::to_string(bytes.size()) + ")");
  return bytes[id];
}

std::int32_t tokenizer::eos_id() const {
  return impl_->eos;
}

std::size_t tokenizer::vocab_size() const {
  return impl_->token_bytes.size();
}

} // namespace lf::text
