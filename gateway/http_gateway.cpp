// The HTTP gateway actor: OpenAI requests -> one generate_request per choice -> router; events ->
// openai_reply -> outbox. Stats endpoints from the router's snapshot. See http_gateway.hpp.
#include "gateway/http_gateway.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <ctime>
#include <optional>
#include <random>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "gateway/door.hpp"
#include "gateway/rate_headers.hpp"
#include "gateway/host_port.hpp"
#include "gateway/http_impl.hpp"
#include "gateway/metrics_export.hpp"
#include "gateway/openai_intake.hpp"
#include "gateway/openai_response.hpp"
#include "gateway/tokenize_request.hpp"
#include "text/tokenizer.hpp"

namespace lf::gateway {

namespace {

/// One OpenAI request in flight: its choices are lorafleet requests (gateway-wide ids).
struct http_entry {
  std::unique_ptr<openai_reply> reply;
  std::vector<actors::sink_request_id> choices;
  bool stream = false, started = false;
  std::vector<std::pair<std::string, std::string>> headers;  ///< x-ratelimit-*, on the reply or the stream's start
};

struct http_state {
  std::shared_ptr<http_gateway::impl> io;
  std::unordered_map<std::uint64_t, http_entry> entries;  ///< by HTTP id
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> by_choice;  ///< gateway id -> (http id, choice)
  std::uint64_t next_gid = 1;
  bool accepting = true;
  /// While an event_batch is taken: its outputs, handed to the event loop together.
  std::optional<std::vector<http_out>> outputs;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::mt19937_64 ids{std::random_device{}()};
  static inline const char* name = "lf_http_gateway";
};

using http_self = caf::stateful_actor<http_state>*;

/// Hands `o` to the event loop: now, or with the rest of the event_batch being taken.
void post(http_self self, http_out o) {
  if (self->state.outputs)
    self->state.outputs->push_back(std::move(o));
  else
    self->state.io->post(std::move(o));
}

void reply(http_self self, std::uint64_t id, int status, std::string body, const char* type = "application/json",
           std::vector<std::pair<std::string, std::string>> headers = {}) {
  http_out o;
  o.id = id;
  o.status = status;
  o.content_type = type;
  o.body = std::move(body);
  o.headers = std::move(headers);
  post(self, std::move(o));
}

void reply_error(http_self self, std::uint64_t id, const api_error& e, std::uint32_t retry_after_ms = 0) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (e.status == 429 || e.code == to_string(serve_errc::no_workers))
    headers.emplace_back("Retry-After", std::to_string(std::max<std::uint32_t>(1, (retry_after_ms + 999) / 1000)));
  reply(self, id, e.status, error_body(e), "application/json", std::move(headers));
}

/// Ends HTTP request `hid`'s choices that are still live (cancel) and forgets it.
void finish_entry(http_self self, std::uint64_t hid, bool cancel_live) {
  auto& st = self->state;
  auto it = st.entries.find(hid);
  if (it == st.entries.end())
    return;
  for (auto g : it->second.choices) {
    if (st.by_choice.erase(g.value()) && cancel_live)
      self->send(st.io->router, actors::cancel_request{g});
  }
  st.entries.erase(it);
}

void send_stream(http_self self, std::uint64_t hid, http_entry& e, std::string bytes, bool end = false) {
  http_out o;
  o.id = hid;
  o.what = end ? http_out::op::end : !e.started ? http_out::op::start : http_out::op::chunk;
  if (end && !e.started) {
    // Nothing was sent yet: headers and the whole stream as one chunked reply.
    http_out s;
    s.id = hid;
    s.what = http_out::op::start;
    s.headers = e.headers;
    post(self, std::move(s));
  } else if (!e.started) {
    o.headers = e.headers;
  }
  e.started = true;
  o.body = std::move(bytes);
  post(self, std::move(o));
}

/// Charges the key's rate limits (none: nothing to do) with `tokens`; false when refused (the
/// 429 is sent). `headers` receives the x-ratelimit-* headers for the reply.
bool within_rate_limits(http_self self, std::uint64_t hid, const std::string& key_name, std::uint64_t tokens,
                        std::vector<std::pair<std::string, std::string>>& headers) {
  auto& opts = self->state.io->opts;
  const auto* key = opts.keys && !key_name.empty() ? opts.keys->find_name(key_name) : nullptr;
  if (key == nullptr || !key->limits.any())
    return true;
  const auto v = opts.limiter->admit(key_name, key->limits, tokens, std::chrono::steady_clock::now());
  headers = rate_limit_headers(v);
  if (v.allowed)
    return true;
  auto h = headers;
  const auto e = rate_limited_error(v, key_name);
  if (e.status == 429)
    h.emplace_back("Retry-After", std::to_string(std::max<std::uint32_t>(1, (v.retry_after_ms + 999) / 1000)));
  reply(self, hid, e.status, error_body(e), "application/json", std::move(h));
  return false;
}

void on_completion(http_self self, std::uint64_t hid, api_kind kind, const std::string& body, const std::string& tenant,
                   const std::string& key_name) {
  auto& st = self->state;
  auto& opts = st.io->opts;
  if (!st.accepting)
    return reply_error(self, hid, to_api_error(serve_errc::shutting_down, "the server is shutting down"));
  openai_limits limits;
  limits.max_n = opts.max_n;
  limits.max_prompt_bytes = opts.max_prompt_bytes;
  auto parsed = parse_openai_request(kind, body, limits);
  if (auto* err = std::get_if<api_error>(&parsed))
    return reply_error(self, hid, *err);
  auto& req = std::get<openai_request>(parsed);
  if (!tenant.empty())
    req.base.tenant = tenant;  // a keyed request is its key's tenant, whatever `user` says
  auto taken = openai_intake(req, *opts.tokenizer, {opts.model_name, opts.context_window});
  if (auto* err = std::get_if<api_error>(&taken))
    return reply_error(self, hid, *err);
  auto& intake = std::get<openai_intake_result>(taken);
  http_entry e;
  if (!within_rate_limits(self, hid, key_name, intake.charge, e.headers))
    return;
  char rid[24];
  std::snprintf(rid, sizeof rid, "%016llx", static_cast<unsigned long long>(st.ids()));
  auto tok = opts.tokenizer;
  e.stream = req.stream;
  const auto choices = req.prompts.size() * static_cast<std::size_t>(req.n);
  e.reply = std::make_unique<openai_reply>(req, std::string(kind == api_kind::chat ? "chatcmpl-" : "cmpl-") + rid,
                                           static_cast<std::int64_t>(std::time(nullptr)), choices,
                                           [tok](std::int32_t t) { return tok->decode_token(t); });
  if (req.echo) {
    // Each choice's text starts with its prompt (streamed: its first chunk).
    for (std::size_t c = 0; c < choices; ++c)
      e.reply->echo(c, intake.echoes[c / static_cast<std::size_t>(req.n)].text);
    if (intake.choices.empty()) {
      // max_tokens 0: nothing to generate (a common way to score or count a prompt).
      std::string bytes;
      for (std::size_t c = 0; c < choices; ++c)
        bytes += e.reply->on_done(c, "length", {intake.echoes[c / static_cast<std::size_t>(req.n)].tokens, 0, 0});
      if (!e.stream)
        return reply(self, hid, 200, e.reply->body(), "application/json", e.headers);
      send_stream(self, hid, e, bytes + e.reply->stream_end(), true);
      return;
    }
  }
  std::vector<actors::generate_request> gens;
  for (auto& draft : intake.choices) {
    actors::generate_request g;
    g.id = actors::sink_request_id{st.next_gid++};
    g.draft = std::move(draft);
    e.choices.push_back(g.id);
    st.by_choice[g.id.value()] = {hid, gens.size()};
    gens.push_back(std::move(g));
  }
  st.entries.emplace(hid, std::move(e));
  if (!req.user.empty())
    log::debug("http", "request", {{"user", req.user}, {"choices", gens.size()}});
  for (auto& g : gens)
    self->send(st.io->router, std::move(g));
}

/// The OpenAI model object of the served model, or of an adapter (`parent` the model).
nlohmann::json model_object(const std::string& id, const std::string& parent, std::int64_t created) {
  nlohmann::json m{{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "lorafleet"}};
  if (!parent.empty())
    m["parent"] = parent;
  return m;
}

/// The 404 for a `model` that is neither the served model nor an adapter it serves.
api_error model_not_found(const std::string& id) {
  return {404, "The model '" + id + "' does not exist (GET /v1/models lists the served model and its adapters)",
          "invalid_request_error", "model", "model_not_found"};
}

/// GET /v1/models/{id}: the model object of `id` if /v1/models lists it, else a 404 error object.
void reply_model(http_self self, std::uint64_t hid, const actors::router_stats& rs, const std::string& id) {
  const auto& served = self->state.io->opts.model_name;
  const auto created = static_cast<std::int64_t>(std::time(nullptr));
  if (id == served)
    return reply(self, hid, 200, model_object(id, "", created).dump());
  const auto adapters = servable_adapters(rs);
  if (std::find(adapters.begin(), adapters.end(), id) != adapters.end())
    return reply(self, hid, 200, model_object(id, served, created).dump());
  reply_error(self, hid, model_not_found(id));
}

/// vLLM's POST /tokenize and /detokenize (tokenize_request.hpp). Adapters share the base model's
/// tokenizer, so a body naming one is answered once the router's list shows it is served.
void on_tokenize(http_self self, std::uint64_t hid, http_endpoint ep, const std::string& body) {
  const auto& opts = self->state.io->opts;
  auto answered = ep == http_endpoint::tokenize
                    ? answer_tokenize(body, *opts.tokenizer, {opts.context_window, opts.max_prompt_bytes})
                    : answer_detokenize(body, *opts.tokenizer);
  if (auto* err = std::get_if<api_error>(&answered))
    return reply_error(self, hid, *err);
  auto a = std::get<tokenize_answer>(std::move(answered));
  if (a.model.empty() || a.model == opts.model_name)
    return reply(self, hid, 200, std::move(a.body));
  self->request(self->state.io->router, std::chrono::seconds(5), caf::get_atom::value)
    .then(
      [self, hid, a](const actors::router_stats& rs) {
        const auto adapters = servable_adapters(rs);
        if (std::find(adapters.begin(), adapters.end(), a.model) == adapters.end())
          return reply_error(self, hid, model_not_found(a.model));
        reply(self, hid, 200, a.body);
      },
      [self, hid](const caf::error& err) {
        reply_error(self, hid, {503, "the router did not answer: " + self->system().render(err), "service_unavailable_error", "", ""});
      });
}

void on_stats_request(http_self self, std::uint64_t hid, http_endpoint ep, const std::string& body) {
  auto io = self->state.io;
  const auto started = self->state.started;
  self->request(io->router, std::chrono::seconds(5), caf::get_atom::value)
    .then(
      [self, io, hid, ep, started, body](const actors::router_stats& rs) {
        http_side side;
        side.model = io->opts.model_name;
        side.uptime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        side.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
        side.live = self->state.entries.size();
        side.connections = io->connections;
        side.keys = io->opts.limiter->counts();
        switch (ep) {
          case http_endpoint::metrics:
            return reply(self, hid, 200, render_prometheus(rs, side), "text/plain; version=0.0.4; charset=utf-8");
          case http_endpoint::stats: return reply(self, hid, 200, render_stats_json(rs, side));
          case http_endpoint::ready: {
            // Ready only while a worker takes placements: drained or lost ones do not count.
            const bool ok = rs.accepting > 0 && self->state.accepting;
            nlohmann::json j{{"ready", ok}, {"workers", rs.workers}, {"accepting", rs.accepting}};
            return reply(self, hid, ok ? 200 : 503, j.dump());
          }
          case http_endpoint::model: return reply_model(self, hid, rs, body);
          default: {
            const auto created = static_cast<std::int64_t>(std::time(nullptr));
            nlohmann::json data = nlohmann::json::array();
            data.push_back(model_object(io->opts.model_name, "", created));
            for (const auto& a : servable_adapters(rs))
              data.push_back(model_object(a, io->opts.model_name, created));
            return reply(self, hid, 200, nlohmann::json{{"object", "list"}, {"data", data}}.dump());
          }
        }
      },
      [self, hid](const caf::error& err) {
        reply_error(self, hid, {503, "the router did not answer: " + self->system().render(err), "service_unavailable_error", "", ""});
      });
}

/// The adapter registry over HTTP: `body` is "op\nname\nrequest body" (http_loop.cpp). A change
/// (the door let only admins through) leaves an audit line with its result.
void on_adapters_request(http_self self, std::uint64_t hid, const std::string& body, auth::caller who,
                         std::string remote) {
  const auto nl1 = body.find('\n'), nl2 = body.find('\n', nl1 + 1);
  actors::adapter_command cmd{body.substr(0, nl1), body.substr(nl1 + 1, nl2 - nl1 - 1), ""};
  who.role = auth::role::admin;
  const bool change = cmd.op != "list";
  auto audited = [who, remote, change](std::string op) {
    return [who, remote, change, op = std::move(op)](std::string_view result) {
      if (change)
        audit(who, remote, "http", op, result);
    };
  };
  std::function<void(std::string_view)> done = audited("adapters." + cmd.op + " " + cmd.name);
  const auto json_body = body.substr(nl2 + 1);
  if (cmd.op == "add" || cmd.op == "update") {
    const auto j = nlohmann::json::parse(json_body, nullptr, false);
    if (!j.is_object() || !j.contains("path") || !j["path"].is_string()
        || (cmd.op == "add" && !(j.contains("name") && j["name"].is_string())))
    {
      done("invalid_request");
      return reply_error(self, hid, {400, cmd.op == "add" ? "the body must be {\"name\": ..., \"path\": ...}"
                                                          : "the body must be {\"path\": ...}", "invalid_request_error", "", ""});
    }
    cmd.path = j["path"].get<std::string>();
    if (cmd.op == "add")
      cmd.name = j["name"].get<std::string>();
    done = audited("adapters." + cmd.op + " " + cmd.name);
  }
  self->request(self->state.io->router, std::chrono::seconds(90), std::move(cmd))
    .then(
      [self, hid, done](const actors::adapter_reply& r) {
        done(r.error == serve_errc::none ? std::string_view("ok") : to_string(r.error));
        if (r.error != serve_errc::none)
          return reply_error(self, hid, to_api_error(r.error, r.message));
        nlohmann::json data = nlohmann::json::array();
        for (std::size_t i = 0; i < r.adapters.size(); ++i) {
          const auto& a = r.adapters[i];
          data.push_back({{"id", a.name}, {"object", "adapter"}, {"version", a.latest}, {"removed", a.removed},
                          {"path", a.source.path}, {"rank", a.source.rank}, {"targets", a.source.targets},
                          {"bytes", a.source.bytes}, {"updated_ms", a.updated_ms},
                          {"resident", i < r.resident.size() ? r.resident[i] : 0}});
        }
        reply(self, hid, 200, nlohmann::json{{"object", "list"}, {"seq", r.seq}, {"data", data}}.dump());
      },
      [self, hid, done](const caf::error& err) {
        done("no_answer");
        reply_error(self, hid, {503, "the router did not answer: " + self->system().render(err), "service_unavailable_error", "", ""});
      });
}

/// Where a choice's events go: its HTTP request, its index there, and that request's entry.
struct choice_ref {
  std::uint64_t hid;
  std::size_t choice;
  http_entry* entry;
};

/// The live choice of gateway id `g`, if any.
std::optional<choice_ref> lookup(http_self self, actors::sink_request_id g) {
  auto& st = self->state;
  auto it = st.by_choice.find(g.value());
  if (it == st.by_choice.end())
    return std::nullopt;
  const auto [hid, choice] = it->second;
  auto e = st.entries.find(hid);
  if (e == st.entries.end())
    return std::nullopt;
  return choice_ref{hid, choice, &e->second};
}

/// Ends HTTP request `hid` with `err`: an error event if its stream has started, else an error
/// reply; its choices still live are cancelled.
void fail_entry(http_self self, std::uint64_t hid, http_entry& e, const api_error& err, std::uint32_t retry_after_ms = 0) {
  if (e.stream && e.started)
    send_stream(self, hid, e, openai_reply::stream_error(err), true);
  else
    reply_error(self, hid, err, retry_after_ms);
  finish_entry(self, hid, true);
}

void on_token(http_self self, const actors::token_event& ev) {
  auto at = lookup(self, ev.id);
  if (!at)
    return;
  auto& e = *at->entry;
  auto bytes = e.reply->on_token(at->choice, ev.token, ev.text, ev.has_logprobs ? &ev.logprobs : nullptr);
  if (e.stream && !bytes.empty())
    send_stream(self, at->hid, e, std::move(bytes));
}

void on_done(http_self self, const actors::done_event& ev) {
  auto at = lookup(self, ev.id);
  if (!at)
    return;
  auto& e = *at->entry;
  self->state.by_choice.erase(ev.id.value());
  auto bytes = e.reply->on_done(at->choice, ev.finish_reason,
                                {ev.usage.prompt_tokens, ev.usage.completion_tokens, ev.usage.cached_tokens});
  if (!e.reply->all_done()) {
    if (e.stream && !bytes.empty())
      send_stream(self, at->hid, e, std::move(bytes));
    return;
  }
  if (e.stream)
    send_stream(self, at->hid, e, bytes + e.reply->stream_end(), true);
  else
    reply(self, at->hid, 200, e.reply->body(), "application/json", e.headers);
  finish_entry(self, at->hid, false);
}

void on_error(http_self self, const actors::error_event& ev) {
  auto at = lookup(self, ev.id);
  if (!at)
    return;
  self->state.by_choice.erase(ev.id.value());
  // The other choices of a failed request are cancelled.
  fail_entry(self, at->hid, *at->entry, to_api_error(ev.code, ev.message), ev.retry_after_ms);
}

caf::behavior http_actor(http_self self, std::shared_ptr<http_gateway::impl> io) {
  self->state.io = std::move(io);
  return {
    [self](http_in_atom, std::uint64_t hid, std::uint8_t ep, const std::string& body, const std::string& key_name,
           const std::string& tenant, const std::string& remote) {
      const auto endpoint = static_cast<http_endpoint>(ep);
      if (endpoint == http_endpoint::completions || endpoint == http_endpoint::chat)
        on_completion(self, hid, endpoint == http_endpoint::chat ? api_kind::chat : api_kind::completion, body, tenant,
                      key_name);
      else if (endpoint == http_endpoint::tokenize || endpoint == http_endpoint::detokenize)
        on_tokenize(self, hid, endpoint, body);
      else if (endpoint == http_endpoint::adapters)
        on_adapters_request(self, hid, body, auth::caller{key_name, auth::role::user, tenant, false}, remote);
      else
        on_stats_request(self, hid, endpoint, body);
    },
    [self](const actors::token_event& ev) { on_token(self, ev); },
    [self](const actors::done_event& ev) { on_done(self, ev); },
    [self](const actors::error_event& ev) { on_error(self, ev); },
    [self](const actors::event_batch& b) {
      // A worker step's events (tokens, then terminals), handed to the event loop together.
      self->state.outputs.emplace();
      b.dispatch([&](const actors::token_event& ev) { on_token(self, ev); },
                 [&](const actors::done_event& ev) { on_done(self, ev); },
                 [&](const actors::error_event& ev) { on_error(self, ev); });
      auto out = std::move(*self->state.outputs);
      self->state.outputs.reset();
      self->state.io->post(std::move(out));
    },
    [self](http_gone_atom, std::uint64_t hid) {
      if (!self->state.entries.count(hid))
        return;
      finish_entry(self, hid, true);
      log::debug("http", "client gone: its request is cancelled", {{"request", hid}});
    },
    [self](http_drain_atom, bool cancel_all) {
      self->state.accepting = false;
      if (!cancel_all)
        return;
      std::vector<std::uint64_t> all;
      for (auto& [hid, e] : self->state.entries)
        all.push_back(hid);
      const auto err = to_api_error(serve_errc::shutting_down, "the server is shutting down");
      for (auto hid : all)
        fail_entry(self, hid, self->state.entries.at(hid), err);
    },
  };
}

} // namespace

caf::actor spawn_http_actor(caf::actor_system& sys, std::shared_ptr<http_gateway::impl> io) {
  return sys.spawn(http_actor, std::move(io));
}

http_gateway::http_gateway(caf::actor_system& sys, actors::router_actor router, http_options opts)
  : impl_(std::make_shared<impl>(sys, std::move(router), std::move(opts))) {
  if (!impl_->opts.tokenizer)
    throw std::invalid_argument("http gateway: no tokenizer (the gateway tokenizes prompts)");
  impl_->actor = spawn_http_actor(sys, impl_);
  try {
    impl_->start();
  } catch (...) {
    caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
    throw;
  }
  const bool keyed = impl_->opts.keys && impl_->opts.keys->has_secrets();
  log::info("http", "listening", {{"address", impl_->bound}, {"model", impl_->opts.model_name}, {"api_keys", keyed}});
  if (const auto at = parse_host_port(impl_->bound); !keyed && at && !auth::loopback_host(at->host))
    log::warn("http", "serving beyond loopback without API keys: anyone who reaches this address may use the API "
                      "(admin operations only from loopback); see --api-key-file",
              {{"address", impl_->bound}});
}

http_gateway::~http_gateway() { stop(); }

std::string http_gateway::address() const { return impl_->bound; }

std::string http_gateway::url() const { return (impl_->tls ? "https://" : "http://") + impl_->bound; }

void http_gateway::stop_accepting() {
  impl_->accepting = false;
  caf::anon_send(impl_->actor, http_drain_atom::value, false);
}

std::size_t http_gateway::live() const { return impl_->live; }

void http_gateway::stop() {
  auto& io = *impl_;
  if (!io.thread.joinable())
    return;
  caf::anon_send(io.actor, http_drain_atom::value, true);
  for (int i = 0; i < 100 && io.live > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the last bytes flush
  io.shutdown();
  caf::anon_send_exit(io.actor, caf::exit_reason::user_shutdown);
}

} // namespace lf::gateway
