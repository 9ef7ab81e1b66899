#pragma once
/// A child process for `lorafleet launch` (POSIX): stdout and stderr come back through one pipe,
/// stdin is /dev/null, it runs in its own process group (a terminal's Ctrl-C reaches only the
/// launcher, which stops the nodes in order) and gets SIGTERM if the launcher dies.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace lf::cluster {

/// See the file comment.
class child_process {
public:
  /// fork + exec (argv[0] searched in PATH when it has no '/'). Throws std::runtime_error when
  /// the pipe or fork fails; a failed exec shows as exit status 127 with a message on the pipe.
  explicit child_process(const std::vector<std::string>& argv);
  /// SIGKILL and reap, if still running.
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// The child's process id.
  pid_t pid() const noexcept { return pid_; }
  /// The read end of the output pipe (non-blocking); -1 after EOF.
  int output_fd() const noexcept { return fd_; }
  /// Appends what can be read now to `out`; false at end of file (the fd is closed then).
  bool read_some(std::string& out);
  /// Sends `sig` if still running.
  void signal(int sig) noexcept;
  /// Reaps the child if it has exited (non-blocking); its wait status then.
  std::optional<int> poll_exit() noexcept;
  /// Polls every 20 ms until the child exits or `limit` passes; its wait status, or nullopt on
  /// timeout (it keeps running). With `out`, what it prints meanwhile is appended there.
  std::optional<int> wait_exit(std::chrono::milliseconds limit, std::string* out = nullptr);
  /// Not reaped yet (call poll_exit() to find out whether it ended).
  bool running() const noexcept { return !status_; }

private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::optional<int> status_;
};

/// A wait status in words: "exited with status 0", "killed by signal 9 (Killed)".
std::string describe_exit(int status);

/// This machine's names for is_local_host: its host name and the addresses of its interfaces.
std::vector<std::string> local_host_names();

/// The absolute path of the running executable (/proc/self/exe).
std::string self_executable();

} // namespace lf::cluster
