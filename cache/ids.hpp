#pragma once
/// Ids used by the KV cache: physical blocks, sequences (one per admitted request) and LoRA
/// adapters. Standard library only.

#include <cstdint>

#include "core/strong_id.hpp"

namespace lf::cache {

/// Index of a physical KV block, in [0, num_blocks).
using block_id = lf::strong_id<struct block_tag, std::uint32_t>;

/// Handle of a sequence that owns a block table; chosen by the caller (e.g. the request id).
using seq_id = lf::strong_id<struct seq_tag, std::uint64_t>;

/// LoRA adapter whose weights produced a block's K/V; value 0 is the base model (no adapter).
using adapter_id = lf::strong_id<struct adapter_tag, std::uint32_t>;

/// The base model: requests without a LoRA adapter.
inline constexpr adapter_id base_model{0};

/// Namespace of a sequence's prefix-cache blocks (vLLM's cache_salt): blocks are reused only
/// between sequences of equal salt. Value 0 is the shared namespace (no salt).
using cache_salt = lf::strong_id<struct cache_salt_tag, std::uint64_t>;

/// The shared namespace: every unsalted sequence may reuse every other's blocks.
inline constexpr cache_salt no_salt{0};

} // namespace lf::cache
