#pragma once
/// What the GPT-2 loaders share (the serving engine's cpu_weights, the GPU engine's
/// cuda_weights and the ATen baselines' weights): where a checkpoint directory keeps its tensors, finding a tensor by its GPT2Model
/// name, checking its shape against config.json, and handing a copied tensor's file pages back.
/// Pure C++ (no torch).

#include <cstdint>
#include <string>
#include <vector>

#include "worker/engine/checkpoint/safetensors.hpp"

namespace lf::engine {

/// DIR/model.safetensors, after checking that DIR is a directory holding it (the errors name the
/// path and say how to make a checkpoint).
std::string checkpoint_tensors_path(const std::string& dir);

/// The tensor GPT2Model calls `name`, stored with or without the `transformer.` prefix; nullptr
/// when it is absent.
const tensor_view* find_gpt2_tensor(const safetensors_file& file, const std::string& name);

/// find_gpt2_tensor, or std::runtime_error naming the file and both names tried.
const tensor_view& require_gpt2_tensor(const safetensors_file& file, const std::string& name);

/// Throws std::runtime_error unless `t` has the shape config.json implies.
void check_gpt2_shape(const safetensors_file& file, const tensor_view& t, const std::vector<std::int64_t>& expected);

/// Hands the pages of a tensor already copied out of a read-only private file map back to the
/// kernel (they would be re-read from the file if touched again, and nothing touches them), so a
/// load does not hold the file and its converted copy at once.
void release_tensor_pages(const tensor_view& t);

} // namespace lf::engine
