#pragma once
/// Validation: the held-out loss of a model (optionally with LoRA factors) on each corpus file.
/// ATen only.

#include <cstdint>
#include <string>

#include "tools/train/corpus.hpp"
#include "tools/train/train_model.hpp"
#include "tools/train/trainer.hpp"

namespace lf::train {

/// Mean next-token loss on the validation windows (see validation_windows) of every stream of
/// `c`, in micro-batches of `micro_batch` windows, without autograd or dropout. `step` is copied
/// into the record.
eval_record validate(const engine::gpt2_weights& w, const lora_weights* lora, const corpus& c,
                     int context, std::size_t eval_tokens, int micro_batch, precision prec,
                     std::int64_t step);

/// "val step 200 | loss 4.1234 | shakespeare 4.5012 (16384 tok) | bible 3.8123 (16384 tok)".
std::string format_eval(const eval_record& r);

} // namespace lf::train
