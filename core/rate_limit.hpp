#pragma once
/// Rate limits per API key, OpenAI's model: requests per minute and tokens per minute, each a
/// token bucket that holds at most a minute's worth and refills continuously. Pure C++; the time
/// is passed in, so every rule is tested without waiting.
///
///   rate_limiter rl;
///   auto v = rl.admit("alice", {60, 40000}, prompt_tokens + max_tokens, now);
///   if (!v.allowed) reply 429 with Retry-After: ceil(v.retry_after_ms / 1000) and v's headers
///
/// A request is charged one request and its prompt plus max_tokens tokens when it is admitted
/// (what it may use at most, as OpenAI counts max_tokens against the limit); nothing is refunded.
/// A request that could never fit (more tokens than a whole minute's budget) is refused as such.
/// Buckets live per key name, so memory is bounded by the key file.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace lf {

/// One key's limits; 0 = no limit of that kind.
struct rate_limits {
  std::uint32_t requests_per_minute = 0;
  std::uint64_t tokens_per_minute = 0;
  /// Any limit at all.
  bool any() const noexcept { return requests_per_minute != 0 || tokens_per_minute != 0; }
};

/// A bucket of `capacity` that refills `capacity` per minute.
class token_bucket {
public:
  using clock = std::chrono::steady_clock;

  /// Full at `now`.
  token_bucket(double capacity, clock::time_point now) : capacity_(capacity), level_(capacity), at_(now) {}

  /// What it holds at `now` (after refilling since the last look).
  double level(clock::time_point now);
  /// Takes `n` if it holds them at `now`; false (nothing taken) otherwise.
  bool take(double n, clock::time_point now);
  /// How long until it holds `n` (0 if it does now; `n` must not exceed the capacity).
  std::chrono::milliseconds wait_for(double n, clock::time_point now);
  /// How long until it is full again.
  std::chrono::milliseconds until_full(clock::time_point now);
  double capacity() const noexcept { return capacity_; }

private:
  double capacity_, level_;
  clock::time_point at_;
};

/// What one admission decided, with the figures OpenAI's x-ratelimit-* headers carry.
struct rate_verdict {
  bool allowed = true;
  bool never = false;                 ///< more tokens than a whole minute's budget: retrying cannot help
  std::uint32_t retry_after_ms = 0;   ///< when refused: when it would fit
  bool limited_requests = false, limited_tokens = false;  ///< which limits the key has
  std::uint64_t limit_requests = 0, remaining_requests = 0, reset_requests_ms = 0;
  std::uint64_t limit_tokens = 0, remaining_tokens = 0, reset_tokens_ms = 0;
};

/// OpenAI's spelling of a reset time: "1s", "6m0s", "250ms".
std::string reset_text(std::uint64_t ms);

/// Token buckets per key name. Not thread-safe (its owner serialises).
class rate_limiter {
public:
  using clock = token_bucket::clock;

  /// Charges `key` one request and `tokens` tokens at `now` when both buckets hold them
  /// (neither is charged otherwise). A key without limits is always allowed.
  rate_verdict admit(const std::string& key, const rate_limits& limits, std::uint64_t tokens, clock::time_point now);

private:
  struct buckets {
    rate_limits limits;
    token_bucket requests, tokens;
  };
  std::map<std::string, buckets> by_key_;
};

/// What one key was charged and refused so far (per-key metrics).
struct key_rate_counts {
  std::uint64_t admitted = 0;      ///< requests charged
  std::uint64_t rate_limited = 0;  ///< requests refused by a limit (or too big for one)
  std::uint64_t tokens = 0;        ///< tokens charged (prompt + max_tokens)
};

/// One rate_limiter shared by every gateway of a process (its ZeroMQ and HTTP gateways), so a key
/// cannot spend its limit twice by using both protocols; with its per-key counts. Thread-safe.
///
/// `share`: the number of gateway processes the cluster spreads a key's traffic over (a split
/// front's gateway nodes). Each enforces 1/share of every limit (rounded down, at least 1), so
/// the cluster as a whole never admits more than the key's limit; a key whose clients all use one
/// gateway gets only that gateway's share.
class shared_rate_limiter {
public:
  using clock = rate_limiter::clock;

  explicit shared_rate_limiter(std::uint32_t share = 1) : share_(share == 0 ? 1 : share) {}
  /// The limits this process enforces for a key with `limits` (its share of them).
  rate_limits share_of(const rate_limits& limits) const noexcept;

  /// rate_limiter::admit under the lock, counted.
  rate_verdict admit(const std::string& key, const rate_limits& limits, std::uint64_t tokens, clock::time_point now);
  /// Every limited key's counts so far (keys that were never charged are absent).
  std::map<std::string, key_rate_counts> counts() const;

private:
  std::uint32_t share_;
  mutable std::mutex m_;
  rate_limiter limiter_;
  std::map<std::string, key_rate_counts> counts_;
};

} // namespace lf
