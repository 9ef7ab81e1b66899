#!/usr/bin/env python3
"""The CUDA engine against Hugging Face transformers and PEFT, where they are installed.

Writes a GPT-2-124M-shaped GPT2LMHeadModel (random, seeded) with save_pretrained, a PEFT LoRA
adapter on it (random A and B, c_attn, both c_proj and c_fc), then compares the last position's
logits of several prompts (1 to 1000 tokens) from `cuda_logits` (GPU engine; it also prints its
difference from the CPU engine's f32 path) with GPT2LMHeadModel's and the PeftModel's.

    check_cuda_vs_hf.py --bin BUILD/tools/cuda_logits --work DIR [--tol 1e-4]

Exit 0 when every difference is within --tol, 1 otherwise.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch


def hf_logits(model, prompts, device):
    out = []
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([p], device=device)
            out.append(model(input_ids=ids).logits[0, -1].float().cpu().numpy())
    return np.stack(out)


def ours(binary, model_dir, prompts_file, out_file, adapter=None):
    cmd = [binary, "--model", model_dir, "--prompts", prompts_file, "--out", out_file]
    if adapter:
        cmd += ["--adapter", adapter]
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode != 0:
        print(r.stderr.strip())
        sys.exit(f"{binary} failed ({r.returncode})")
    return np.fromfile(out_file, dtype=np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel
    from peft import LoraConfig, get_peft_model
    import transformers
    import peft
    print(f"transformers {transformers.__version__}, peft {peft.__version__}, torch {torch.__version__}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    os.makedirs(a.work, exist_ok=True)
    model_dir = os.path.join(a.work, "model")
    adapter_dir = os.path.join(a.work, "adapter")
    torch.manual_seed(1)
    base = GPT2LMHeadModel(GPT2Config()).eval()
    base.save_pretrained(model_dir, safe_serialization=True)
    rng = np.random.default_rng(2)
    prompts = [[int(x) for x in rng.integers(0, 50257, n)] for n in (1, 7, 64, 200, 1000)]
    prompts_file = os.path.join(a.work, "prompts.txt")
    with open(prompts_file, "w") as f:
        for p in prompts:
            f.write(" ".join(map(str, p)) + "\n")
    V = base.config.vocab_size
    ok = True

    def report(name, ref, got):
        nonlocal ok
        got = got.reshape(len(prompts), V)
        worst = 0.0
        for i, p in enumerate(prompts):
            d = float(np.max(np.abs(ref[i] - got[i])))
            same = int(np.argmax(ref[i])) == int(np.argmax(got[i]))
            print(f"  {name} prompt {i} ({len(p)} tokens): largest |ours - hf| {d:.3g}, argmax equal {same}")
            worst = max(worst, d)
        verdict = "within" if worst <= a.tol else "OVER"
        print(f"{name}: largest difference {worst:.3g} ({verdict} {a.tol})")
        ok = ok and worst <= a.tol

    ref = hf_logits(base.to(device), prompts, device)
    report("base (GPT2LMHeadModel)", ref, ours(a.bin, model_dir, prompts_file, os.path.join(a.work, "base.f32")))
    cfg = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj", "c_fc"], init_lora_weights=False,
                     fan_in_fan_out=True, lora_dropout=0.0)
    torch.manual_seed(3)
    # init_lora_weights=False draws B as PEFT draws A (not zeros), so the adapter changes the output.
    pm = get_peft_model(GPT2LMHeadModel.from_pretrained(model_dir), cfg).eval()
    pm.save_pretrained(adapter_dir)
    ref_a = hf_logits(pm.to(device), prompts, device)
    print(f"the adapter moves the logits by up to {float(np.max(np.abs(ref_a - ref))):.3g}")
    report("adapter (PeftModel)", ref_a,
           ours(a.bin, model_dir, prompts_file, os.path.join(a.work, "adapter.f32"), adapter_dir))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
