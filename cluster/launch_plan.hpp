#pragma once
/// What `lorafleet launch` and `lorafleet node` decide, as plain logic: how each node is started
/// (a local child process, over ssh, or by hand on its host, with the exact command), how long a
/// worker node waits before trying the router again, and how a child's output becomes whole lines
/// prefixed with its node's name.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster_config.hpp"

namespace lf::cluster {

/// How a node gets started.
enum class start_mode { local, ssh, manual };

/// "local", "ssh", "manual".
std::string_view to_string(start_mode m) noexcept;

/// One node's start.
struct node_start {
  std::string node;
  start_mode mode = start_mode::manual;
  std::vector<std::string> argv;  ///< local / ssh: what to exec; manual: the command for its host
  std::string host;
};

/// The nodes in start order (router node first). Local hosts (is_local_host with `local_names`)
/// run `self_binary node CONFIG --name N [node_args...]`; a node with `ssh` runs the same command over ssh
/// with launch.remote_binary / remote_config (default: the same paths); the others are manual.
std::vector<node_start> plan_launch(const cluster_config& cfg, const std::string& self_binary,
                                    const std::vector<std::string>& local_names,
                                    const std::vector<std::string>& node_args = {});

/// `s` quoted for a POSIX shell when it needs quoting ("a b" -> 'a b', "it's" -> 'it'\''s').
std::string shell_quote(std::string_view s);

/// argv as one shell command line.
std::string command_line(const std::vector<std::string>& argv);

/// Exponential backoff: initial, 2x, 4x, ... capped at max; reset() after a success.
class backoff {
public:
  backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max), next_(initial) {}
  /// The delay to wait now; the following one doubles (up to max).
  std::chrono::milliseconds next();
  /// Back to the initial delay.
  void reset() { next_ = initial_; }

private:
  std::chrono::milliseconds initial_, max_, next_;
};

/// Cuts a byte stream (a child's stdout) into lines. Lines longer than `max_line` are cut there,
/// so a child that never writes a newline cannot grow the buffer without bound.
class line_splitter {
public:
  explicit line_splitter(std::size_t max_line = 64 * 1024) : max_line_(max_line) {}
  /// Appends bytes; returns the lines completed by them (without '\n' or a trailing '\r').
  std::vector<std::string> feed(std::string_view bytes);
  /// The unterminated rest (the stream ended); empty if none.
  std::string flush();

private:
  std::size_t max_line_;
  std::string partial_;
};

} // namespace lf::cluster
