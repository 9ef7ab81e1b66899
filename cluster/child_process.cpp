#include "cluster/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <thread>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lf::cluster {

child_process::child_process(const std::vector<std::string>& argv) {
  if (argv.empty())
    throw std::invalid_argument("child_process: empty argv");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(p[0]);
    ::close(p[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)  // the launcher died before prctl took effect
      ::_exit(1);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the launcher blocks SIGINT/SIGTERM; exec keeps masks
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      ::dup2(devnull, 0);
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    if (argv[0].find('/') == std::string::npos)
      ::execvp(args[0], args.data());
    else
      ::execv(args[0], args.data());
    const char msg[] = "cannot execute the node command\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(p[1]);
  fd_ = p[0];
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

child_process::~child_process() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  if (fd_ >= 0)
    ::close(fd_);
}

bool child_process::read_some(std::string& out) {
  if (fd_ < 0)
    return false;
  char buf[4096];
  for (;;) {
    const auto n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (n < 0 && errno == EINTR)
      continue;
    ::close(fd_);
    fd_ = -1;
    return false;
  }
}

void child_process::signal(int sig) noexcept {
  if (!status_ && pid_ > 0)
    ::kill(pid_, sig);
}

std::optional<int> child_process::poll_exit() noexcept {
  if (!status_ && pid_ > 0) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_)
      status_ = st;
  }
  return status_;
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds limit, std::string* out) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (out)
      read_some(*out);
    if (auto st = poll_exit())
      return st;
    if (std::chrono::steady_clock::now() >= until)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string describe_exit(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

std::vector<std::string> local_host_names() {
  std::vector<std::string> out;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) {
    out.emplace_back(name);
    if (auto* dot = std::strchr(name, '.')) {
      *dot = 0;
      out.emplace_back(name);
    }
  }
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    for (auto* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr)
        continue;
      char buf[INET6_ADDRSTRLEN] = {};
      const auto fam = i->ifa_addr->sa_family;
      if (fam == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
      else if (fam == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf, sizeof buf);
      if (buf[0])
        out.emplace_back(buf);
    }
    ::freeifaddrs(ifs);
  }
  return out;
}

std::string self_executable() {
  char buf[4096];
  const auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw std::runtime_error("cannot read /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

} // namespace lf::cluster
