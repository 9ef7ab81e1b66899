#pragma once
/// The interface between the worker's serving loop and a model: one forward over a mixed batch of
/// prefill chunks and decode tokens, then one row of logits per chunk that asked for it. Pure C++
/// (no ATen), so the loop is tested with a fake engine and built without the torch headers.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cache/ids.hpp"

namespace lf::engine {

/// One sequence's share of a step.
struct engine_chunk {
  const std::int32_t* tokens = nullptr;  ///< the chunk's token ids (count of them)
  std::int64_t start = 0;                ///< position of tokens[0]; K/V of [0, start) are cached
  std::int64_t count = 0;
  const std::vector<cache::block_id>* table = nullptr;  ///< covers [0, start + count)
  bool want_logits = false;              ///< return logits of the chunk's last position
  cache::adapter_id adapter = cache::base_model;        ///< LoRA adapter of the sequence
  /// With want_logits: logits of the chunk's last `logits_count` positions (in position order),
  /// as consecutive logits() rows. More than 1 only for an engine whose multi_logits() is true
  /// (speculative decoding verifies proposed tokens this way). Last, so that the chunks written
  /// before it (the GPU engine's tools and tests) keep their meaning.
  std::int64_t logits_count = 1;
};

/// A model that runs steps over the paged KV cache.
class step_engine {
public:
  virtual ~step_engine() = default;

  /// One forward over every chunk; throws on failure (the loop fails the step's requests).
  virtual void step(const std::vector<engine_chunk>& chunks) = 0;

  /// After step(): float logits of the i-th row wanted (vocab_size() of them): the chunks with
  /// want_logits in order, logits_count rows each. The caller may modify them (the sampler does)
  /// until the next step().
  virtual float* logits(std::size_t i) = 0;

  /// Whether this engine honours engine_chunk::logits_count > 1 (several rows of one chunk, each
  /// as it would be were that position the chunk's last). Without it the serving loop does not
  /// speculate.
  virtual bool multi_logits() const { return false; }

  virtual std::size_t vocab_size() const = 0;

  /// Runs fn(begin, end) over parts of [0, n) on the engine's compute threads (the loop samples
  /// rows this way while those threads would idle); one call on the caller's thread by default.
  /// fn must be safe to run concurrently on disjoint ranges.
  virtual void for_rows(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) {
    if (n > 0)
      fn(0, n);
  }

  // -- moving K/V between engines (a drained worker ships its sequences' blocks) --

  /// Names the K/V bytes' format: store type, shape, block size and the model they came from.
  /// Bytes read by read_kv() may be written by the write_kv() of any engine whose kv_format() is
  /// equal. Empty (the default): this engine cannot move K/V; its sequences are recomputed.
  virtual std::string kv_format() const { return {}; }

  /// Bytes one block takes in read_kv()'s output.
  virtual std::size_t kv_block_bytes() const { return 0; }

  /// Appends the K/V of `blocks`, in order, to `out` (kv_block_bytes() each).
  virtual void read_kv(const std::vector<cache::block_id>& /*blocks*/, std::string& /*out*/) const {
    throw std::logic_error("step_engine: this engine cannot move K/V");
  }

  /// Writes read_kv()'s bytes of blocks.size() blocks into `blocks`, in order. Throws
  /// std::invalid_argument if `bytes` does not hold exactly that many blocks.
  virtual void write_kv(const std::vector<cache::block_id>& /*blocks*/, std::string_view /*bytes*/) {
    throw std::logic_error("step_engine: this engine cannot move K/V");
  }
};

} // namespace lf::engine
