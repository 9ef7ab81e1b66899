#pragma once
/// A worker's one pool of compute threads. Every parallel part of an engine step (matrix
/// products, attention, layer norms) runs on it; nothing else spawns threads under it, and the
/// BLAS library is not used by the engine at all. Fork-join with static partitions: the calling
/// thread is thread 0 and takes part, so a pool of one runs everything inline.
///
///   thread_pool pool(2);
///   pool.parallel_for(n, [&](std::size_t begin, std::size_t end) { ... });  // contiguous parts
///
/// Which thread computes what never changes a result: callers partition work so each output is
/// computed by one thread with a fixed order of operations (thread-count invariance).
///
/// Idle threads spin briefly for the next region (a step has about a hundred of them, microseconds
/// apart), then sleep, so an idle worker costs no CPU.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace lf::kernels {

/// See the file comment. Not reentrant: a task must not call back into its own pool.
class thread_pool {
public:
  /// `threads` >= 1 threads in all (threads - 1 are started here).
  explicit thread_pool(int threads);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Threads in the pool, the caller's included.
  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(thread_index) on every thread of the pool (0 is the caller) and waits for all.
  template <class F>
  void run(F&& fn) {
    using fn_t = std::remove_reference_t<F>;
    dispatch([](void* ctx, int t) { (*static_cast<fn_t*>(ctx))(t); }, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  /// Splits [0, n) into size() contiguous parts, as equal as possible, and calls fn(begin, end)
  /// for each non-empty part on its own thread.
  template <class F>
  void parallel_for(std::size_t n, F&& fn) {
    if (n == 0)
      return;
    const auto parts = static_cast<std::size_t>(size());
    if (parts == 1 || n == 1) {
      fn(std::size_t{0}, n);
      return;
    }
    run([&](int t) {
      const auto [b, e] = split(n, parts, static_cast<std::size_t>(t));
      if (b < e)
        fn(b, e);
    });
  }

  /// Part `i` of `parts` of [0, n): the split parallel_for uses.
  static std::pair<std::size_t, std::size_t> split(std::size_t n, std::size_t parts, std::size_t i) noexcept {
    const auto base = n / parts, extra = n % parts;
    const auto b = i * base + (i < extra ? i : extra);
    return {b, b + base + (i < extra ? 1 : 0)};
  }

private:
  using invoke_fn = void (*)(void*, int);
  void dispatch(invoke_fn f, void* ctx);
  void worker_main(int index);

  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  invoke_fn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::mutex m_;
  std::condition_variable cv_;
  int sleepers_ = 0;  ///< guarded by m_
};

} // namespace lf::kernels
