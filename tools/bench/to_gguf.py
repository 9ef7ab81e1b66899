#!/usr/bin/env python3
"""A lorafleet (Hugging Face layout) GPT-2 checkpoint to a GGUF f32 file that llama.cpp loads.

    tools/bench/to_gguf.py --model M124 --llama-src /path/llama.cpp --out gpt2-124m-f32.gguf

Reads MODEL/config.json and MODEL/model.safetensors (F32, F16 or BF16 tensors, with or without
the "transformer." prefix) and writes the gpt2 architecture with every tensor in f32, using the
gguf-py library of the llama.cpp source tree given by --llama-src (it needs numpy only). The
tokenizer (GPT-2's byte-level BPE: tokens, merges, token types, bos/eos, model "gpt2") is copied
from that tree's models/ggml-vocab-gpt-2.gguf. The head is tied to token_embd as llama.cpp's own
converter leaves it (no output.weight, llama.cpp reuses token_embd); a checkpoint with its own
lm_head.weight gets an output.weight. HF's Conv1D weights are stored [in, out]; GGUF wants
[out, in] rows, so c_attn, c_proj and c_fc are transposed. Quantize the result with
llama-quantize (f32 -> q8_0, q4_0, ...).
"""
import argparse
import json
import os
import struct
import sys


def read_safetensors(path, np):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        data = {}
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            start, end = meta["data_offsets"]
            f.seek(base + start)
            raw = f.read(end - start)
            shape = meta["shape"]
            dt = meta["dtype"]
            if dt == "F32":
                a = np.frombuffer(raw, dtype="<f4")
            elif dt == "F16":
                a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
            elif dt == "BF16":
                a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            else:
                sys.exit(f"to_gguf: {name}: dtype {dt} is not F32, F16 or BF16")
            data[name] = a.reshape(shape).astype(np.float32)
    return data


# Each block's tensors: GGUF's name, the checkpoint's, and whether it is a Conv1D ([in, out]: its
# weight is transposed); each has a weight and a bias, written in this order.
BLOCK_TENSORS = [
    ("attn_norm", "ln_1", False),
    ("attn_qkv", "attn.c_attn", True),
    ("attn_output", "attn.c_proj", True),
    ("ffn_norm", "ln_2", False),
    ("ffn_up", "mlp.c_fc", True),
    ("ffn_down", "mlp.c_proj", True),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="checkpoint directory (config.json, model.safetensors)")
    p.add_argument("--llama-src", required=True, help="llama.cpp source tree (gguf-py, models/ggml-vocab-gpt-2.gguf)")
    p.add_argument("--out", required=True, help="GGUF file to write (f32)")
    p.add_argument("--name", default="", help="general.name (default: the directory's name)")
    args = p.parse_args()

    sys.path.insert(0, os.path.join(args.llama_src, "gguf-py"))
    import numpy as np
    import gguf

    cfg = json.load(open(os.path.join(args.model, "config.json")))
    n_layer = cfg.get("n_layer", cfg.get("num_hidden_layers"))
    n_head = cfg.get("n_head", cfg.get("num_attention_heads"))
    n_embd = cfg.get("n_embd", cfg.get("hidden_size"))
    n_ctx = cfg.get("n_positions", cfg.get("n_ctx", cfg.get("max_position_embeddings")))
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    n_inner = cfg.get("n_inner") or 4 * n_embd

    t = read_safetensors(os.path.join(args.model, "model.safetensors"), np)
    t = {(k[len("transformer."):] if k.startswith("transformer.") else k): v for k, v in t.items()}

    vocab = gguf.GGUFReader(os.path.join(args.llama_src, "models", "ggml-vocab-gpt-2.gguf"))

    def field(name):
        f = vocab.fields[name]
        return f.contents()

    tokens = field("tokenizer.ggml.tokens")
    if len(tokens) != t["wte.weight"].shape[0]:
        sys.exit(f"to_gguf: the vocabulary has {len(tokens)} tokens, wte has {t['wte.weight'].shape[0]} rows")

    w = gguf.GGUFWriter(args.out, "gpt2")
    w.add_name(args.name or os.path.basename(os.path.normpath(args.model)))
    w.add_block_count(n_layer)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_inner)
    w.add_head_count(n_head)
    w.add_layer_norm_eps(eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(field("tokenizer.ggml.pre") if "tokenizer.ggml.pre" in vocab.fields else "gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(field("tokenizer.ggml.token_type"))
    w.add_token_merges(field("tokenizer.ggml.merges"))
    for key, add in (("tokenizer.ggml.bos_token_id", w.add_bos_token_id),
                     ("tokenizer.ggml.eos_token_id", w.add_eos_token_id),
                     ("tokenizer.ggml.unknown_token_id", w.add_unk_token_id),
                     ("tokenizer.ggml.padding_token_id", w.add_pad_token_id)):
        if key in vocab.fields:
            add(int(field(key)))
    if "tokenizer.ggml.add_bos_token" in vocab.fields:
        w.add_add_bos_token(bool(field("tokenizer.ggml.add_bos_token")))

    def put(name, a):
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))

    def take(name):  # each checkpoint tensor is dropped once written: a 1.5B model is 6 GB in f32
        return t.pop(name)

    put("token_embd.weight", t["wte.weight"])
    put("position_embd.weight", take("wpe.weight"))
    for i in range(n_layer):
        for gguf, hf, conv1d in BLOCK_TENSORS:
            for part in ("weight", "bias"):
                a = take(f"h.{i}.{hf}.{part}")
                put(f"blk.{i}.{gguf}.{part}", a.T if conv1d and part == "weight" else a)
    put("output_norm.weight", take("ln_f.weight"))
    put("output_norm.bias", take("ln_f.bias"))
    if "lm_head.weight" in t and not np.array_equal(t["lm_head.weight"], t["wte.weight"]):
        put("output.weight", t["lm_head.weight"])

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"to_gguf: wrote {args.out} ({n_layer} layers, {n_head} heads, {n_embd} wide, context {n_ctx})")


if __name__ == "__main__":
    main()
