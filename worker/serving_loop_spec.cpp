// The serving loop's speculative decoding: each decoding row's limits for the speculation runner
// before the step (speculation_runner.hpp proposes), the verified counts after it (drive_step,
// step_driver.hpp, verifies). Why verification keeps every request's output exactly what plain
// decoding gives: worker/speculation.hpp.
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>

#include "worker/step_driver.hpp"

namespace lf::worker {

void serving_loop::propose_drafts() {
  // Every decoding row counts for the automatic rule; those that may speculate are candidates.
  std::vector<spec_candidate> candidates;
  std::uint32_t rows = 0;
  bool automatic = false;
  for (auto seq : sched_.running()) {
    if (sched_.phase(seq) != seq_phase::decoding)
      continue;
    ++rows;
    auto& lr = *live_.at(request_id{seq.value()});
    const auto mode = spec_.mode_of(lr.req.speculative());
    // A constrained row is not speculated: its proposals would need a mask per position.
    if (mode == speculation_mode::off || lr.guide)
      continue;
    // Room after this step's token: within max_tokens, and within the client's credits (every
    // emitted token must be within its allowance).
    const auto done = lr.generated.size() + 1;
    const auto most = static_cast<std::size_t>(std::max(0, lr.req.params().max_tokens));
    std::size_t room = most > done ? most - done : 0;
    if (!lr.credits.unlimited())
      room = std::min<std::size_t>(room, lr.credits.bound() > done ? lr.credits.bound() - done : 0);
    candidates.push_back({seq, mode, room, &sched_.tokens(seq)});
    automatic = automatic || mode == speculation_mode::automatic;
  }
  // The step's size without the proposals (one token per decoding row, plus prefill up to the
  // budget): only the automatic rule reads it, and counting the waiting tokens walks the queue.
  std::uint32_t step_tokens = 0;
  if (automatic)
    step_tokens = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(sched_.config().max_batched_tokens, rows + sched_.get_load().waiting_tokens));
  spec_.propose(candidates, rows, step_tokens, [this](cache::seq_id id) {
    return sched_.contains(id) && !sched_.paused(id) && sched_.phase(id) == seq_phase::decoding;
  });
}

void serving_loop::count_speculation(const std::vector<request_turn>& turns) {
  for (const auto& t : turns)
    if (t.draft > 0)
      spec_.verified(cache::seq_id{t.id.value()}, t.draft, t.accepted);
  const auto st = spec_.end_step();
  if (st.rows == 0 && st.draft_rows == 0 && st.draft_refused == 0)
    return;
  std::lock_guard<std::mutex> g(mtx_);
  auto& into = load_.speculation;
  into.proposed += st.proposed;
  into.accepted += st.accepted;
  into.rows += st.rows;
  into.emitted += st.emitted;
  into.draft_rows += st.draft_rows;
  into.draft_proposed += st.draft_proposed;
  into.draft_refused += st.draft_refused;
  into.draft_ms += st.draft_ms;
}

} // namespace lf::worker
