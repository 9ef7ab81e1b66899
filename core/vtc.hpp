#pragma once
/// Virtual token counters (VTC: Sheng et al., "Fairness in Serving Large Language Models",
/// OSDI 2024): who is served next when several tenants have work waiting. Pure, standard library
/// only, no clock; the router's admission queue and each worker's scheduler own one.
///
/// Each tenant t has a counter c_t, the weighted service it has received so far:
///
///     serving t adds (w_p * prompt tokens + w_o * output tokens) / weight_t
///
/// The next request comes from the backlogged tenant (one with work waiting) whose counter is
/// smallest; ties go to the tenant backlogged longest; within a tenant, first come first served
/// (the owner keeps the per-tenant order). A tenant that becomes backlogged is lifted:
///
///     c_t = max(c_t, min { c_u : u backlogged })      some tenant is backlogged
///     c_t = max(c_t, c_l)                              none is; l = the last tenant to leave
///
/// so a tenant cannot bank credit while idle and then starve the others (the paper's lift).
/// While two tenants stay backlogged their counters stay within one request's charge plus what
/// the requests they have in service may still add, so the service they receive over any window
/// differs by a bounded amount whatever their loads (docs/benchmarks.md, "Tenants").
///
/// Memory: counters of idle tenants at or below the floor (the smallest backlogged counter, or
/// c_l) are dropped as the table grows; the lift would bring them to the floor anyway, so
/// forgetting them changes no decision. Past max_tenants counters, the smallest idle ones go too.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace lf {

/// Who is served next among requests of different tenants (the router's admission queue, a
/// worker's waiting queue).
enum class scheduling_policy {
  fcfs,  ///< the oldest
  vtc,   ///< the oldest of the backlogged tenant with the smallest virtual token counter
};

/// "fcfs", "vtc".
std::string_view to_string(scheduling_policy p) noexcept;

/// Inverse of to_string.
std::optional<scheduling_policy> parse_scheduling_policy(std::string_view s) noexcept;

/// What one token of each kind costs (the paper's w_p and w_q; output tokens cost more: each is a
/// step of its own).
struct vtc_weights {
  double prompt = 1.0;
  double output = 2.0;
};

/// See the file comment. Not thread-safe (one owner serialises calls).
class vtc {
public:
  /// Throws std::invalid_argument unless both weights are finite and >= 0.
  explicit vtc(vtc_weights w = {});

  /// `tenant`'s share (the paper's client weight): it is charged 1 / weight of what it gets, so
  /// a tenant of weight 2 receives twice the service of one of weight 1 while both are
  /// backlogged. Default 1. Throws std::invalid_argument unless finite and > 0.
  void set_weight(const std::string& tenant, double weight);

  /// `tenant` goes back to the default weight.
  void clear_weight(const std::string& tenant) { weight_.erase(tenant); }

  /// The weight of tenants without one of their own (1 unless set). Same rule as set_weight.
  void set_default_weight(double weight);

  /// `tenant`'s weight (the default unless set).
  double weight(const std::string& tenant) const;

  /// `tenant` has work waiting now: lifts its counter (see the file comment). No-op when it is
  /// backlogged already.
  void backlogged(const std::string& tenant);

  /// `tenant` has nothing waiting any more. No-op when it was not backlogged.
  void idle(const std::string& tenant);

  /// Whether `tenant` is backlogged.
  bool is_backlogged(const std::string& tenant) const;

  /// Charges `tenant` for tokens served (prompt tokens computed, output tokens generated).
  void charge(const std::string& tenant, std::uint64_t prompt_tokens, std::uint64_t output_tokens);

  /// `tenant`'s counter (0 for a tenant never charged, or forgotten).
  double counter(const std::string& tenant) const;

  /// The backlogged tenant with the smallest counter among those `eligible` accepts (every
  /// backlogged tenant when `eligible` is empty); ties: backlogged longest. nullopt when none.
  std::optional<std::string> pick(const std::function<bool(const std::string&)>& eligible = {}) const;

  /// Tenants backlogged now.
  std::size_t backlogged_count() const noexcept { return backlogged_; }

  /// Sum of the weights of the backlogged tenants (0 when none).
  double backlogged_weight() const;

  /// Tenants with a counter kept.
  std::size_t size() const noexcept { return t_.size(); }

  /// Counters kept at most when pruning (idle tenants above the floor go, smallest first).
  static constexpr std::size_t max_tenants = 65536;

  /// The token weights in force.
  const vtc_weights& weights() const noexcept { return w_; }

private:
  struct entry {
    double counter = 0;
    bool backlogged = false;
    std::uint64_t since = 0;  ///< order of becoming backlogged (ties)
  };

  /// The counter a newly backlogged tenant is lifted to.
  double floor() const;
  /// Drops idle tenants at or below the floor (see the file comment).
  void prune();

  vtc_weights w_;
  std::unordered_map<std::string, entry> t_;
  std::unordered_map<std::string, double> weight_;
  double default_weight_ = 1.0;
  std::size_t backlogged_ = 0;
  std::uint64_t seq_ = 0;
  std::optional<std::string> last_left_;  ///< the last tenant that left the backlog
  double last_left_counter_ = 0; ///< its counter then (if it has been forgotten since)
  std::size_t prune_at_ = 1024;
};

} // namespace lf
