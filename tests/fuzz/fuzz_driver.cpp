/// A small stand-in for libFuzzer: runs LLVMFuzzerTestOneInput (fuzz_protocol.cpp) on random
/// mutations of a seed corpus of valid frames, so the decoder is fuzzed by every ctest run with
/// any compiler. No coverage feedback; instead inputs that still decode are kept in a pool and
/// mutated further, which gets past the envelope checks into each message's fields.
///
///   fuzz_driver [--seconds S] [--iterations N] [--seed X] [--max-len BYTES]   fuzz
///   fuzz_driver FILE...                                                       replay inputs
///   fuzz_driver --write-seeds DIR                  the seed corpus as files (for libFuzzer)
///
/// Deterministic for a given seed up to the time bound. On a crash (abort, signal or a sanitizer
/// report) the input is written to crash-<seed>-<iteration>.bin for replay.

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <unistd.h>
#include <variant>
#include <vector>

#include "tests/fuzz/fuzz_seeds.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

// --- crash reporting: async-signal-safe, so only write(2) and friends ---

const std::string* g_input = nullptr;
std::uint64_t g_seed = 0;
std::uint64_t g_iteration = 0;

void put(int fd, const char* s) { (void)!write(fd, s, std::strlen(s)); }

void put_u64(int fd, std::uint64_t v) {
  char buf[24];
  int i = sizeof buf;
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  (void)!write(fd, buf + i, sizeof buf - static_cast<unsigned>(i));
}

void dump_input() {
  if (g_input == nullptr)
    return;
  char name[96] = "crash-";
  std::size_t n = std::strlen(name);
  for (auto v : {g_seed, g_iteration}) {
    char digits[24];
    int i = sizeof digits;
    do {
      digits[--i] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    std::memcpy(name + n, digits + i, sizeof digits - static_cast<unsigned>(i));
    n += sizeof digits - static_cast<unsigned>(i);
    name[n++] = '-';
  }
  std::memcpy(name + n - 1, ".bin", 5);
  put(2, "fuzz_driver: crash at iteration ");
  put_u64(2, g_iteration);
  put(2, " (seed ");
  put_u64(2, g_seed);
  put(2, "); input written to ");
  put(2, name);
  put(2, "\n");
  const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!write(fd, g_input->data(), g_input->size());
    close(fd);
  }
  g_input = nullptr;
}

void on_signal(int sig) {
  dump_input();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// --- mutations ---

class mutator {
public:
  explicit mutator(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return n == 0 ? 0 : rng_() % n; }

  /// One to four stacked mutations of `in`, with `other` for splices; at most `max_len` bytes.
  std::string mutate(std::string s, const std::string& other, std::size_t max_len) {
    const auto& tokens = lf::fuzz::interesting_tokens();
    for (std::size_t rounds = 1 + below(4); rounds > 0; --rounds) {
      const std::size_t pos = below(s.size() + 1);
      switch (below(10)) {
        case 0:
          if (!s.empty())
            s[below(s.size())] ^= static_cast<char>(1u << below(8));
          break;
        case 1:
          if (!s.empty())
            s[below(s.size())] = static_cast<char>(rng_());
          break;
        case 2: s.insert(pos, 1 + below(4), static_cast<char>(rng_())); break;
        case 3: s.erase(pos, 1 + below(8)); break;
        case 4: {  // copy a chunk elsewhere
          if (s.empty())
            break;
          const auto from = below(s.size());
          const auto chunk = s.substr(from, 1 + below(16));
          s.insert(below(s.size() + 1), chunk);
          break;
        }
        case 5:  // splice: our head, the other input's tail
          s = s.substr(0, pos) + other.substr(below(other.size() + 1));
          break;
        case 6: s.resize(below(s.size() + 1)); break;
        case 7: {  // overwrite with an interesting msgpack value
          const auto& t = tokens[below(tokens.size())];
          s.replace(pos, t.size(), t);
          break;
        }
        case 8: s.insert(pos, tokens[below(tokens.size())]); break;
        default: s += tokens[below(tokens.size())]; break;
      }
    }
    if (s.size() > max_len)
      s.resize(max_len);
    return s;
  }

private:
  std::mt19937_64 rng_;
};

struct options {
  double seconds = 20;
  std::uint64_t iterations = 1'000'000;
  std::uint64_t seed = 1;
  std::size_t max_len = 4096;
  std::vector<std::string> files;
  std::string seed_dir;
};

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seconds" && has_value)
      o.seconds = std::atof(argv[++i]);
    else if (a == "--iterations" && has_value)
      o.iterations = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed" && has_value)
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--max-len" && has_value)
      o.max_len = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--write-seeds" && has_value)
      o.seed_dir = argv[++i];
    else if (a.rfind("--", 0) == 0)
      return false;
    else
      o.files.push_back(a);
  }
  return true;
}

/// Runs the target on `input`, which stays the crash input until the next call.
void run_one(const std::string& input) {
  g_input = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  if (!parse(argc, argv, opt)) {
    std::fprintf(stderr, "usage: fuzz_driver [--seconds S] [--iterations N] [--seed X] "
                         "[--max-len BYTES] | fuzz_driver FILE... | fuzz_driver --write-seeds DIR\n");
    return 2;
  }
  if (!opt.seed_dir.empty()) {
    const auto seeds = lf::fuzz::seed_corpus();
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      const auto path = opt.seed_dir + "/seed-" + std::to_string(i) + ".bin";
      std::ofstream out(path, std::ios::binary);
      out.write(seeds[i].data(), static_cast<std::streamsize>(seeds[i].size()));
      if (!out) {
        std::fprintf(stderr, "fuzz_driver: cannot write %s\n", path.c_str());
        return 1;
      }
    }
    std::printf("fuzz_driver: wrote %zu seeds to %s\n", seeds.size(), opt.seed_dir.c_str());
    return 0;
  }
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    std::signal(sig, on_signal);
  if (&__sanitizer_set_death_callback != nullptr)
    __sanitizer_set_death_callback(dump_input);

  if (!opt.files.empty()) {
    for (const auto& path : opt.files) {
      std::ifstream in(path, std::ios::binary);
      const std::string input{std::istreambuf_iterator<char>(in), {}};
      run_one(input);
      g_input = nullptr;
      std::printf("%s: %zu bytes, ok\n", path.c_str(), input.size());
    }
    return 0;
  }

  g_seed = opt.seed;
  mutator mut(opt.seed);
  const auto seeds = lf::fuzz::seed_corpus();
  std::vector<std::string> pool = seeds;  // seeds plus mutants that still decode
  constexpr std::size_t max_pool = 1024;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t kept = 0;
  std::uint64_t it = 0;
  for (const auto& s : seeds)
    run_one(s);
  for (; it < opt.iterations; ++it) {
    if (it % 1024 == 0) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (elapsed.count() >= opt.seconds)
        break;
    }
    g_iteration = it;
    const auto& base = pool[mut.below(pool.size())];
    const auto& other = pool[mut.below(pool.size())];
    g_input = nullptr;
    const auto input = mut.mutate(base, other, opt.max_len);
    run_one(input);
    if (lf::fuzz::decodes(input)) {
      ++kept;
      if (pool.size() < max_pool)
        pool.push_back(input);
      else
        pool[seeds.size() + mut.below(max_pool - seeds.size())] = input;
    }
  }
  g_input = nullptr;
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("fuzz_driver: %llu inputs in %.1f s (seed %llu), %llu still decoded, pool %zu, "
              "no findings\n",
              static_cast<unsigned long long>(it), elapsed.count(),
              static_cast<unsigned long long>(opt.seed), static_cast<unsigned long long>(kept),
              pool.size());
  return 0;
}
