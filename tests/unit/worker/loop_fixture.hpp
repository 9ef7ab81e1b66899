#pragma once
/// Helpers for serving-loop tests: a fake step_engine, a collector of streamed events and a
/// step_sink that records its batches.

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <stdexcept>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/request.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/model/step_engine.hpp"
#include "worker/request.hpp"
#include "worker/serving_loop.hpp"

namespace lf::test {

/// The repository's GPT-2 tokenizer (models/tokenizer), loaded once.
inline const text::tokenizer& repo_tokenizer() {
  static auto t = text::tokenizer::from_dir(std::string(LF_SOURCE_DIR) + "/models/tokenizer");
  return t;
}

/// `d` validated as the router would, for a model with `context` positions and GPT-2's
/// vocabulary: the loop takes validated requests only.
inline validated_request validated(request_draft d, std::uint32_t context = 1024) {
  request_limits l;
  l.context_window = context;
  l.vocab_size = 50257;
  return validate_or_throw(std::move(d), l);
}

/// A greedy request for `max_tokens` tokens after `prompt`.
inline request_draft req(std::vector<std::int32_t> prompt, int max_tokens) {
  request_draft r;
  r.prompt = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  return r;
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

  /// A fake K/V store (`num_blocks` blocks of `block_size` slots holding each position's token),
  /// so K/V can move between fake engines (kv_format "fake-kv"); from then on a chunk's next token
  /// also depends on the sum of the store over all its positions, so K/V that is missing or
  /// wrong (a bad import) changes what the engine generates.
  void enable_kv(std::uint32_t block_size, std::uint32_t num_blocks) {
    kv_block_ = block_size;
    kv_.assign(std::size_t{block_size} * num_blocks, 0);
  }
  std::string kv_format() const override { return kv_block_ ? "fake-kv B" + std::to_string(kv_block_) : ""; }
  std::size_t kv_block_bytes() const override { return kv_block_ * sizeof(std::int32_t); }
  void read_kv(const std::vector<cache::block_id>& blocks, std::string& out) const override {
    for (auto b : blocks)
      out.append(reinterpret_cast<const char*>(kv_.data() + std::size_t{b.value()} * kv_block_), kv_block_bytes());
  }
  void write_kv(const std::vector<cache::block_id>& blocks, std::string_view bytes) override {
    if (bytes.size() != blocks.size() * kv_block_bytes())
      throw std::invalid_argument("fake_engine::write_kv: wrong size");
    for (std::size_t i = 0; i < blocks.size(); ++i)
      std::memcpy(kv_.data() + std::size_t{blocks[i].value()} * kv_block_, bytes.data() + i * kv_block_bytes(),
                  kv_block_bytes());
  }

  void step(const std::vector<engine::engine_chunk>& chunks) override {
    if (step_time_.count() > 0)
      std::this_thread::sleep_for(step_time_);
    rows_.clear();
    for (auto& c : chunks) {
      positions_ += static_cast<std::uint64_t>(c.count);
      std::int64_t kv_sum = 0;
      if (kv_block_ > 0) {
        auto slot = [&](std::int64_t p) { return std::size_t{(*c.table)[p / kv_block_].value()} * kv_block_ + p % kv_block_; };
        for (std::int64_t k = 0; k < c.count; ++k)
          kv_[slot(c.start + k)] = c.tokens[k];
        for (std::int64_t p = 0; p < c.start + c.count; ++p)
          kv_sum += kv_[slot(p)];
      }
      if (!c.want_logits)
        continue;
      auto last = c.tokens[c.count - 1];
      auto next = static_cast<std::size_t>(last * 31 + 7 * (c.start + c.count) + 13 * kv_sum) % (vocab_ - 1);
      std::vector<float> row(vocab_, 0.0f);
      row[next] = 10.0f;
      rows_.push_back(std::move(row));
    }
    ++steps_;
  }
  float* logits(std::size_t i) override { return rows_.at(i).data(); }
  std::size_t vocab_size() const override { return vocab_; }
  std::uint64_t steps() const { return steps_; }
  /// Positions computed so far, over every step (read it after the loop has stopped).
  std::uint64_t positions() const { return positions_; }

private:
  std::size_t vocab_;
  std::chrono::microseconds step_time_;
  std::vector<std::vector<float>> rows_;
  std::uint64_t steps_ = 0, positions_ = 0;  // loop thread; read after the loop stops
  std::uint32_t kv_block_ = 0;
  std::vector<std::int32_t> kv_;
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

/// A step_sink that keeps every batch it is given.
class recording_sink final : public worker::step_sink {
public:
  void deliver(worker::step_batch batch) override {
    std::lock_guard<std::mutex> g(m_);
    empty_ += batch.entries.empty();  // counted here, checked on the test's thread
    for (auto& e : batch.entries)
      if (e.terminal())
        ++ended_;
    batches_.push_back(std::move(batch));
    cv_.notify_all();
  }

  /// Waits (bounded) until `n` requests have ended.
  bool wait_ended(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lk(m_);
    return cv_.wait_for(lk, limit, [&] { return ended_ >= n; });
  }

  /// Waits (bounded) until request `tag` has streamed `n` tokens.
  bool wait_tokens(std::uint64_t tag, std::size_t n, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lk(m_);
    return cv_.wait_for(lk, limit, [&] {
      std::size_t k = 0;
      for (auto& b : batches_)
        for (auto& e : b.entries)
          k += e.tag == tag && !e.terminal();
      return k >= n;
    });
  }

  std::vector<worker::step_batch> batches() {
    std::lock_guard<std::mutex> g(m_);
    return batches_;
  }

  std::size_t empty_batches() {
    std::lock_guard<std::mutex> g(m_);
    return empty_;
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<worker::step_batch> batches_;
  std::size_t ended_ = 0, empty_ = 0;
};

} // namespace lf::test
