#include "client/client.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace lf::client {

using clock_type = std::chrono::steady_clock;

namespace {

struct live_entry {
  stream_callbacks cb;
  result acc;
  std::optional<clock_type::time_point> deadline;
  std::uint32_t window = 0;      ///< credit window; 0: none
  std::uint32_t ungranted = 0;   ///< tokens consumed and not yet granted back (automatic credits)
  /// With several gateways: the request as sent (to send it again elsewhere), when it was sent,
  /// the credits granted so far and the times it moved.
  std::optional<proto::submit_msg> sent;
  clock_type::time_point submitted;
  std::uint64_t granted = 0;
  std::uint32_t moves = 0;
};

/// `m` sent again to another gateway: the tokens `e` received become its continuation, the
/// credit bound stays where it was, the deadline counts from the first submit. nullopt when the
/// deadline has passed.
std::optional<proto::submit_msg> continuation_of(const live_entry& e, clock_type::time_point now) {
  auto m = *e.sent;
  m.continued = e.acc.tokens;  // stream=false: none arrived, it starts again (same seed)
  if (m.window)
    m.window = static_cast<std::uint32_t>(std::min<std::uint64_t>(*m.window + e.granted, proto::max_window));
  if (m.deadline_ms) {
    const auto spent = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - e.submitted).count());
    if (spent >= *m.deadline_ms)
      return std::nullopt;
    m.deadline_ms = *m.deadline_ms - spent;
  }
  return m;
}

void configure_dealer(zmq::socket_t& s, const client_options& o, const std::string& endpoint) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, 100000);
  s.set(zmq::sockopt::rcvhwm, 100000);
  s.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(proto::max_frame_bytes) * 2);
  if (!o.server_public_key.empty()) {
    std::string pub = o.public_key, sec = o.secret_key;
    if (pub.empty() || sec.empty()) {
      char p[41], k[41];
      if (zmq_curve_keypair(p, k) != 0)
        throw std::runtime_error("lorafleet client: CURVE is not available in this libzmq");
      pub = p;
      sec = k;
    }
    s.set(zmq::sockopt::curve_serverkey, o.server_public_key);
    s.set(zmq::sockopt::curve_publickey, pub);
    s.set(zmq::sockopt::curve_secretkey, sec);
  }
  s.connect(endpoint);
}

} // namespace

struct client::impl {
  client_options opts;
  zmq::context_t ctx{1};
  zmq::socket_t wake_in{ctx, zmq::socket_type::pull};   // I/O thread only
  zmq::socket_t wake_out{ctx, zmq::socket_type::push};  // under `m`
  mutable std::mutex m;
  std::map<std::uint64_t, live_entry> live;  // node-based: entries stay put while others insert
  std::vector<std::promise<bool>> pongs;
  std::vector<std::promise<std::map<std::string, double>>> stats_waiters;
  std::vector<std::promise<proto::drained_msg>> drain_waiters;
  std::vector<std::promise<proto::undrained_msg>> undrain_waiters;
  std::vector<std::promise<proto::adapters_result>> adapter_waiters;
  std::mutex adapters_call;  ///< one adapters() call at a time: their answers may overtake each other
  std::size_t stale_adapter_answers = 0;  ///< answers of calls that timed out, still to come

  /// Asks with `frame` and waits for the answer a reader thread puts in a promise of `waiters`.
  template <class T>
  std::optional<T> ask(std::vector<std::promise<T>>& waiters, const std::string& frame,
                       std::chrono::milliseconds timeout) {
    std::promise<T> p;
    auto f = p.get_future();
    {
      std::lock_guard<std::mutex> g(m);
      waiters.push_back(std::move(p));
    }
    post(frame);
    if (f.wait_for(timeout) != std::future_status::ready)
      return std::nullopt;
    return f.get();
  }
  std::uint64_t next_id = 1;
  std::vector<std::string> gateways;  ///< endpoints, or the one endpoint
  std::size_t current = 0;            ///< gateways[current] is in use (under `m`)
  std::uint64_t moved = 0;            ///< continuations sent (under `m`)
  std::mt19937_64 seeds{std::random_device{}()};
  std::atomic<bool> stopping{false};
  std::thread io;

  explicit impl(client_options o) : opts(std::move(o)) {
    gateways = opts.endpoints.empty() ? std::vector<std::string>{opts.endpoint} : opts.endpoints;
    const auto name = "inproc://lf-client-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
    wake_in.bind(name);
    wake_out.connect(name);
    wake_out.set(zmq::sockopt::sndhwm, 0);
    wake_in.set(zmq::sockopt::rcvhwm, 0);
  }

  /// Queues a frame for the I/O thread to send (any thread).
  void post(const std::string& frame) {
    std::lock_guard<std::mutex> g(m);
    wake_out.send(zmq::buffer(frame), zmq::send_flags::none);
  }

  /// post(frame) if request `id` is in flight; false (nothing sent) otherwise.
  bool post_if_live(proto::client_request_id id, const std::string& frame) {
    std::lock_guard<std::mutex> g(m);
    if (!live.count(id.value()))
      return false;
    wake_out.send(zmq::buffer(frame), zmq::send_flags::none);
    return true;
  }

  /// Ends `id` with `r` (I/O thread).
  void finish(std::uint64_t id, result r) {
    stream_callbacks cb;
    {
      std::lock_guard<std::mutex> g(m);
      auto it = live.find(id);
      if (it == live.end())
        return;
      cb = std::move(it->second.cb);
      live.erase(it);
    }
    if (cb.on_done)
      cb.on_done(r);
  }

  void fail_all(serve_errc code, const std::string& why) {
    std::vector<std::uint64_t> ids;
    {
      std::lock_guard<std::mutex> g(m);
      for (auto& [id, e] : live)
        ids.push_back(id);
    }
    for (auto id : ids) {
      result r;
      r.error = code;
      r.message = why;
      finish(id, std::move(r));
    }
  }

  void on_frame(std::string_view bytes) {
    auto decoded = proto::decode_server(bytes);
    std::visit(
      [&](auto&& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, proto::pong_msg>) {
          std::lock_guard<std::mutex> g(m);
          for (auto& p : pongs)
            p.set_value(true);
          pongs.clear();
        } else if constexpr (std::is_same_v<T, proto::drained_msg>) {
          std::lock_guard<std::mutex> g(m);
          if (!drain_waiters.empty()) {  // answers come in the order asked
            drain_waiters.front().set_value(msg);
            drain_waiters.erase(drain_waiters.begin());
          }
        } else if constexpr (std::is_same_v<T, proto::undrained_msg>) {
          std::lock_guard<std::mutex> g(m);
          if (!undrain_waiters.empty()) {  // answers come in the order asked
            undrain_waiters.front().set_value(msg);
            undrain_waiters.erase(undrain_waiters.begin());
          }
        } else if constexpr (std::is_same_v<T, proto::adapters_result>) {
          std::lock_guard<std::mutex> g(m);
          if (stale_adapter_answers > 0)
            --stale_adapter_answers;
          else if (!adapter_waiters.empty()) {
            adapter_waiters.front().set_value(msg);
            adapter_waiters.erase(adapter_waiters.begin());
          }
        } else if constexpr (std::is_same_v<T, proto::stats_reply>) {
          std::lock_guard<std::mutex> g(m);
          for (auto& p : stats_waiters)
            p.set_value(msg.values);
          stats_waiters.clear();
        } else if constexpr (std::is_same_v<T, proto::token_msg>) {
          live_entry* e = nullptr;
          {
            std::lock_guard<std::mutex> g(m);
            auto it = live.find(msg.id.value());
            if (it == live.end())
              return;
            e = &it->second;
            e->acc.text += msg.text;
            e->acc.tokens.push_back(msg.token);
            if (msg.logprobs)
              e->acc.logprobs.push_back(*msg.logprobs);
          }
          if (e->cb.on_token)
            e->cb.on_token(msg);
          if (e->window > 0 && !e->cb.manual_credit && ++e->ungranted >= std::max<std::uint32_t>(1, e->window / 2)) {
            post(proto::encode(proto::credit_msg{msg.id, e->ungranted}));
            std::lock_guard<std::mutex> g(m);
            e->granted += e->ungranted;
            e->ungranted = 0;
          }
        } else if constexpr (std::is_same_v<T, proto::done_msg>) {
          result r;
          std::uint32_t moves = 0;
          {
            std::lock_guard<std::mutex> g(m);
            auto it = live.find(msg.id.value());
            if (it == live.end())
              return;
            r = std::move(it->second.acc);
            moves = it->second.moves;
          }
          if (msg.text)
            r.text = *msg.text;
          if (!msg.logprobs.empty()) {  // stream=false: done carries them
            r.tokens = msg.tokens;
            r.logprobs = msg.logprobs;
          }
          r.finish_reason = msg.finish_reason;
          r.usage = msg.usage;
          r.usage.resumed += moves;  // and the times this client moved it to another gateway
          r.timings = msg.timings;
          r.seed = msg.seed;
          finish(msg.id.value(), std::move(r));
        } else if constexpr (std::is_same_v<T, proto::error_msg>) {
          if (!msg.id) {
            // A refused admin message (drain): its waiter learns why instead of timing out.
            std::lock_guard<std::mutex> g(m);
            if ((msg.code == serve_errc::unauthenticated || msg.code == serve_errc::forbidden) && !drain_waiters.empty()) {
              drain_waiters.front().set_exception(std::make_exception_ptr(
                std::runtime_error(std::string(to_string(msg.code)) + ": " + msg.message)));
              drain_waiters.erase(drain_waiters.begin());
            }
            return;  // else about a frame we sent that could not be read: nothing to end
          }
          result r;
          r.error = msg.code;
          r.message = msg.message;
          r.retry_after_ms = msg.retry_after_ms;
          finish(msg.id->value(), std::move(r));
        } else if constexpr (std::is_same_v<T, proto::cancelled_msg>) {
          result r;
          r.error = serve_errc::cancelled;
          r.message = "cancelled";
          finish(msg.id.value(), std::move(r));
        }
        // accepted: nothing to do; decode_error: a frame we cannot read is dropped.
      },
      decoded);
  }

  void expire(clock_type::time_point now) {
    std::vector<std::uint64_t> ids;
    {
      std::lock_guard<std::mutex> g(m);
      for (auto& [id, e] : live)
        if (e.deadline && *e.deadline <= now)
          ids.push_back(id);
    }
    for (auto id : ids) {
      wake_self_cancel(id);
      result r;
      r.error = serve_errc::timeout;
      r.message = "no terminal reply within " + std::to_string(opts.request_timeout.count()) + " ms";
      finish(id, std::move(r));
    }
  }

  /// The gateway `lost` stopped answering: every live request goes to the next one as a
  /// continuation (I/O thread); one past its deadline ends with timeout.
  void move_all(zmq::socket_t& dealer, const std::string& lost, clock_type::time_point now) {
    std::vector<std::string> frames;
    std::vector<std::uint64_t> late;
    {
      std::lock_guard<std::mutex> g(m);
      for (auto& [id, e] : live) {
        auto next = continuation_of(e, now);
        if (!next) {
          late.push_back(id);
          continue;
        }
        ++e.moves;
        ++moved;
        frames.push_back(proto::encode(*next));
      }
    }
    for (auto& f : frames)
      (void) dealer.send(zmq::buffer(f), zmq::send_flags::dontwait);
    for (auto id : late) {
      result r;
      r.error = serve_errc::timeout;
      r.message = "deadline passed while the gateway at " + lost + " was unreachable";
      finish(id, std::move(r));
    }
  }

  std::vector<std::uint64_t> pending_cancels;  // I/O thread only
  void wake_self_cancel(std::uint64_t id) { pending_cancels.push_back(id); }

  void run() {
    auto dealer = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
    configure_dealer(*dealer, opts, gateways[0]);
    auto last_rx = clock_type::now(), last_ping = clock_type::now();
    std::size_t silent_moves = 0;  ///< gateways given up on since anything arrived
    while (!stopping) {
      zmq::pollitem_t items[] = {{static_cast<void*>(*dealer), 0, ZMQ_POLLIN, 0},
                                 {static_cast<void*>(wake_in), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::chrono::milliseconds(50));
      const auto now = clock_type::now();
      if (items[1].revents & ZMQ_POLLIN) {
        zmq::message_t msg;
        while (wake_in.recv(msg, zmq::recv_flags::dontwait))
          if (msg.size() > 0)
            (void) dealer->send(msg, zmq::send_flags::dontwait);
      }
      if (items[0].revents & ZMQ_POLLIN) {
        zmq::message_t msg;
        while (dealer->recv(msg, zmq::recv_flags::dontwait)) {
          last_rx = now;
          silent_moves = 0;
          on_frame(std::string_view(static_cast<const char*>(msg.data()), msg.size()));
        }
      }
      expire(now);
      for (auto id : pending_cancels)
        (void) dealer->send(zmq::buffer(proto::encode(proto::cancel_msg{proto::client_request_id{id}})),
                            zmq::send_flags::dontwait);
      pending_cancels.clear();
      bool busy;
      {
        std::lock_guard<std::mutex> g(m);
        busy = !live.empty();
      }
      if (!busy) {
        last_rx = now;  // silence while idle is not a failure
        continue;
      }
      if (now - last_ping >= opts.heartbeat) {
        (void) dealer->send(zmq::buffer(proto::encode(proto::ping_msg{})), zmq::send_flags::dontwait);
        last_ping = now;
      }
      if (now - last_rx > 3 * opts.heartbeat) {
        std::string lost;
        {
          std::lock_guard<std::mutex> g(m);
          lost = gateways[current];
          current = (current + 1) % gateways.size();
        }
        if (gateways.size() > 1) {
          // If the old gateway is only slow, not gone, it should not keep generating: a cancel
          // for each request, given a moment to leave before the socket closes.
          dealer->set(zmq::sockopt::linger, 100);
          std::vector<std::uint64_t> ids;
          {
            std::lock_guard<std::mutex> g(m);
            for (auto& [id, e] : live)
              ids.push_back(id);
          }
          for (auto id : ids)
            (void) dealer->send(zmq::buffer(proto::encode(proto::cancel_msg{proto::client_request_id{id}})),
                                zmq::send_flags::dontwait);
        }
        dealer = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
        configure_dealer(*dealer, opts, gateways[current]);
        if (gateways.size() > 1 && ++silent_moves < gateways.size())
          move_all(*dealer, lost, now);
        else if (gateways.size() > 1)
          fail_all(serve_errc::worker_lost, "no gateway of " + std::to_string(gateways.size())
                                              + " answered heartbeats (the last tried: " + lost + ")");
        else
          fail_all(serve_errc::worker_lost, "gateway unreachable at " + lost + " (no reply to heartbeats); reconnecting");
        last_rx = now;
      }
    }
  }
};

client::client(client_options opts) : impl_(std::make_unique<impl>(std::move(opts))) {
  impl_->io = std::thread([this] { impl_->run(); });
}

client::~client() {
  impl_->stopping = true;
  impl_->post("");  // wakes the poll
  impl_->io.join();
  impl_->fail_all(serve_errc::cancelled, "the client was destroyed");
  std::lock_guard<std::mutex> g(impl_->m);
  for (auto& p : impl_->pongs)
    p.set_value(false);
  for (auto& p : impl_->stats_waiters)
    p.set_value({});
  for (auto& p : impl_->drain_waiters)
    p.set_value({});
  for (auto& p : impl_->undrain_waiters)
    p.set_value({});
  for (auto& p : impl_->adapter_waiters)
    p.set_value({});
}

proto::client_request_id client::submit(proto::submit_msg m, stream_callbacks cb) {
  std::string frame;
  {
    std::lock_guard<std::mutex> g(impl_->m);
    m.id = proto::client_request_id{impl_->next_id++};
    if (m.tenant.empty())
      m.tenant = impl_->opts.tenant;
    live_entry e;
    e.cb = std::move(cb);
    e.window = m.stream ? m.window.value_or(0) : 0;
    e.submitted = clock_type::now();
    if (impl_->opts.request_timeout.count() > 0)
      e.deadline = e.submitted + impl_->opts.request_timeout;
    if (impl_->gateways.size() > 1) {
      if (!m.seed)
        m.seed = impl_->seeds();  // another gateway must draw the same tokens
      e.sent = m;
    }
    impl_->live.emplace(m.id.value(), std::move(e));
    frame = proto::encode(m);
    impl_->wake_out.send(zmq::buffer(frame), zmq::send_flags::none);
  }
  return m.id;
}

std::future<result> client::submit(proto::submit_msg m) {
  auto p = std::make_shared<std::promise<result>>();
  auto f = p->get_future();
  stream_callbacks cb;
  cb.on_done = [p](const result& r) { p->set_value(r); };
  submit(std::move(m), std::move(cb));
  return f;
}

bool client::cancel(proto::client_request_id id) { return impl_->post_if_live(id, proto::encode(proto::cancel_msg{id})); }

bool client::grant(proto::client_request_id id, std::uint32_t tokens) {
  if (tokens == 0 || !impl_->post_if_live(id, proto::encode(proto::credit_msg{id, tokens})))
    return false;
  std::lock_guard<std::mutex> g(impl_->m);
  if (auto it = impl_->live.find(id.value()); it != impl_->live.end())
    it->second.granted += tokens;
  return true;
}

std::optional<std::chrono::microseconds> client::ping(std::chrono::milliseconds timeout) {
  std::promise<bool> p;
  auto f = p.get_future();
  {
    std::lock_guard<std::mutex> g(impl_->m);
    impl_->pongs.push_back(std::move(p));
  }
  const auto t0 = clock_type::now();
  impl_->post(proto::encode(proto::ping_msg{}));
  if (f.wait_for(timeout) != std::future_status::ready || !f.get())
    return std::nullopt;
  return std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0);
}

std::optional<std::map<std::string, double>> client::stats(std::chrono::milliseconds timeout) {
  return impl_->ask(impl_->stats_waiters, proto::encode(proto::stats_msg{}), timeout);
}

std::optional<proto::drained_msg> client::drain(const std::string& node, std::chrono::milliseconds timeout) {
  return impl_->ask(impl_->drain_waiters, proto::encode(proto::drain_msg{node}), timeout);
}

std::optional<proto::undrained_msg> client::undrain(const std::string& node, std::chrono::milliseconds timeout) {
  return impl_->ask(impl_->undrain_waiters, proto::encode(proto::undrain_msg{node}), timeout);
}

std::optional<proto::adapters_result> client::adapters(const proto::adapters_msg& m, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> one(impl_->adapters_call);
  auto r = impl_->ask(impl_->adapter_waiters, proto::encode(m), timeout);
  if (!r) {
    std::lock_guard<std::mutex> g(impl_->m);
    if (!impl_->adapter_waiters.empty()) {  // its answer may still come: drop it then
      impl_->adapter_waiters.pop_back();
      ++impl_->stale_adapter_answers;
    }
  }
  return r;
}

std::size_t client::in_flight() const {
  std::lock_guard<std::mutex> g(impl_->m);
  return impl_->live.size();
}

std::string client::endpoint() const {
  std::lock_guard<std::mutex> g(impl_->m);
  return impl_->gateways[impl_->current];
}

std::uint64_t client::continuations() const {
  std::lock_guard<std::mutex> g(impl_->m);
  return impl_->moved;
}

std::string describe(const result& r) {
  if (r.ok())
    return r.text;
  std::ostringstream os;
  os << "error " << to_string(r.error) << ": " << r.message;
  return os.str();
}

} // namespace lf::client
