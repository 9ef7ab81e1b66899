#pragma once
/// Helpers for serving-loop tests: a fake step_engine and a collector of streamed events.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/request.hpp"
#include "worker/engine/step_engine.hpp"
#include "worker/request.hpp"
#include "worker/serving_loop.hpp"

namespace lf::test {

/// `d` validated as the router would, for a model with `context` positions and GPT-2's
/// vocabulary: the loop takes validated requests only.
inline validated_request validated(request_draft d, std::uint32_t context = 1024) {
  request_limits l;
  l.context_window = context;
  l.vocab_size = 50257;
  return validate_or_throw(std::move(d), l);
}

/// Submits `d` (validated) to `loop`.
inline worker::request_id submit(worker::serving_loop& loop, request_draft d, worker::request_callbacks cb,
                                 std::optional<worker::time_point> deadline = std::nullopt) {
  return loop.submit(validated(std::move(d)), deadline, std::move(cb));
}

/// A model-free engine: the next token of a chunk is a fixed function of its last token and
/// position, so outputs are deterministic and independent of batching. Never emits EOS (50256).
class fake_engine final : public engine::step_engine {
public:
  /// `step_time` simulates compute, so tests can act while a request is mid-generation.
  explicit fake_engine(std::size_t vocab = 50257, std::chrono::microseconds step_time = {})
    : vocab_(vocab), step_time_(step_time) {}

  void step(const std::vector<engine::engine_chunk>& chunks) override {
    if (step_time_.count() > 0)
      std::this_thread::sleep_for(step_time_);
    rows_.clear();
    for (auto& c : chunks) {
      ++tokens_computed_;
      if (!c.want_logits)
        continue;
      auto last = c.tokens[c.count - 1];
      auto next = static_cast<std::size_t>(last * 31 + 7 * (c.start + c.count)) % (vocab_ - 1);
      std::vector<float> row(vocab_, 0.0f);
      row[next] = 10.0f;
      rows_.push_back(std::move(row));
    }
    ++steps_;
  }
  float* logits(std::size_t i) override { return rows_.at(i).data(); }
  std::size_t vocab_size() const override { return vocab_; }
  std::uint64_t steps() const { return steps_; }

private:
  std::size_t vocab_;
  std::chrono::microseconds step_time_;
  std::vector<std::vector<float>> rows_;
  std::uint64_t steps_ = 0, tokens_computed_ = 0;
};

/// Collects every request's streamed text and terminal result; counts terminals to catch doubles.
class collector {
public:
  worker::request_callbacks make(int key) {
    worker::request_callbacks cb;
    cb.on_token = [this, key](std::int32_t token, std::string_view text) {
      std::lock_guard<std::mutex> g(m_);
      streamed_[key] += text;
      events_[key].emplace_back(token, std::string(text));
      ++tokens_[key];
      cv_.notify_all();
    };
    cb.on_done = [this, key](worker::request_result r) {
      std::lock_guard<std::mutex> g(m_);
      ++terminals_[key];
      results_[key] = std::move(r);
      cv_.notify_all();
    };
    return cb;
  }

  /// Waits (bounded) until `n` distinct requests have ended.
  bool wait_for(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lk(m_);
    return cv_.wait_for(lk, limit, [&] { return results_.size() >= n; });
  }

  /// Waits (bounded) until request `key` has streamed `n` tokens.
  bool wait_tokens(int key, int n, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lk(m_);
    return cv_.wait_for(lk, limit, [&] { return tokens_[key] >= n; });
  }

  worker::request_result result(int key) {
    std::lock_guard<std::mutex> g(m_);
    return results_.at(key);
  }
  std::string streamed(int key) {
    std::lock_guard<std::mutex> g(m_);
    return streamed_[key];
  }
  /// Every on_token of request `key`, in order: (token, text).
  std::vector<std::pair<std::int32_t, std::string>> events(int key) {
    std::lock_guard<std::mutex> g(m_);
    return events_[key];
  }
  int terminals(int key) {
    std::lock_guard<std::mutex> g(m_);
    return terminals_[key];
  }
  int tokens(int key) {
    std::lock_guard<std::mutex> g(m_);
    return tokens_[key];
  }
  std::size_t ended() {
    std::lock_guard<std::mutex> g(m_);
    return results_.size();
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  std::map<int, worker::request_result> results_;
  std::map<int, std::string> streamed_;
  std::map<int, std::vector<std::pair<std::int32_t, std::string>>> events_;
  std::map<int, int> terminals_, tokens_;
};

} // namespace lf::test
