#pragma once
/// When the soak causes its faults: a pure state machine fed with the time, the requests ended
/// so far and the workers the router has registered, answering what to do now. One fault at a
/// time, each only on a whole cluster, so at least one worker node always serves:
///
///   waiting ──(share of requests ended, all workers registered)──> fire
///      ^        kill / drain ──> recovering          stop ──> holding ──(hold passed)──> resume
///      │                                                                                   │
///      └──────(kill, stop: workers dropped and all registered again; drain: at once)── recovering
///
/// A fault whose recovery takes longer than `recovery_limit` ends the sequence as failed.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/soak/plan.hpp"

namespace lf::soak {

/// What to do to the cluster now.
struct fault_step {
  enum class action { fire, resume };  ///< fire: do the fault; resume: SIGCONT a stopped node
  action what = action::fire;
  const fault* f = nullptr;
};

/// What happened to one fault, seconds from the start of the run (negative: not yet).
struct fault_record {
  fault f;
  double fired_s = -1, resumed_s = -1, recovered_s = -1;
  std::size_t ended_at_fire = 0;  ///< requests ended when it fired
  std::size_t live_at_fire = 0;   ///< requests in flight when it fired (what it could disturb)
  bool saw_drop = false;          ///< the router's worker count fell after it
};

/// See the file comment.
class fault_sequence {
public:
  fault_sequence(std::vector<fault> faults, std::size_t total_requests, std::uint32_t total_workers,
                 double recovery_limit_s = 120);

  /// `now_s`: seconds since the start; `ended` / `live`: requests ended / in flight;
  /// `workers`: router.workers (nullopt when the gateway did not answer). Returns the step to
  /// take, if any; the caller takes it before calling again.
  std::optional<fault_step> next(double now_s, std::size_t ended, std::size_t live,
                                 std::optional<std::uint32_t> workers);

  /// Every fault fired and recovered (or one failed to recover).
  bool finished() const { return current_ >= records_.size() || failed_; }
  /// A fault's recovery passed the limit.
  bool failed() const { return failed_; }
  /// A fault has fired and its node is not back yet (holding or recovering).
  bool busy() const { return !finished() && phase_ != phase::waiting; }
  /// The node currently stopped (SIGSTOP) and not yet resumed, if any: whoever ends the run
  /// early must SIGCONT it.
  std::optional<std::string> stopped_node() const;
  /// One record per fault, in order.
  const std::vector<fault_record>& records() const { return records_; }

private:
  enum class phase { waiting, holding, recovering };

  std::vector<fault_record> records_;
  std::size_t total_requests_;
  std::uint32_t total_workers_;
  double recovery_limit_s_;
  std::size_t current_ = 0;
  phase phase_ = phase::waiting;
  bool failed_ = false;
};

} // namespace lf::soak
