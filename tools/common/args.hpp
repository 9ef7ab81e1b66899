#pragma once
/// A small command-line parser for the `lorafleet` subcommands: `--key value`, `--flag`, repeated
/// keys and positional arguments, with errors that name the flag.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace lf::tools {

/// Parsed arguments of one subcommand. Every accessor records the key as known; `finish()` then
/// rejects any flag the command did not ask about (a typo never passes silently).
/// Thrown by args::checkpoint() under LF_CHECK_ARGS=1 (not an error).
struct arguments_checked {};

class args {
public:
  /// `flags` are the keys that take no value.
  args(int argc, char** argv, int first, std::set<std::string> flags = {}) : flags_(std::move(flags)) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0 || a.size() == 2) {
        positional_.push_back(a);
        continue;
      }
      auto key = a.substr(2);
      if (auto eq = key.find('='); eq != std::string::npos) {
        values_[key.substr(0, eq)].push_back(key.substr(eq + 1));
      } else if (flags_.count(key)) {
        values_[key].push_back("1");
      } else if (i + 1 < argc) {
        values_[key].push_back(argv[++i]);
      } else {
        throw std::invalid_argument("--" + key + " needs a value");
      }
    }
  }

  bool has(const std::string& key) { known_.insert(key); return values_.count(key) > 0; }

  std::string str(const std::string& key, const std::string& def = {}) {
    known_.insert(key);
    auto it = values_.find(key);
    return it == values_.end() ? def : it->second.back();
  }

  /// Like str() but the flag must be present.
  std::string required(const std::string& key) {
    if (!has(key))
      throw std::invalid_argument("missing required --" + key);
    return str(key);
  }

  std::vector<std::string> all(const std::string& key) {
    known_.insert(key);
    auto it = values_.find(key);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
  }

  long long integer(const std::string& key, long long def) {
    auto s = str(key);
    if (s.empty())
      return def;
    try {
      std::size_t used = 0;
      auto v = std::stoll(s, &used);
      if (used == s.size())
        return v;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument("--" + key + " expects an integer (got '" + s + "')");
  }

  double real(const std::string& key, double def) {
    auto s = str(key);
    if (s.empty())
      return def;
    try {
      std::size_t used = 0;
      auto v = std::stod(s, &used);
      if (used == s.size() && std::isfinite(v))
        return v;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument("--" + key + " expects a finite number (got '" + s + "')");
  }

  /// integer() that must lie in [lo, hi]; the error names the flag, the range and the value.
  long long integer_in(const std::string& key, long long def, long long lo, long long hi) {
    const auto v = integer(key, def);
    if (v < lo || v > hi)
      throw std::invalid_argument("--" + key + " must be in [" + std::to_string(lo) + ", "
                                  + std::to_string(hi) + "] (got " + std::to_string(v) + ")");
    return v;
  }

  /// real() that must be > lo (or >= lo when `inclusive`) and <= hi.
  double real_above(const std::string& key, double def, double lo, bool inclusive = false,
                    double hi = HUGE_VAL) {
    const auto v = real(key, def);
    if (v < lo || (!inclusive && v == lo) || v > hi) {
      std::string range = (inclusive ? ">= " : "> ") + trimmed(lo);
      if (hi != HUGE_VAL)
        range += " and <= " + trimmed(hi);
      throw std::invalid_argument("--" + key + " must be " + range + " (got " + trimmed(v) + ")");
    }
    return v;
  }

  const std::vector<std::string>& positional() const { return positional_; }

  /// Throws for any flag that no accessor asked about. Under LF_CHECK_ARGS=1 the command stops
  /// here with arguments_checked (see checkpoint()), unless it called defer_check().
  void finish() const {
    for (auto& [k, v] : values_)
      if (!known_.count(k))
        throw std::invalid_argument("unknown option --" + k);
    if (!deferred_)
      checkpoint();
  }

  /// The command checks more after finish() (a config file, key files) and calls checkpoint()
  /// itself once it has.
  void defer_check() { deferred_ = true; }

  /// LF_CHECK_ARGS=1 in the environment: the arguments passed every check the command makes
  /// before it starts anything; throws arguments_checked, which run_command turns into
  /// "lorafleet: arguments ok" and exit status 0. Otherwise does nothing. (The deployment tests
  /// run a manifest's container command lines through this.)
  static void checkpoint() {
    const char* v = std::getenv("LF_CHECK_ARGS");
    if (v != nullptr && std::string(v) == "1")
      throw arguments_checked{};
  }

private:
  static std::string trimmed(double v) {
    auto s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.')
      s.pop_back();
    return s;
  }

  bool deferred_ = false;
  std::set<std::string> flags_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
  std::set<std::string> known_;
};

} // namespace lf::tools
