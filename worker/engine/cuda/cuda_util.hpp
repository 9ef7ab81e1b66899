#pragma once
/// Error checks and owned device memory for the CUDA engine's host code.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace lf::engine::cuda {

/// Throws std::runtime_error naming `what` and CUDA's message unless `e` is cudaSuccess.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

/// The same for cuBLAS.
inline void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cublas: ") + what + ": " + cublasGetStatusString(e));
}

/// `n` elements of T in device memory, freed with the object; moves, never copies.
template <class T>
class device_buffer {
public:
  device_buffer() = default;
  explicit device_buffer(std::size_t n) { resize(n); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~device_buffer() { release(); }

  /// Drops the contents and holds `n` elements (nothing happens when n fits already).
  void resize(std::size_t n) {
    if (n <= n_)
      return;
    release();
    void* p = nullptr;
    check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
    p_ = static_cast<T*>(p);
    n_ = n;
  }
  /// Copies `n` host elements to the front (synchronously).
  void upload(const T* host, std::size_t n) {
    resize(n);
    check(cudaMemcpy(p_, host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  T* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

private:
  void release() noexcept {
    if (p_ != nullptr)
      cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

/// `n` elements of page-locked host memory (fast, asynchronous copies from the device).
template <class T>
class pinned_buffer {
public:
  pinned_buffer() = default;
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  ~pinned_buffer() {
    if (p_ != nullptr)
      cudaFreeHost(p_);
  }
  void resize(std::size_t n) {
    if (n <= n_)
      return;
    if (p_ != nullptr)
      cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
    void* p = nullptr;
    check(cudaMallocHost(&p, n * sizeof(T)), "cudaMallocHost");
    p_ = static_cast<T*>(p);
    n_ = n;
  }
  T* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }

private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

} // namespace lf::engine::cuda
