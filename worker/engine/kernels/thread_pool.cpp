#include "worker/engine/kernels/thread_pool.hpp"

#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LF_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define LF_PAUSE() __asm__ volatile("yield")
#else
#define LF_PAUSE() std::this_thread::yield()
#endif

namespace lf::kernels {

namespace {
/// Spin this many pause iterations (tens of microseconds) before sleeping.
constexpr int spin_iterations = 4000;
} // namespace

thread_pool::thread_pool(int threads) {
  if (threads < 1)
    throw std::invalid_argument("thread_pool: at least one thread (got " + std::to_string(threads) + ")");
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this, i] { worker_main(i); });
}

thread_pool::~thread_pool() {
  {
    std::lock_guard<std::mutex> g(m_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  for (auto& t : workers_)
    t.join();
}

void thread_pool::dispatch(invoke_fn f, void* ctx) {
  if (workers_.empty()) {
    f(ctx, 0);
    return;
  }
  fn_ = f;
  ctx_ = ctx;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // The generation bump publishes fn_/ctx_; sleepers need the lock to not miss it.
    std::lock_guard<std::mutex> g(m_);
    generation_.fetch_add(1, std::memory_order_release);
    if (sleepers_ > 0)
      cv_.notify_all();
  }
  f(ctx, 0);
  while (pending_.load(std::memory_order_acquire) != 0)
    LF_PAUSE();
}

void thread_pool::worker_main(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < spin_iterations; ++i) {
      LF_PAUSE();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lk(m_);
      ++sleepers_;
      cv_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      --sleepers_;
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire))
      return;
    fn_(ctx_, index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

} // namespace lf::kernels
