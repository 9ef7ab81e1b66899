#include "tools/train/corpus.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

#include "text/tokenizer.hpp"

namespace lf::train {

std::size_t corpus::train_tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& s : streams)
    n += s.train_size();
  return n;
}

std::size_t corpus::val_tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& s : streams)
    n += s.val_size();
  return n;
}

token_stream make_stream(std::string name, std::vector<std::int32_t> tokens, double val_fraction) {
  if (!(val_fraction >= 0.0 && val_fraction <= 0.5))
    throw std::invalid_argument("validation fraction must be within [0, 0.5], got "
                                + std::to_string(val_fraction));
  token_stream s;
  s.name = std::move(name);
  auto held = static_cast<std::size_t>(std::floor(static_cast<double>(tokens.size()) * val_fraction));
  s.train_end = tokens.size() - held;
  s.tokens = std::move(tokens);
  return s;
}

corpus make_corpus(std::vector<token_stream> streams, double mix_power, int context) {
  if (streams.empty())
    throw std::invalid_argument("no corpus files");
  if (context < 1)
    throw std::invalid_argument("context must be positive");
  corpus c;
  double total = 0;
  for (const auto& s : streams) {
    if (s.train_size() < static_cast<std::size_t>(context) + 1)
      throw std::invalid_argument("corpus '" + s.name + "': " + std::to_string(s.train_size())
                                  + " training tokens, fewer than one window of context + 1 = "
                                  + std::to_string(context + 1));
    double w = std::pow(static_cast<double>(s.train_size()), mix_power);
    c.weights.push_back(w);
    total += w;
  }
  for (auto& w : c.weights)
    w /= total;
  c.streams = std::move(streams);
  return c;
}

std::string stream_name(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

corpus load_corpus(const std::vector<std::string>& files, const text::tokenizer& tok,
                   double val_fraction, double mix_power, int context) {
  std::vector<token_stream> streams;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in)
      throw std::runtime_error(f + ": cannot read corpus file");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    streams.push_back(make_stream(stream_name(f), tok.encode(text, true), val_fraction));
  }
  return make_corpus(std::move(streams), mix_power, context);
}

namespace {

/// SplitMix64: spreads (seed, step, micro) over the 64-bit state of the row generator.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Uniform integer in [0, n) from the top 53 bits: independent of the standard library's
/// distribution algorithms, so a seed gives the same batches everywhere.
std::uint64_t below(std::mt19937_64& g, std::uint64_t n) {
  auto u = static_cast<double>(g() >> 11) * 0x1p-53;
  auto v = static_cast<std::uint64_t>(u * static_cast<double>(n));
  return v < n ? v : n - 1;
}

} // namespace

std::vector<std::int32_t> sample_windows(const corpus& c, std::uint64_t seed, std::int64_t step,
                                         int micro, int rows, int context) {
  std::mt19937_64 gen(mix(mix(mix(seed) ^ static_cast<std::uint64_t>(step)) ^
                          static_cast<std::uint64_t>(micro)));
  const auto len = static_cast<std::size_t>(context) + 1;
  std::vector<std::int32_t> out;
  out.reserve(static_cast<std::size_t>(rows) * len);
  for (int r = 0; r < rows; ++r) {
    double u = static_cast<double>(gen() >> 11) * 0x1p-53;
    std::size_t k = 0;
    while (k + 1 < c.weights.size() && u >= c.weights[k]) {
      u -= c.weights[k];
      ++k;
    }
    const auto& s = c.streams[k];
    if (s.train_size() < len)
      throw std::invalid_argument("corpus '" + s.name + "' is shorter than one window");
    auto start = below(gen, s.train_size() - len + 1);
    out.insert(out.end(), s.tokens.begin() + static_cast<std::ptrdiff_t>(start),
               s.tokens.begin() + static_cast<std::ptrdiff_t>(start + len));
  }
  return out;
}

window_set validation_windows(const token_stream& s, int context, std::size_t max_tokens) {
  window_set w;
  std::size_t avail = s.val_size();
  if (max_tokens > 0 && avail > max_tokens)
    avail = max_tokens;
  if (avail < 2)
    return w;
  const auto len = static_cast<std::size_t>(context) + 1;
  const auto* base = s.tokens.data() + s.train_end;
  if (avail < len) {
    w.length = static_cast<int>(avail);
    w.count = 1;
    w.tokens.assign(base, base + avail);
    return w;
  }
  w.length = static_cast<int>(len);
  // Window i covers [i * context, i * context + context]: consecutive windows share one token.
  for (std::size_t start = 0; start + len <= avail; start += len - 1) {
    w.tokens.insert(w.tokens.end(), base + start, base + start + len);
    ++w.count;
  }
  return w;
}

} // namespace lf::train
