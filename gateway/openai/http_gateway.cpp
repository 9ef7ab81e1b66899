// The HTTP gateway actor: OpenAI requests -> one generate_request per choice -> router; events ->
// openai_reply -> outbox. Stats endpoints from the router's snapshot. See http_gateway.hpp.
#include "gateway/openai/http_gateway.hpp"

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
#include "gateway/common/audit.hpp"
#include "gateway/common/host_port.hpp"
#include "gateway/openai/http_book.hpp"
#include "gateway/openai/http_impl.hpp"
#include "gateway/openai/metrics_export.hpp"
#include "gateway/openai/openai_intake.hpp"
#include "gateway/openai/openai_response.hpp"
#include "gateway/openai/rate_headers.hpp"
#include "gateway/openai/tokenize_request.hpp"
#include "text/tokenizer.hpp"

namespace lf::gateway {

namespace {

struct http_state {
  std::shared_ptr<http_io> io;
  http_book book;  ///< the OpenAI requests in flight and their choices
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

/// Forgets HTTP request `hid`; `cancel_live`: its choices still live are cancelled.
void finish_entry(http_self self, std::uint64_t hid, bool cancel_live) {
  for (auto g : self->state.book.finish(hid))
    if (cancel_live)
      self->send(self->state.io->router, actors::cancel_request{g});
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

/// The reply of a request taken in: its id, `choices` = prompts x n, each echoed prompt at the
/// start of its choices' text (streamed: their first chunk).
std::unique_ptr<openai_reply> new_reply(http_self self, const openai_request& req, const openai_intake_result& in) {
  char rid[24];
  std::snprintf(rid, sizeof rid, "%016llx", static_cast<unsigned long long>(self->state.ids()));
  auto tok = self->state.io->opts.tokenizer;
  const auto n = static_cast<std::size_t>(req.n);
  auto out = std::make_unique<openai_reply>(
    req, std::string(req.kind == api_kind::chat ? "chatcmpl-" : "cmpl-") + rid,
    static_cast<std::int64_t>(std::time(nullptr)), req.prompts.size() * n,
    [tok](std::int32_t t) { return tok->decode_token(t); });
  for (std::size_t c = 0; c < in.echoes.size() * n; ++c)
    out->echo(c, in.echoes[c / n].text);
  return out;
}

/// Echo with max_tokens 0: the prompts are the whole reply, nothing is generated (a common way
/// to score or count a prompt).
void reply_prompts_alone(http_self self, std::uint64_t hid, http_entry& e, const openai_intake_result& in, int n) {
  const auto per = static_cast<std::size_t>(n);
  std::string bytes;
  for (std::size_t c = 0; c < in.echoes.size() * per; ++c)
    bytes += e.reply->on_done(c, "length", {in.echoes[c / per].tokens, 0, 0});
  if (!e.stream)
    return reply(self, hid, 200, e.reply->body(), "application/json", e.headers);
  send_stream(self, hid, e, bytes + e.reply->stream_end(), true);
}

/// Books HTTP request `hid` and sends the router one generate_request per choice.
void send_choices(http_self self, std::uint64_t hid, http_entry e, std::vector<request_draft> drafts) {
  const auto ids = self->state.book.add(hid, std::move(e), drafts.size());
  for (std::size_t c = 0; c < drafts.size(); ++c) {
    actors::generate_request g;
    g.id = ids[c];
    g.draft = std::move(drafts[c]);
    self->send(self->state.io->router, std::move(g));
  }
}

/// POST /v1/completions, /v1/chat/completions: parse, take in (openai_intake), charge the key's
/// rate limits, then answer an echo alone or send the choices.
void on_completion(http_self self, const http_request_in& in) {
  const auto& opts = self->state.io->opts;
  if (!self->state.accepting)
    return reply_error(self, in.id, to_api_error(serve_errc::shutting_down, "the server is shutting down"));
  openai_limits limits;
  limits.max_n = opts.max_n;
  limits.max_prompt_bytes = opts.max_prompt_bytes;
  const auto kind = in.endpoint == http_endpoint::chat ? api_kind::chat : api_kind::completion;
  auto parsed = parse_openai_request(kind, in.body, limits);
  if (auto* err = std::get_if<api_error>(&parsed))
    return reply_error(self, in.id, *err);
  auto& req = std::get<openai_request>(parsed);
  if (!in.tenant.empty())
    req.base.tenant = in.tenant;  // a keyed request is its key's tenant, whatever `user` says
  auto taken = openai_intake(req, *opts.tokenizer, {opts.model_name, opts.limits});
  if (auto* err = std::get_if<api_error>(&taken))
    return reply_error(self, in.id, *err);
  auto& intake = std::get<openai_intake_result>(taken);
  http_entry e;
  if (!within_rate_limits(self, in.id, in.key_name, intake.charge, e.headers))
    return;
  e.stream = req.stream;
  e.reply = new_reply(self, req, intake);
  if (intake.choices.empty())
    return reply_prompts_alone(self, in.id, e, intake, req.n);
  if (!req.user.empty())
    log::debug("http", "request", {{"user", req.user}, {"choices", intake.choices.size()}});
  send_choices(self, in.id, std::move(e), std::move(intake.choices));
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
                    ? answer_tokenize(body, *opts.tokenizer, {opts.limits.context_window, opts.max_prompt_bytes})
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
        side.live = self->state.book.live();
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
  auto at = self->state.book.lookup(ev.id);
  if (!at)
    return;
  auto& e = *at->entry;
  auto bytes = e.reply->on_token(at->choice, ev.token, ev.text, ev.has_logprobs ? &ev.logprobs : nullptr);
  if (e.stream && !bytes.empty())
    send_stream(self, at->hid, e, std::move(bytes));
}

void on_done(http_self self, const actors::done_event& ev) {
  auto at = self->state.book.lookup(ev.id);
  if (!at)
    return;
  auto& e = *at->entry;
  self->state.book.end_choice(ev.id);
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
  auto at = self->state.book.lookup(ev.id);
  if (!at)
    return;
  self->state.book.end_choice(ev.id);
  // The other choices of a failed request are cancelled.
  fail_entry(self, at->hid, *at->entry, to_api_error(ev.code, ev.message), ev.retry_after_ms);
}

caf::behavior http_actor(http_self self, std::shared_ptr<http_io> io) {
  self->state.io = std::move(io);
  return {
    [self](const http_request_in& in) {
      if (in.endpoint == http_endpoint::completions || in.endpoint == http_endpoint::chat)
        on_completion(self, in);
      else if (in.endpoint == http_endpoint::tokenize || in.endpoint == http_endpoint::detokenize)
        on_tokenize(self, in.id, in.endpoint, in.body);
      else if (in.endpoint == http_endpoint::adapters)
        on_adapters_request(self, in.id, in.body, auth::caller{in.key_name, auth::role::user, in.tenant, false},
                            in.remote);
      else
        on_stats_request(self, in.id, in.endpoint, in.body);
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
      if (self->state.book.find(hid) == nullptr)
        return;
      finish_entry(self, hid, true);
      log::debug("http", "client gone: its request is cancelled", {{"request", hid}});
    },
    [self](http_drain_atom, bool cancel_all) {
      self->state.accepting = false;
      if (!cancel_all)
        return;
      const auto err = to_api_error(serve_errc::shutting_down, "the server is shutting down");
      for (auto hid : self->state.book.all())
        fail_entry(self, hid, *self->state.book.find(hid), err);
    },
  };
}

} // namespace

caf::actor spawn_http_actor(caf::actor_system& sys, std::shared_ptr<http_io> io) {
  return sys.spawn(http_actor, std::move(io));
}

http_gateway::http_gateway(caf::actor_system& sys, actors::router_actor router, http_options opts)
  : impl_(std::make_shared<http_io>(sys, std::move(router), std::move(opts))) {
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
