#include "tools/loadtest/driver.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace lf::loadtest {

namespace {

using clock_type = std::chrono::steady_clock;

/// Everything the callbacks share; outlives the client's callbacks through shared_ptr.
struct run_state {
  std::mutex m;
  std::condition_variable cv;
  clock_type::time_point t0;
  std::vector<std::optional<request_sample>> samples;
  std::vector<clock_type::time_point> sent_at, last_token;
  std::vector<bool> was_sent;
  std::size_t sent = 0, ended = 0, next = 0;
  /// Closed loop: the requests not sent yet, per tenant, in plan order.
  std::map<std::string, std::deque<std::size_t>> unsent;
  std::uint64_t tokens = 0;
  bool stop_sending = false;
};

proto::submit_msg to_submit(const planned_request& p, const driver_options& o) {
  proto::submit_msg m;
  if (o.chat)
    m.messages.push_back({proto::chat_role::user, p.prompt});
  else
    m.prompt = p.prompt;
  m.adapter = p.adapter;
  m.max_tokens = static_cast<int>(p.max_tokens);
  m.temperature = static_cast<float>(o.temperature);
  m.ignore_eos = o.ignore_eos;
  m.seed = 1;
  m.tenant = p.tenant;
  m.deadline_ms = o.deadline_ms;
  m.ttft_ms = o.ttft_ms;
  return m;
}

} // namespace

driver_result run_workload(client::client& c, const std::vector<planned_request>& plan,
                           const driver_options& opts) {
  return run_workload([&c](const proto::submit_msg& m, client::stream_callbacks cb) { c.submit(m, std::move(cb)); },
                      plan, opts);
}

driver_result run_workload(const submit_fn& submit, const std::vector<planned_request>& plan,
                           const driver_options& opts) {
  auto st = std::make_shared<run_state>();
  st->samples.resize(plan.size());
  st->sent_at.resize(plan.size());
  st->last_token.resize(plan.size());
  st->was_sent.resize(plan.size());
  const bool closed = opts.mode == arrival_mode::closed;
  if (closed)
    for (std::size_t i = 0; i < plan.size(); ++i)
      st->unsent[plan[i].tenant].push_back(i);
  st->t0 = clock_type::now();
  // Sends the next request: Poisson, the next in plan order; closed, the next of `tenant`.
  std::function<void(const std::string&)> send_next;  // with st->m held
  send_next = [&, st, closed](const std::string& tenant) {
    if (st->stop_sending)
      return;
    std::size_t i = 0;
    if (closed) {
      auto& q = st->unsent[tenant];
      if (q.empty())
        return;
      i = q.front();
      q.pop_front();
      ++st->next;
    } else {
      if (st->next >= plan.size())
        return;
      i = st->next++;
    }
    ++st->sent;
    st->was_sent[i] = true;
    st->sent_at[i] = clock_type::now();
    client::stream_callbacks cb;
    cb.on_token = [st, i](const proto::token_msg&) {
      const auto now = clock_type::now();
      std::lock_guard<std::mutex> g(st->m);
      auto& s = st->samples[i];
      if (!s) {
        s.emplace();
        s->ttft_ms = ms_between(st->sent_at[i], now);
      } else {
        s->itl_ms.push_back(ms_between(st->last_token[i], now));
      }
      st->last_token[i] = now;
      ++s->tokens_out;
      ++st->tokens;
    };
    const auto target_in = plan[i].target_input_tokens;
    // After run_workload returns (stop_sending), late replies touch only `st`.
    cb.on_done = [st, i, &send_next, closed, target_in, tenant = plan[i].tenant](const client::result& r) {
      const auto now = clock_type::now();
      std::lock_guard<std::mutex> g(st->m);
      auto& s = st->samples[i];
      if (!s) {
        s.emplace();
        s->ttft_ms = ms_between(st->sent_at[i], now);
      }
      s->sent_s = std::chrono::duration<double>(st->sent_at[i] - st->t0).count();
      s->e2e_ms = ms_between(st->sent_at[i], now);
      s->status = r.ok() ? "done" : std::string(to_string(r.error));
      s->tenant = tenant;
      s->tokens_in = r.ok() ? r.usage.prompt_tokens : target_in;
      s->tokens_cached = r.ok() ? r.usage.cached_tokens : 0;
      if (r.ok() && r.usage.completion_tokens > s->tokens_out) {  // non-streamed tail
        st->tokens += r.usage.completion_tokens - s->tokens_out;
        s->tokens_out = r.usage.completion_tokens;
      }
      ++st->ended;
      if (closed && !st->stop_sending)
        send_next(tenant);
      st->cv.notify_all();
    };
    submit(to_submit(plan[i], opts), cb);
  };

  const auto deadline = opts.duration_s > 0
                          ? st->t0 + std::chrono::duration_cast<clock_type::duration>(
                                       std::chrono::duration<double>(opts.duration_s))
                          : clock_type::time_point::max();
  auto last_progress = st->t0;
  auto report = [&](std::unique_lock<std::mutex>&) {
    const auto now = clock_type::now();
    if (opts.progress && now - last_progress >= std::chrono::milliseconds(500)) {
      last_progress = now;
      opts.progress(st->ended, st->sent, st->tokens, std::chrono::duration<double>(now - st->t0).count());
    }
  };
  {
    std::unique_lock<std::mutex> lk(st->m);
    if (closed) {
      std::vector<std::string> tenants;
      for (const auto& [t, q] : st->unsent)
        tenants.push_back(t);
      for (const auto& t : tenants) {
        auto c = opts.tenant_concurrency.find(t);
        for (std::uint32_t k = 0, n = c == opts.tenant_concurrency.end() ? opts.concurrency : c->second; k < n; ++k)
          send_next(t);
      }
    }
    // Poisson: send each request at its planned time; closed: wait for the loop to finish.
    std::optional<clock_type::time_point> all_sent_at;
    while (true) {
      const auto now = clock_type::now();
      if (now >= deadline)
        st->stop_sending = true;
      if (opts.mode == arrival_mode::poisson && !st->stop_sending) {
        while (st->next < plan.size()
               && st->t0 + std::chrono::duration_cast<clock_type::duration>(
                             std::chrono::duration<double>(plan[st->next].at_s)) <= now)
          send_next({});
      }
      const bool all_sent = st->stop_sending || st->next >= plan.size();
      if (all_sent && st->ended == st->sent)
        break;
      if (all_sent && !all_sent_at)
        all_sent_at = now;
      if (all_sent_at && now - *all_sent_at > opts.drain)
        break;  // the replies still missing are lost
      report(lk);
      auto wake = now + std::chrono::milliseconds(100);
      if (opts.mode == arrival_mode::poisson && !st->stop_sending && st->next < plan.size())
        wake = std::min(wake, st->t0 + std::chrono::duration_cast<clock_type::duration>(
                                         std::chrono::duration<double>(plan[st->next].at_s)));
      st->cv.wait_until(lk, wake);
    }
    st->stop_sending = true;
  }
  driver_result out;
  std::lock_guard<std::mutex> g(st->m);
  out.duration_s = std::chrono::duration<double>(clock_type::now() - st->t0).count();
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (!st->was_sent[i])
      continue;
    if (st->samples[i] && st->samples[i]->e2e_ms > 0)
      out.samples.push_back(*st->samples[i]);
    else
      ++out.lost;
  }
  return out;
}

} // namespace lf::loadtest
