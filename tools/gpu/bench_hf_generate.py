#!/usr/bin/env python3
"""Hugging Face `generate` on a GPU, the baseline for bench_cuda's serve figures: B prompts of 128
random tokens at once, 128 new tokens each (min_new_tokens forces all 128), greedy, f32, no TF32.

    bench_hf_generate.py --model DIR [--batches 64,256] [--new 128]

Prints output tokens/s per batch (the median of 3 timed runs after one warm-up).
"""
import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    a = ap.parse_args()
    from transformers import GPT2LMHeadModel
    torch.backends.cuda.matmul.allow_tf32 = False
    model = GPT2LMHeadModel.from_pretrained(a.model, dtype=torch.float32).cuda().eval()
    print(f"hf generate: {torch.cuda.get_device_name(0)}, f32, attention {model.config._attn_implementation}")
    g = torch.Generator().manual_seed(4)
    for b in [int(x) for x in a.batches.split(",")]:
        ids = torch.randint(0, 50000, (b, a.prompt), generator=g).cuda()
        mask = torch.ones_like(ids)
        kw = dict(attention_mask=mask, max_new_tokens=a.new, min_new_tokens=a.new, do_sample=False,
                  pad_token_id=model.config.eos_token_id)
        with torch.no_grad():
            model.generate(ids, **kw)  # warm-up
            times = []
            for _ in range(3):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = model.generate(ids, **kw)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                assert out.shape[1] == a.prompt + a.new
        t = statistics.median(times)
        print(f"  batch {b}: {b * a.new / t:.1f} output tok/s ({t:.2f} s for {b} x {a.new} tokens)")


if __name__ == "__main__":
    main()
