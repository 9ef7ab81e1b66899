#include "worker/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lf::worker {

namespace {

std::string seq_name(cache::seq_id id) { return "sequence " + std::to_string(id.value()); }

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

} // namespace

std::string_view to_string(seq_phase phase) noexcept {
  switch (phase) {
    case seq_phase::waiting:
      return "waiting";
    case seq_phase::prefilling:
      return "prefilling";
    case seq_phase::decoding:
      return "decoding";
  }
  return "unknown";
}

scheduler::scheduler(scheduler_config cfg, cache::block_manager& blocks)
  : cfg_(cfg), blocks_(blocks), fair_(cfg.token_weights) {
  if (cfg.max_seqs == 0 || cfg.max_batched_tokens == 0)
    throw std::invalid_argument("scheduler: max_seqs and max_batched_tokens "
                                "must be > 0");
  // Otherwise the decodes of a full batch would not fit one step and the newest running
  // sequences could be left without a token step after step.
  if (cfg.max_seqs > cfg.max_batched_tokens)
    throw std::invalid_argument("scheduler: max_seqs (" + std::to_string(cfg.max_seqs)
                                + ") must not exceed max_batched_tokens ("
                                + std::to_string(cfg.max_batched_tokens) + ")");
  // A prefix cache would hand the forgotten K/V straight back: nothing would be recomputed.
  if (cfg.recompute && blocks.prefix_cache_enabled())
    throw std::invalid_argument("scheduler: recompute (no KV cache) needs a block manager without a prefix cache");
}

// -- queries ------------------------------------------------------------------------------------

scheduler::seq_state& scheduler::state_of(cache::seq_id id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    throw std::out_of_range("scheduler: unknown " + seq_name(id));
  return it->second;
}

const scheduler::seq_state& scheduler::state_of(cache::seq_id id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    throw std::out_of_range("scheduler: unknown " + seq_name(id));
  return it->second;
}

bool scheduler::contains(cache::seq_id id) const { return seqs_.count(id) != 0; }

seq_phase scheduler::phase(cache::seq_id id) const { return state_of(id).phase; }

const std::vector<std::int32_t>& scheduler::tokens(cache::seq_id id) const {
  return state_of(id).tokens;
}

std::uint32_t scheduler::prompt_size(cache::seq_id id) const { return state_of(id).prompt_size; }

std::uint32_t scheduler::num_generated(cache::seq_id id) const {
  return state_of(id).num_generated();
}

std::uint32_t scheduler::max_tokens(cache::seq_id id) const { return state_of(id).max_tokens; }

std::uint32_t scheduler::num_preemptions(cache::seq_id id) const {
  return state_of(id).preemptions;
}

cache::adapter_id scheduler::adapter(cache::seq_id id) const { return state_of(id).adapter; }

const std::string& scheduler::tenant(cache::seq_id id) const { return state_of(id).tenant; }

std::vector<cache::seq_id> scheduler::waiting() const { return {waiting_.begin(), waiting_.end()}; }

std::vector<cache::seq_id> scheduler::running() const { return running_; }

scheduler::load scheduler::get_load() const {
  load l;
  l.waiting = static_cast<std::uint32_t>(waiting_.size());
  l.running = static_cast<std::uint32_t>(running_.size());
  for (auto id : waiting_)
    l.waiting_tokens += state_of(id).tokens.size();
  for (auto id : running_) {
    const auto& st = state_of(id);
    l.running_tokens += st.tokens.size();
    if (st.phase == seq_phase::prefilling)
      l.waiting_tokens += st.tokens.size() - blocks_.num_computed(id);
  }
  l.free_blocks = blocks_.num_free_blocks();
  l.preemptions = preemptions_;
  l.paused = paused_;
  return l;
}

// -- lifecycle ----------------------------------------------------------------------------------

std::optional<std::string> scheduler::add(seq_spec spec, time_point) {
  const auto name = seq_name(spec.id);
  if (spec.prompt.empty())
    return name + ": empty prompt";
  if (spec.max_tokens == 0)
    return name + ": max_tokens must be > 0";
  if (contains(spec.id) || blocks_.contains(spec.id))
    return name + ": duplicate id";
  if (!std::isfinite(spec.weight) || !(spec.weight > 0))
    return name + ": tenant weight must be finite and > 0";
  const auto need = std::uint64_t{spec.prompt.size()} + spec.max_tokens;
  // The sequence may grow to `need` tokens and must then fit the pool on its own, or no amount
  // of preemption could make room for it.
  const auto need_blocks = ceil_div(need, blocks_.block_size());
  if (need_blocks > blocks_.num_blocks())
    return name + ": prompt + max_tokens (" + std::to_string(need) + " tokens) needs "
           + std::to_string(need_blocks) + " KV blocks but the pool has only "
           + std::to_string(blocks_.num_blocks());
  seq_state st;
  st.prompt_size = static_cast<std::uint32_t>(spec.prompt.size());
  st.tokens = std::move(spec.prompt);
  st.max_tokens = spec.max_tokens;
  st.adapter = spec.adapter;
  st.deadline = spec.deadline;
  st.tenant = std::move(spec.tenant);
  st.salt = cache::request_salt(cfg_.isolation, st.tenant);
  if (tenant_seqs_[st.tenant]++ == 0 || spec.weight != fair_.weight(st.tenant)) {
    if (spec.weight == 1.0)
      fair_.clear_weight(st.tenant);
    else
      fair_.set_weight(st.tenant, spec.weight);
  }
  entered_waiting(st);
  seqs_.emplace(spec.id, std::move(st));
  waiting_.push_back(spec.id);
  return std::nullopt;
}

bool scheduler::pause(cache::seq_id id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second.paused)
    return false;
  auto& st = it->second;
  unlist(id, st);
  blocks_.free(id);  // no-op for a waiting sequence: it holds no blocks
  st.phase = seq_phase::waiting;
  st.paused = true;
  ++paused_;
  return true;
}

bool scheduler::resume(cache::seq_id id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || !it->second.paused)
    return false;
  it->second.paused = false;
  it->second.head = true;
  --paused_;
  waiting_.push_front(id);
  entered_waiting(it->second);
  return true;
}

bool scheduler::paused(cache::seq_id id) const { return state_of(id).paused; }

void scheduler::unlist(cache::seq_id id, const seq_state& st) {
  if (st.paused)
    return;  // neither waiting nor running
  if (st.phase == seq_phase::waiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
    left_waiting(st);
  } else {
    running_.erase(std::find(running_.begin(), running_.end(), id));
  }
}

bool scheduler::finish(cache::seq_id id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return false;
  if (it->second.paused)
    --paused_;
  unlist(id, it->second);
  blocks_.free(id); // no-op for a waiting or paused sequence: it holds no blocks
  if (auto t = tenant_seqs_.find(it->second.tenant); t != tenant_seqs_.end() && --t->second == 0) {
    fair_.clear_weight(t->first);
    tenant_seqs_.erase(t);
  }
  seqs_.erase(it);
  return true;
}

// -- planning -----------------------------------------------------------------------------------

step_plan scheduler::schedule(time_point now,
                              const std::function<bool(cache::adapter_id)>& adapter_ready,
                              const std::function<std::uint32_t(cache::seq_id)>& drafts) {
  check_limits();
  step_plan plan;
  expire(now, plan);
  auto budget = cfg_.max_batched_tokens;
  if (!cfg_.recompute) {
    schedule_decodes(plan, budget, drafts);
  } else if (std::none_of(running_.begin(), running_.end(),
                          [&](cache::seq_id id) { return state_of(id).phase == seq_phase::prefilling; })) {
    // Rounds, as a batch without a cache runs: once every running sequence has its next token,
    // they all recompute; one that finishes its round early waits for the others.
    forget_kv(plan);
  }
  continue_prefills(plan, budget);
  // Admitting right after preempting would hand the blocks just freed to a newcomer and likely
  // preempt again next step; let the running ones use them first.
  if (plan.preempted.empty())
    admit(plan, budget, adapter_ready);
  plan.num_tokens = cfg_.max_batched_tokens - budget;
  return plan;
}

void scheduler::check_limits() const {
  for (const auto& [id, st] : seqs_)
    if (st.num_generated() >= st.max_tokens)
      throw std::logic_error("scheduler::schedule: " + seq_name(id) + " has generated "
                             + std::to_string(st.num_generated()) + " of max_tokens "
                             + std::to_string(st.max_tokens) + " but was not finished");
}

void scheduler::expire(time_point now, step_plan& plan) {
  auto expired = [&](cache::seq_id id) {
    const auto& dl = state_of(id).deadline;
    return dl && *dl <= now;
  };
  // Queue order, running first: the report lists them in a stable, meaningful order.
  for (auto id : running_)
    if (expired(id))
      plan.expired.push_back(id);
  for (auto id : waiting_)
    if (expired(id))
      plan.expired.push_back(id);
  if (paused_ > 0) {
    std::vector<cache::seq_id> paused;
    for (const auto& [id, st] : seqs_)
      if (st.paused && expired(id))
        paused.push_back(id);
    std::sort(paused.begin(), paused.end());  // a stable order for the report
    plan.expired.insert(plan.expired.end(), paused.begin(), paused.end());
  }
  for (auto id : plan.expired)
    finish(id);
}

void scheduler::schedule_decodes(step_plan& plan, std::uint32_t& budget,
                                 const std::function<std::uint32_t(cache::seq_id)>& drafts) {
  // Every decoding sequence's own token comes first: proposals get what is left of the budget.
  std::uint32_t decoding = 0;
  for (auto id : running_)
    decoding += state_of(id).phase == seq_phase::decoding;
  std::uint32_t spare = budget > decoding ? budget - decoding : 0;
  // Oldest first: when blocks run short, the newest sequences are preempted for the oldest. Each
  // preemption shrinks running_, so this loop ends even in the worst case.
  for (std::size_t i = 0; i < running_.size(); ++i) {
    const auto id = running_[i];
    const auto& st = state_of(id);
    if (st.phase != seq_phase::decoding)
      continue;
    --decoding;  // the decoding sequences after this one
    const auto n = static_cast<std::uint32_t>(st.tokens.size());
    std::uint32_t k = drafts ? drafts(id) : 0;
    // 1 + k tokens come out of the step at most: never past max_tokens.
    k = std::min({k, spare, st.max_tokens - st.num_generated() - 1});
    if (k > 0) {
      // Proposals use free blocks only where every later decoding sequence keeps one to grow into.
      const auto own = blocks_.blocks_to_grow(id, n);
      const auto with = blocks_.blocks_to_grow(id, n + k);
      if (with > own && std::uint64_t{with} + decoding > blocks_.num_free_blocks())
        k = 0;
      else if (!blocks_.ensure_slots(id, n + k))
        k = 0;
    }
    bool self_preempted = false;
    while (!blocks_.ensure_slots(id, n)) {
      // running_.back() is newer than `id` (not yet planned this step) or `id` itself; planned
      // decodes are never taken back.
      if (preempt_newest(plan) == id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted)
      break; // `id` was the newest: nothing after it
    // max_seqs <= max_batched_tokens, so a decode always fits the budget.
    plan.chunks.push_back({id, n - 1, 1 + k, true, k});
    budget -= 1 + k;
    spare -= k;
    fair_.charge(st.tenant, 0, 1 + k);
  }
}

void scheduler::forget_kv(step_plan& plan) {
  std::vector<cache::seq_id> evicted;
  for (std::size_t i = 0; i < running_.size();) {
    const auto id = running_[i];
    auto& st = state_of(id);
    if (st.phase != seq_phase::decoding) {
      ++i;
      continue;
    }
    blocks_.free(id);
    // It held n - 1 computed positions; n needs at most one block more, which may be short.
    if (blocks_.allocate(id, st.tokens, st.adapter, st.salt)) {
      st.phase = seq_phase::prefilling;
      ++i;
      continue;
    }
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    evicted.push_back(id);
  }
  // Newest first, as preempt_newest takes them: the oldest ends up at the head of the queue.
  for (auto it = evicted.rbegin(); it != evicted.rend(); ++it)
    requeue_preempted(*it, plan);
}

void scheduler::continue_prefills(step_plan& plan, std::uint32_t& budget) {
  for (auto id : running_) {
    if (state_of(id).phase != seq_phase::prefilling)
      continue;
    if (!plan_prefill(id, plan, budget))
      return;
  }
}

void scheduler::admit(step_plan& plan, std::uint32_t& budget,
                      const std::function<bool(cache::adapter_id)>& adapter_ready) {
  while (budget > 0 && running_.size() < cfg_.max_seqs) {
    const auto it = next_waiting(adapter_ready);
    if (it == waiting_.end())
      return;
    const auto id = *it;
    auto& st = state_of(id);
    if (!running_.empty() && cfg_.watermark_blocks > 0) {
      const auto need = blocks_.blocks_needed(st.tokens, st.adapter, st.salt);
      if (std::uint64_t{need} + cfg_.watermark_blocks > blocks_.num_free_blocks())
        return;
    }
    // When the one whose turn it is does not fit, nobody after it may take the blocks it waits for.
    if (!blocks_.allocate(id, st.tokens, st.adapter, st.salt))
      return;
    st.phase = seq_phase::prefilling;
    st.head = false;
    running_.push_back(id);
    waiting_.erase(it);
    left_waiting(st);
    plan_prefill(id, plan, budget);
  }
}

std::deque<cache::seq_id>::iterator scheduler::next_waiting(
  const std::function<bool(cache::adapter_id)>& adapter_ready) {
  // A cold adapter keeps its place in the queue but does not hold up those behind it.
  const auto ready = [&](const seq_state& st) {
    return st.adapter == cache::base_model || !adapter_ready || adapter_ready(st.adapter);
  };
  if (cfg_.policy == scheduling_policy::fcfs) {
    return std::find_if(waiting_.begin(), waiting_.end(), [&](cache::seq_id id) { return ready(state_of(id)); });
  }
  // vtc: a preempted or resumed sequence first (admitted once: the head of the queue), then the
  // oldest ready sequence of the tenant with the smallest counter.
  std::unordered_map<std::string, std::deque<cache::seq_id>::iterator> oldest;
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    const auto& st = state_of(*it);
    if (!ready(st))
      continue;
    if (st.head)
      return it;
    oldest.emplace(st.tenant, it);  // keeps the first, the oldest
  }
  const auto t = fair_.pick([&](const std::string& name) { return oldest.count(name) != 0; });
  return t ? oldest.at(*t) : waiting_.end();
}

void scheduler::entered_waiting(const seq_state& st) {
  if (tenant_waiting_[st.tenant]++ == 0)
    fair_.backlogged(st.tenant);
}

void scheduler::left_waiting(const seq_state& st) {
  auto it = tenant_waiting_.find(st.tenant);
  if (it == tenant_waiting_.end() || --it->second > 0)
    return;
  tenant_waiting_.erase(it);
  fair_.idle(st.tenant);
}

bool scheduler::plan_prefill(cache::seq_id id, step_plan& plan, std::uint32_t& budget) {
  if (budget == 0)
    return false;
  const auto n = static_cast<std::uint32_t>(state_of(id).tokens.size());
  const auto start = blocks_.num_computed(id);
  // The last-token rule of the block manager keeps start < n: the last token is always computed.
  const auto count = std::min(n - start, budget);
  plan.chunks.push_back({id, start, count, start + count == n});
  budget -= count;
  fair_.charge(state_of(id).tenant, count, 0);
  return true;
}

cache::seq_id scheduler::preempt_newest(step_plan& plan) {
  const auto victim = running_.back();
  running_.pop_back();
  blocks_.free(victim);
  // Victims come newest first, so pushing each to the front leaves the older one ahead.
  requeue_preempted(victim, plan);
  return victim;
}

void scheduler::requeue_preempted(cache::seq_id id, step_plan& plan) {
  auto& st = state_of(id);
  st.phase = seq_phase::waiting;
  st.head = true;
  ++st.preemptions;
  ++preemptions_;
  waiting_.push_front(id);
  entered_waiting(st);
  plan.preempted.push_back(id);
}

// -- results ------------------------------------------------------------------------------------

scheduler::seq_state* scheduler::live_state(cache::seq_id id) {
  auto it = seqs_.find(id);
  // Finished or cancelled while the step ran; a waiting one is a new sequence reusing the id.
  if (it == seqs_.end() || it->second.phase == seq_phase::waiting)
    return nullptr;
  return &it->second;
}

void scheduler::complete(const step_plan& plan,
                         const std::vector<std::optional<std::int32_t>>& sampled,
                         const std::vector<std::vector<std::int32_t>>& accepted) {
  if (sampled.size() != plan.chunks.size())
    throw std::invalid_argument("scheduler::complete: " + std::to_string(sampled.size())
                                + " results for " + std::to_string(plan.chunks.size())
                                + " chunks");
  if (!accepted.empty() && accepted.size() != plan.chunks.size())
    throw std::invalid_argument("scheduler::complete: " + std::to_string(accepted.size())
                                + " accepted lists for " + std::to_string(plan.chunks.size())
                                + " chunks");
  const auto accepted_of = [&](std::size_t i) { return accepted.empty() ? 0 : accepted[i].size(); };
  // Validate everything first, so a bad call records nothing.
  for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
    const auto& c = plan.chunks[i];
    if (c.samples != sampled[i].has_value())
      throw std::invalid_argument("scheduler::complete: chunk " + std::to_string(i) + " of "
                                  + seq_name(c.id)
                                  + (c.samples ? " samples but has no token"
                                               : " does not sample but has a token"));
    if (accepted_of(i) > c.draft || (c.draft > 0 && (!c.samples || c.draft >= c.count)))
      throw std::invalid_argument("scheduler::complete: chunk " + std::to_string(i) + " of "
                                  + seq_name(c.id) + " accepts " + std::to_string(accepted_of(i))
                                  + " of " + std::to_string(c.draft) + " proposed tokens");
    const auto* st_ptr = live_state(c.id);
    if (st_ptr == nullptr)
      continue;
    const auto& st = *st_ptr;
    const auto known = c.count - c.draft;  // positions whose tokens are the sequence's
    if (blocks_.num_computed(c.id) != c.start
        || std::uint64_t{c.start} + known > st.tokens.size()
        || c.samples != (c.start + known == st.tokens.size()))
      throw std::logic_error("scheduler::complete: chunk [" + std::to_string(c.start) + ", +"
                             + std::to_string(c.count) + ") does not continue "
                             + seq_name(c.id) + " (stale or foreign plan?)");
  }
  for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
    const auto& c = plan.chunks[i];
    auto* st = live_state(c.id);
    if (st == nullptr)
      continue;
    if (c.draft > 0) {
      // The accepted proposals' K/V are computed; the rejected ones' are not (rolled back).
      const auto& acc = accepted.empty() ? std::vector<std::int32_t>{} : accepted[i];
      st->tokens.insert(st->tokens.end(), acc.begin(), acc.end());
      blocks_.commit_tokens(c.id, st->tokens, c.start + c.count - c.draft + static_cast<std::uint32_t>(acc.size()));
    } else {
      blocks_.commit_tokens(c.id, st->tokens, c.start + c.count);
    }
    if (c.samples) {
      st->tokens.push_back(*sampled[i]);
      st->phase = seq_phase::decoding;
    }
  }
}

} // namespace lf::worker
