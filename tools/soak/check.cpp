#include "tools/soak/check.hpp"

#include <algorithm>

namespace lf::soak {

std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::accepted: return "accepted";
    case event_kind::token: return "token";
    case event_kind::done: return "done";
    case event_kind::error: return "error";
    case event_kind::cancelled: return "cancelled";
  }
  return "accepted";
}

namespace {

bool is_terminal(event_kind k) { return k == event_kind::done || k == event_kind::error || k == event_kind::cancelled; }

std::string describe(const planned_request& r) {
  std::string s = "request " + std::to_string(r.id) + " (";
  if (r.invalid != invalid_kind::none)
    s += "invalid: " + std::string(to_string(r.invalid));
  else
    s += std::string(to_string(r.sampling)) + ", " + (r.adapter.empty() ? "base" : r.adapter) + ", max_tokens "
         + std::to_string(r.max_tokens);
  if (r.cancel != cancel_mode::none)
    s += ", cancel " + std::string(to_string(r.cancel));
  return s + ")";
}

std::string describe(const observed& e) {
  if (e.kind == event_kind::error)
    return "error " + std::string(to_string(e.code)) + " (" + e.message + ")";
  if (e.kind == event_kind::token)
    return "token index " + std::to_string(e.index);
  return std::string(to_string(e.kind));
}

} // namespace

const observed* request_log::terminal() const {
  for (const auto& e : events)
    if (is_terminal(e.kind))
      return &e;
  return nullptr;
}

std::string request_log::text() const {
  std::string s;
  for (const auto& e : events)
    if (e.kind == event_kind::token)
      s += e.text;
  return s;
}

std::vector<std::int32_t> request_log::tokens() const {
  std::vector<std::int32_t> t;
  for (const auto& e : events)
    if (e.kind == event_kind::token)
      t.push_back(e.token);
  return t;
}

double request_log::ttft_ms() const {
  for (const auto& e : events)
    if (e.kind == event_kind::token)
      return e.at_ms;
  return -1;
}

std::vector<std::string> check_request(const planned_request& r, const request_log& log) {
  std::vector<std::string> v;
  const auto who = describe(r);
  auto bad = [&](const std::string& what) { v.push_back(who + ": " + what); };
  if (!log.submitted) {
    bad("was never sent");
    return v;
  }
  int accepted = 0, terminals = 0, after = 0, misplaced = 0;
  std::uint32_t tokens = 0;
  std::string first_after, first_misplaced;
  for (const auto& e : log.events) {
    if (terminals > 0) {
      if (after++ == 0)
        first_after = describe(e);
      continue;
    }
    switch (e.kind) {
      case event_kind::accepted:
        if (++accepted == 2)
          bad("accepted twice");
        if (tokens > 0)
          bad("accepted after its first token");
        break;
      case event_kind::token:
        if (e.index != tokens && misplaced++ == 0)
          first_misplaced = "token index " + std::to_string(e.index) + " where " + std::to_string(tokens) + " was due"
                            + (e.index < tokens ? " (a duplicate)" : " (a gap)");
        ++tokens;
        break;
      default: ++terminals; break;
    }
  }
  if (misplaced > 0)
    bad(first_misplaced + (misplaced > 1 ? "; " + std::to_string(misplaced - 1) + " more tokens out of place" : ""));
  if (terminals == 0) {
    bad("no terminal reply (" + std::to_string(tokens) + " tokens streamed)");
    return v;
  }
  if (after > 0)
    bad(std::to_string(after) + " message(s) after its terminal reply, the first: " + first_after);
  const auto& t = *log.terminal();
  if (r.invalid != invalid_kind::none) {
    if (t.kind != event_kind::error || t.code != r.expected())
      bad("should end with error " + std::string(to_string(r.expected())) + ", ended with " + describe(t));
    if (accepted > 0 || tokens > 0)
      bad("an invalid request was accepted or streamed tokens");
    return v;
  }
  switch (t.kind) {
    case event_kind::error: bad("ended with " + describe(t) + " after " + std::to_string(tokens) + " tokens"); break;
    case event_kind::cancelled:
      if (!log.cancel_sent)
        bad("cancelled, but the client sent no cancel");
      break;
    case event_kind::done:
      if (r.cancel == cancel_mode::before_accept)
        bad("cancelled before it was accepted, but ended done");
      if (t.completion_tokens != tokens)
        bad("done says " + std::to_string(t.completion_tokens) + " completion tokens, " + std::to_string(tokens)
            + " were streamed");
      if (accepted != 1)
        bad("done after " + std::to_string(accepted) + " accepted messages (1 is due)");
      if (t.finish_reason == "length" && tokens != static_cast<std::uint32_t>(r.max_tokens))
        bad("finished for length after " + std::to_string(tokens) + " of " + std::to_string(r.max_tokens) + " tokens");
      if (t.finish_reason == "eos" && r.ignore_eos)
        bad("finished at end-of-text although it ignores it");
      if (t.finish_reason == "stop" && r.stop.empty())
        bad("finished at a stop string it does not have");
      break;
    default: break;
  }
  return v;
}

std::vector<std::string> compare_replay(const planned_request& r, const request_log& first,
                                        const request_log& replay) {
  std::vector<std::string> v;
  const auto who = describe(r);
  const auto* a = first.terminal();
  const auto* b = replay.terminal();
  if (!b || b->kind != event_kind::done) {
    v.push_back(who + ": its replay ended with " + (b ? describe(*b) : std::string("nothing")));
    return v;
  }
  const auto ta = first.tokens(), tb = replay.tokens();
  if (ta != tb) {
    std::size_t i = 0;
    while (i < ta.size() && i < tb.size() && ta[i] == tb[i])
      ++i;
    auto at = [](const std::vector<std::int32_t>& t, std::size_t i) {
      return i < t.size() ? std::to_string(t[i]) : std::string("(end)");
    };
    v.push_back(who + ": resumed " + std::to_string(a ? a->resumed : 0) + " time(s); its tokens differ from the replay's at index "
                + std::to_string(i) + ": " + at(ta, i) + " vs " + at(tb, i) + " (" + std::to_string(ta.size()) + " vs "
                + std::to_string(tb.size()) + " tokens)");
  }
  if (const auto x = first.text(), y = replay.text(); x != y) {
    std::size_t i = 0;
    while (i < x.size() && i < y.size() && x[i] == y[i])
      ++i;
    auto around = [i](const std::string& s) { return "\"" + s.substr(i, 40) + (s.size() > i + 40 ? "...\"" : "\""); };
    v.push_back(who + ": its text differs from the replay's from byte " + std::to_string(i) + ": " + around(x) + " vs "
                + around(y));
  }
  if (a && a->finish_reason != b->finish_reason)
    v.push_back(who + ": finished for " + a->finish_reason + ", its replay for " + b->finish_reason);
  return v;
}

run_counts count_run(const std::vector<planned_request>& plans, const std::vector<request_log>& logs) {
  run_counts c;
  c.requests = plans.size();
  for (std::size_t i = 0; i < plans.size() && i < logs.size(); ++i) {
    const auto& r = plans[i];
    const auto& l = logs[i];
    c.planned_cancels += r.cancels();
    c.planned_invalid += r.invalid != invalid_kind::none;
    const auto toks = l.tokens().size();
    c.tokens += toks;
    const auto* t = l.terminal();
    if (!t) {
      ++c.no_terminal;
      continue;
    }
    switch (t->kind) {
      case event_kind::done:
        ++c.done;
        c.resumed += t->resumed > 0;
        ++c.finish_reasons[t->finish_reason];
        if (toks > 0) {
          c.ttft_ms.push_back(l.ttft_ms());
          c.e2e_ms.push_back(t->at_ms);
        }
        break;
      case event_kind::cancelled: ++c.cancelled; break;
      default:
        ++c.errors;
        ++c.errors_by_code[std::string(to_string(t->code))];
        break;
    }
  }
  return c;
}

std::vector<std::size_t> pick_replays(const std::vector<planned_request>& plans,
                                      const std::vector<request_log>& logs, std::size_t controls) {
  std::vector<std::size_t> resumed, calm;
  for (std::size_t i = 0; i < plans.size() && i < logs.size(); ++i) {
    const auto* t = logs[i].terminal();
    if (!t || t->kind != event_kind::done || plans[i].invalid != invalid_kind::none)
      continue;
    (t->resumed > 0 ? resumed : calm).push_back(i);
  }
  auto out = resumed;
  if (controls > 0 && !calm.empty()) {
    const auto step = std::max<std::size_t>(1, calm.size() / controls);
    for (std::size_t k = 0; k < calm.size() && out.size() < resumed.size() + controls; k += step)
      out.push_back(calm[k]);
  }
  return out;
}

} // namespace lf::soak
