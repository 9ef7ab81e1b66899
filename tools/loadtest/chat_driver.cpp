#include "tools/loadtest/chat_driver.hpp"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace lf::loadtest {

namespace {

using clock_type = std::chrono::steady_clock;

clock_type::duration seconds(double s) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

/// One conversation's progress.
struct conv_state {
  std::vector<std::string> replies;
  std::size_t next_turn = 0;
  bool over = false;
  bool cut = false;
};

/// Everything the callbacks share; outlives the client's callbacks through shared_ptr.
struct chat_state {
  std::mutex m;
  std::condition_variable cv;
  clock_type::time_point t0;
  std::vector<conv_state> convs;
  std::multimap<clock_type::time_point, std::size_t> due;  ///< send time -> conversation
  std::vector<request_sample> samples;
  std::size_t sent = 0, ended = 0, open = 0;  ///< open: conversations not over
  std::uint64_t tokens = 0;
  bool stop_sending = false;
};

} // namespace

chat_result run_chat(const submit_fn& submit, const std::vector<conversation_plan>& plan, const driver_options& opts) {
  auto st = std::make_shared<chat_state>();
  st->convs.resize(plan.size());
  st->open = plan.size();
  st->t0 = clock_type::now();
  for (std::size_t c = 0; c < plan.size(); ++c)
    st->due.emplace(st->t0 + seconds(plan[c].start_s), c);

  // Sends conversation c's next turn (st->m held).
  auto send_turn = [&plan, &opts, &submit, st](std::size_t c) {
    auto& cs = st->convs[c];
    const auto k = cs.next_turn++;
    const auto& turn = plan[c].turns[k];
    proto::submit_msg m;
    m.messages = turn_messages(plan[c], cs.replies, k);
    m.max_tokens = static_cast<int>(turn.max_tokens);
    m.temperature = static_cast<float>(opts.temperature);
    m.ignore_eos = opts.ignore_eos;
    m.seed = 1;
    m.deadline_ms = opts.deadline_ms;
    m.ttft_ms = opts.ttft_ms;
    ++st->sent;
    struct turn_clock {
      clock_type::time_point sent, last;
      request_sample s;
      bool first = true;
      std::string text;
    };
    auto tc = std::make_shared<turn_clock>();
    tc->sent = clock_type::now();
    tc->s.sent_s = std::chrono::duration<double>(tc->sent - st->t0).count();
    client::stream_callbacks cb;
    cb.on_token = [st, tc](const proto::token_msg& t) {
      const auto now = clock_type::now();
      std::lock_guard<std::mutex> g(st->m);
      if (tc->first) {
        tc->s.ttft_ms = ms_between(tc->sent, now);
        tc->first = false;
      } else {
        tc->s.itl_ms.push_back(ms_between(tc->last, now));
      }
      tc->last = now;
      tc->text += t.text;
      ++tc->s.tokens_out;
      ++st->tokens;
    };
    cb.on_done = [st, tc, c, turns = plan[c].turns.size(), think = k + 1 < plan[c].turns.size()
                                                                      ? plan[c].turns[k + 1].think_s
                                                                      : 0.0](const client::result& r) {
      const auto now = clock_type::now();
      std::lock_guard<std::mutex> g(st->m);
      auto& s = tc->s;
      if (tc->first)
        s.ttft_ms = ms_between(tc->sent, now);
      s.e2e_ms = ms_between(tc->sent, now);
      s.status = r.ok() ? "done" : std::string(to_string(r.error));
      s.tokens_in = r.usage.prompt_tokens;
      s.tokens_cached = r.ok() ? r.usage.cached_tokens : 0;
      if (r.ok() && r.usage.completion_tokens > s.tokens_out) {
        st->tokens += r.usage.completion_tokens - s.tokens_out;
        s.tokens_out = r.usage.completion_tokens;
      }
      st->samples.push_back(s);
      ++st->ended;
      auto& cs = st->convs[c];
      if (!r.ok() || cs.next_turn >= turns || st->stop_sending) {
        cs.over = true;
        cs.cut = !r.ok() || cs.next_turn < turns;
        --st->open;
      } else {
        cs.replies.push_back(r.text.empty() ? tc->text : r.text);
        st->due.emplace(now + seconds(think), c);
      }
      st->cv.notify_all();
    };
    submit(m, cb);
  };

  const auto deadline = opts.duration_s > 0 ? st->t0 + seconds(opts.duration_s) : clock_type::time_point::max();
  auto last_progress = st->t0;
  std::optional<clock_type::time_point> stopped_at;
  {
    std::unique_lock<std::mutex> lk(st->m);
    for (;;) {
      const auto now = clock_type::now();
      if (now >= deadline && !st->stop_sending) {
        st->stop_sending = true;
        // Conversations waiting for their next turn end here, cut.
        for (auto& [t, c] : st->due) {
          st->convs[c].over = st->convs[c].cut = true;
          --st->open;
        }
        st->due.clear();
      }
      while (!st->due.empty() && st->due.begin()->first <= now) {
        const auto c = st->due.begin()->second;
        st->due.erase(st->due.begin());
        send_turn(c);
      }
      if (st->open == 0)
        break;
      if (st->stop_sending && st->ended == st->sent)
        break;
      if (st->stop_sending && !stopped_at)
        stopped_at = now;
      if (stopped_at && now - *stopped_at > opts.drain)
        break;
      if (opts.progress && now - last_progress >= std::chrono::milliseconds(500)) {
        last_progress = now;
        opts.progress(st->ended, st->sent, st->tokens, std::chrono::duration<double>(now - st->t0).count());
      }
      auto wake = now + std::chrono::milliseconds(100);
      if (!st->due.empty())
        wake = std::min(wake, st->due.begin()->first);
      st->cv.wait_until(lk, wake);
    }
    st->stop_sending = true;
  }
  chat_result out;
  std::lock_guard<std::mutex> g(st->m);
  out.run.duration_s = std::chrono::duration<double>(clock_type::now() - st->t0).count();
  out.run.samples = st->samples;
  out.run.lost = st->sent - st->ended;
  for (const auto& cs : st->convs) {
    if (cs.over && !cs.cut)
      ++out.conversations_finished;
    else
      ++out.conversations_cut;
  }
  return out;
}

} // namespace lf::loadtest
