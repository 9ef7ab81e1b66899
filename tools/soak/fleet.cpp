#include "tools/soak/fleet.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>

#include <poll.h>
#include <sys/wait.h>

namespace lf::soak {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

fleet::fleet(fleet_options o) : opts_(std::move(o)) {
  fs::create_directories(opts_.work_dir);
  fs::remove(opts_.work_dir + "/ready");
  std::vector<std::string> argv{opts_.binary, "launch", opts_.config, "--ready-file", opts_.work_dir + "/ready"};
  argv.insert(argv.end(), opts_.launch_args.begin(), opts_.launch_args.end());
  launch_ = std::make_unique<cluster::child_process>(argv);
  reader_ = std::thread([this] { read_output(); });
}

fleet::~fleet() {
  client_.reset();
  if (launch_->running() && !stop(60s))
    launch_->signal(SIGKILL);
  reading_ = false;
  reader_.join();
}

void fleet::read_output() {
  std::ofstream log(log_path());
  std::string pending;
  while (reading_) {
    pollfd p{launch_->output_fd(), POLLIN, 0};
    if (p.fd < 0)
      return;
    ::poll(&p, 1, 100);
    launch_->read_some(pending);
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      auto line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      log << line << '\n';
      const bool notable = line.rfind("[launch]", 0) == 0 || line.find(" WARN ") != std::string::npos
                           || line.find(" ERROR ") != std::string::npos;
      std::lock_guard<std::mutex> lk(m_);
      if (notable && notable_.size() < 400)
        notable_.push_back(std::move(line));
    }
    log.flush();
  }
}

bool fleet::wait_ready(std::chrono::seconds limit) {
  const auto ready = opts_.work_dir + "/ready";
  const auto until = clock::now() + limit;
  while (clock::now() < until && !fs::exists(ready)) {
    if (!launch_->running() || launch_->poll_exit())
      return false;
    std::this_thread::sleep_for(100ms);
  }
  std::ifstream in(ready);
  std::string word;
  if (!(in >> word >> endpoint_) || word != "endpoint")
    return false;
  client::client_options co;
  co.endpoint = endpoint_;
  client_ = std::make_unique<client::client>(co);
  return true;
}

std::map<std::string, pid_t> fleet::pids() const {
  std::map<std::string, pid_t> out;
  std::ifstream in(opts_.work_dir + "/ready");
  std::string kind, name;
  while (in >> kind >> name) {
    if (kind != "node")
      continue;
    pid_t pid = 0;
    if (in >> pid)
      out[name] = pid;
  }
  return out;
}

std::map<std::string, double> fleet::stats(std::chrono::milliseconds timeout) const {
  if (!client_)
    return {};
  auto s = client_->stats(timeout);
  return s ? *s : std::map<std::string, double>{};
}

bool fleet::signal_node(const std::string& name, int sig) const {
  const auto p = pids();
  auto it = p.find(name);
  if (it == p.end() || it->second <= 0)
    return false;
  return ::kill(it->second, sig) == 0;
}

drain_outcome fleet::drain(const std::string& node, std::chrono::seconds limit) const {
  drain_outcome out;
  cluster::child_process p({opts_.binary, "drain", node, "--endpoint", endpoint_});
  if (auto st = p.wait_exit(limit, &out.output)) {
    p.read_some(out.output);
    out.exit_status = WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
  }
  return out;  // on a timeout the destructor kills it
}

std::optional<int> fleet::stop(std::chrono::seconds limit) {
  if (!launch_->running())
    return launch_->poll_exit();
  launch_->signal(SIGTERM);
  auto st = launch_->wait_exit(limit);
  if (st)
    std::this_thread::sleep_for(200ms);  // the reader drains the pipe
  return st;
}

std::vector<std::string> fleet::notable_lines() const {
  std::lock_guard<std::mutex> lk(m_);
  return notable_;
}

} // namespace lf::soak
