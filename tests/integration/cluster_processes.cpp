#include "tests/integration/cluster_processes.hpp"

#include <csignal>
#include <filesystem>
#include <iostream>
#include <regex>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.hpp"
#include "proto/protocol.hpp"

namespace lf::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

bool run_to_end(const std::vector<std::string>& argv, std::chrono::seconds limit) {
  cluster::child_process p(argv);
  std::string ignored;  // read so a chatty child never blocks on a full pipe
  const auto st = p.wait_exit(limit, &ignored);
  return st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0;
}

std::string config_from(const std::string& name, const temp_dir& dir) {
  std::ifstream in(std::string(LF_SOURCE_DIR) + "/cluster-configs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  REQUIRE(!text.empty());
  text = std::regex_replace(text, std::regex("\"\\.\\./models/default\""), "\"" + (dir / "model") + "\"");
  // The adapters stay the repository's (loaded only when a request names one).
  text = std::regex_replace(text, std::regex("\"\\.\\./models/adapters\""),
                            "\"" + std::string(LF_SOURCE_DIR) + "/models/adapters\"");
  text = std::regex_replace(text, std::regex("tcp://127\\.0\\.0\\.1:5555"),
                            "tcp://127.0.0.1:" + std::to_string(free_port()));
  // Every "port = N" gets its own free port.
  std::string out;
  std::regex port_re("port = [0-9]+");
  auto it = std::sregex_iterator(text.begin(), text.end(), port_re);
  std::size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
    out += "port = " + std::to_string(free_port());
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + text.substr(last);
}

launched_cluster::launched_cluster(const std::function<std::string(const temp_dir&)>& config_text) {
  REQUIRE(run_to_end({LF_LORAFLEET_BIN, "make-model", "--out", dir_ / "model", "--layers", "2", "--heads",
                      "4", "--embd", "64", "--context", "256", "--seed", "1"},
                     120s));
  const auto cfg = dir_ / "cluster.toml";
  std::ofstream(cfg) << config_text(dir_);
  launch_ = std::make_unique<cluster::child_process>(
    std::vector<std::string>{LF_LORAFLEET_BIN, "launch", cfg, "--ready-file", dir_ / "ready"});
  reader_ = std::thread([this] {
    while (reading_) {
      pollfd p{launch_->output_fd(), POLLIN, 0};
      if (p.fd < 0)
        return;
      ::poll(&p, 1, 100);
      std::string bytes;
      launch_->read_some(bytes);
      std::lock_guard<std::mutex> lk(m_);
      log_ += bytes;
    }
  });
  const auto until = clock::now() + 180s;
  while (clock::now() < until && !fs::exists(dir_ / "ready") && !launch_->poll_exit())
    std::this_thread::sleep_for(100ms);
  INFO(log());
  REQUIRE(fs::exists(dir_ / "ready"));
  std::ifstream in(dir_ / "ready");
  std::string word;
  in >> word >> endpoint_;
  REQUIRE(word == "endpoint");
}

launched_cluster::~launched_cluster() {
  if (launch_->running()) {
    launch_->signal(SIGTERM);
    launch_->wait_exit(60s);
  }
  reading_ = false;
  reader_.join();
  // ctest shows this only for a failing test (--output-on-failure).
  std::cerr << "---- lorafleet launch output ----\n" << log() << "---- end ----\n";
}

std::map<std::string, pid_t> launched_cluster::pids() const {
  std::map<std::string, pid_t> out;
  std::ifstream in(dir_ / "ready");
  std::string kind, name;
  while (in >> kind) {
    if (kind == "node") {
      pid_t pid = 0;
      in >> name >> pid;
      out[name] = pid;
    } else {
      in >> name;
    }
  }
  return out;
}

std::map<std::string, double> launched_cluster::stats() const {
  client::client_options o;
  o.endpoint = endpoint_;
  client::client c(o);
  auto s = c.stats(2s);
  return s ? *s : std::map<std::string, double>{};
}

bool launched_cluster::wait_stats(const std::function<bool(const std::map<std::string, double>&)>& pred,
                                  std::chrono::milliseconds limit) const {
  const auto until = clock::now() + limit;
  while (clock::now() < until) {
    if (auto s = stats(); !s.empty() && pred(s))
      return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

std::optional<int> launched_cluster::stop(std::chrono::seconds limit) {
  launch_->signal(SIGTERM);
  auto st = launch_->wait_exit(limit);
  if (st)
    std::this_thread::sleep_for(200ms);  // the reader drains the pipe
  return st;
}

std::string launched_cluster::log() const {
  std::lock_guard<std::mutex> lk(m_);
  return log_;
}

load_client::load_client(std::string endpoint, int in_flight, int max_tokens)
    : endpoint_(std::move(endpoint)), in_flight_(in_flight), max_tokens_(max_tokens) {
  thread_ = std::thread([this] { run(); });
}

load_client::~load_client() {
  running_ = false;
  thread_.join();
}

int load_client::live() const {
  std::lock_guard<std::mutex> lk(m_);
  int n = 0;
  for (const auto& [id, r] : records_)
    n += r.terminals == 0;
  return n;
}

std::map<std::uint64_t, request_record> load_client::records() const {
  std::lock_guard<std::mutex> lk(m_);
  return records_;
}

bool load_client::wait_all_ended(std::chrono::milliseconds limit) {
  stop_submitting();
  const auto until = clock::now() + limit;
  while (clock::now() < until) {
    if (live() == 0)
      return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

void load_client::run() {
  zmq::context_t ctx{1};
  zmq::socket_t sock{ctx, zmq::socket_type::dealer};
  sock.set(zmq::sockopt::linger, 0);
  sock.set(zmq::sockopt::rcvtimeo, 50);
  sock.connect(endpoint_);
  std::uint64_t next = 1;
  static const char* prompts[] = {"Once upon a time", "The quick brown fox", "To be, or not to be",
                                  "Call me Ishmael.", "It was the best of times"};
  while (running_) {
    while (submitting_ && live() < in_flight_) {
      proto::submit_msg m;
      m.id = proto::client_request_id{next};
      m.prompt = prompts[next % 5];
      m.temperature = 0;
      m.max_tokens = max_tokens_;
      m.ignore_eos = true;
      {
        std::lock_guard<std::mutex> lk(m_);
        records_[next].submitted = clock::now();
      }
      ++next;
      sock.send(zmq::buffer(proto::encode(m)), zmq::send_flags::none);
    }
    zmq::message_t msg;
    if (!sock.recv(msg))
      continue;
    auto d = proto::decode_server(std::string_view(static_cast<const char*>(msg.data()), msg.size()));
    std::optional<std::uint64_t> id;
    bool terminal = false, token = false, done = false;
    serve_errc err = serve_errc::none;
    std::visit(
      [&](auto&& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, proto::accepted_msg>) {
          id = x.id.value();
        } else if constexpr (std::is_same_v<T, proto::token_msg>) {
          id = x.id.value();
          token = true;
        } else if constexpr (std::is_same_v<T, proto::done_msg>) {
          id = x.id.value();
          terminal = done = true;
        } else if constexpr (std::is_same_v<T, proto::error_msg>) {
          if (x.id)
            id = x.id->value();
          terminal = true;
          err = x.code;
        } else if constexpr (std::is_same_v<T, proto::cancelled_msg>) {
          id = x.id.value();
          terminal = true;
          err = serve_errc::cancelled;
        }
      },
      d);
    if (!id)
      continue;
    std::lock_guard<std::mutex> lk(m_);
    auto& r = records_[*id];
    if (r.terminals > 0)
      ++r.after_terminal;
    if (token)
      ++r.tokens;
    if (terminal) {
      ++r.terminals;
      r.done = done;
      r.error = err;
      r.ended = clock::now();
    }
  }
}

} // namespace lf::test
