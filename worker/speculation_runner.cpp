#include "worker/speculation_runner.hpp"

#include <algorithm>

namespace lf::worker {

namespace {
const std::vector<std::int32_t> no_draft;
}

speculation_runner::speculation_runner(speculation_settings s, std::unique_ptr<draft_proposer> draft)
  : s_(s), draft_(std::move(draft)) {}

speculation_mode speculation_runner::mode_of(int choice) const noexcept {
  return choice == -1 ? s_.mode : choice == 0 ? speculation_mode::off : speculation_mode::on;
}

void speculation_runner::add(cache::seq_id seq, int choice) {
  rows_.insert_or_assign(seq, row_state{draft_length(choice > 0 ? static_cast<std::uint32_t>(choice) : s_.tokens), {}});
}

void speculation_runner::forget(cache::seq_id seq) {
  rows_.erase(seq);
  if (draft_)
    draft_->forget(seq);
}

void speculation_runner::propose(const std::vector<spec_candidate>& candidates, std::uint32_t rows,
                                 std::uint32_t step_tokens, const std::function<bool(cache::seq_id)>& keep) {
  const bool use_draft = draft_ && s_.method == speculation_method::draft;
  if (draft_)  // a sequence preempted or paused since the last step gives its draft blocks back
    draft_->retain(keep);
  for (auto& [seq, r] : rows_)
    r.draft.clear();
  // Rows under the automatic rule, and what their proposals would cost and bring.
  std::vector<row_state*> automatic;
  std::vector<draft_job> jobs;
  std::uint32_t extra = 0, draft_extra = 0;
  double gain = 0;
  for (const auto& c : candidates) {
    auto& r = rows_.at(c.seq);
    // Never past max_tokens or the credits (the scheduler would cut them; the draft model need not make them).
    const std::size_t k = std::min<std::size_t>(r.len.next(), c.room);
    if (k == 0)
      continue;
    const bool is_auto = c.mode == speculation_mode::automatic;
    std::size_t proposed = k;
    if (use_draft) {
      // The draft model runs below, once the automatic rule has said which rows speculate.
      jobs.push_back({{c.seq, c.tokens, static_cast<std::uint32_t>(k)}, is_auto});
      if (is_auto)
        draft_extra += static_cast<std::uint32_t>(k);
    } else {
      r.draft = propose_ngram(*c.tokens, k, s_.ngram);
      proposed = r.draft.size();
    }
    if (is_auto && proposed > 0) {
      automatic.push_back(&r);
      extra += static_cast<std::uint32_t>(proposed);
      gain += r.len.acceptance() * static_cast<double>(proposed);
    }
  }
  const bool automatic_pays =
    automatic.empty() || cost_.pays(step_tokens, rows, gain, extra, s_.auto_rows, draft_ms_per_token_ * draft_extra);
  if (!automatic_pays)
    for (auto* r : automatic)
      r->draft.clear();
  std::vector<draft_want> wants;
  for (const auto& j : jobs)
    if (automatic_pays || !j.automatic)  // nor does the draft model run for the automatic rows
      wants.push_back(j.want);
  if (!wants.empty())
    run_draft_model(wants);
}

void speculation_runner::run_draft_model(const std::vector<draft_want>& wants) {
  const auto before = draft_->counters();
  auto proposals = draft_->propose(wants);
  const auto& after = draft_->counters();
  for (std::size_t i = 0; i < wants.size(); ++i) {
    auto& r = rows_.at(wants[i].id);
    r.draft = std::move(proposals[i]);
    if (r.draft.empty())  // the draft could not serve it: n-gram lookup instead
      r.draft = propose_ngram(*wants[i].tokens, wants[i].k, s_.ngram);
  }
  const auto ms = after.ms - before.ms;
  const auto made = after.proposed - before.proposed;
  if (made > 0) {
    const double per = ms / static_cast<double>(made);
    draft_ms_per_token_ = draft_ms_per_token_ == 0 ? per : 0.9 * draft_ms_per_token_ + 0.1 * per;
  }
  stats_.draft_rows += after.rows - before.rows;
  stats_.draft_proposed += made;
  stats_.draft_refused += after.refused - before.refused;
  stats_.draft_ms += ms;
}

const std::vector<std::int32_t>& speculation_runner::draft(cache::seq_id seq) const {
  auto it = rows_.find(seq);
  return it == rows_.end() ? no_draft : it->second.draft;
}

void speculation_runner::verified(cache::seq_id seq, std::uint32_t proposed, std::uint32_t accepted) {
  rows_.at(seq).len.update(proposed, accepted);
  stats_.proposed += proposed;
  stats_.accepted += accepted;
  stats_.rows += 1;
  stats_.emitted += accepted + 1;
}

speculation_stats speculation_runner::end_step() {
  for (auto& [seq, r] : rows_)
    r.draft.clear();
  auto out = stats_;
  stats_ = {};
  return out;
}

} // namespace lf::worker
