#!/usr/bin/env python3
"""lorafleet's engine against llama.cpp on the same weights and threads, in turn.

Each round runs, for every type pair (ours / llama.cpp's), bench_engine (prefill of one 128-token
prompt; decode steps at 128 cached tokens for each batch size), then llama-bench (pp128, tg64) and
llama-batched-bench (128-token prompts, 32 new tokens per stream). The rounds alternate the two
engines, so a ratio is taken within a round (pair by pair) and the medians of the rounds are
reported: machines here are shared and drift.

    tools/bench/bench_vs_llama.py --model M124 --gguf-prefix /path/gpt2-124m --llama-bin /path/llama.cpp/build/bin
        [--bench-engine build/release/tools/bench/bench_engine] [--rounds 3] [--threads 2]
        [--pairs int8:q8_0,bf16:f16,f32:f32] [--batches 1,8,32,64] [--json out.json]

The GGUF files are PREFIX-q8_0.gguf, PREFIX-f16.gguf, PREFIX-f32.gguf (the same weights as the
lorafleet checkpoint M124, converted). llama.cpp is built outside this repository; LF_ISA in the
environment picks our kernel table (say so when you report).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(cmd, env=None):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"bench_vs_llama: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return out.stdout


def ours(args, dtype):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        run([args.bench_engine, "--model", args.model, "--dtype", dtype, "--quality-model", "",
             "--threads", str(args.threads), "--batches", args.batches, "--json", f.name])
        d = json.load(open(f.name))
    r = d["dtypes"][dtype]
    row = {"prompt": r["prefill"]["tokens_per_s"]}
    for b, v in r["decode"].items():
        row[b] = v["tokens_per_s"]
    return row, d


def llama(args, gguf_type):
    model = f"{args.gguf_prefix}-{gguf_type}.gguf"
    b = args.llama_bin
    t = str(args.threads)
    bench = json.loads(run([f"{b}/llama-bench", "-m", model, "-t", t, "-p", "128", "-n", "64", "-r", "3",
                            "-fa", "1", "-o", "json"]))
    row = {}
    for test in bench:
        if test["n_prompt"] == 128 and test["n_gen"] == 0:
            row["prompt"] = test["avg_ts"]
        elif test["n_gen"] == 64 and test["n_prompt"] == 0:
            row["tg64"] = test["avg_ts"]
    batched = run([f"{b}/llama-batched-bench", "-m", model, "-c", "16384", "-b", "2048", "-ub", "512",
                   "-npp", "128", "-ntg", "32", "-npl", args.batches, "-t", t, "-tb", t, "-fa", "on",
                   "--output-format", "jsonl"])
    for line in batched.splitlines():
        line = line.strip()
        if line.startswith("{"):
            v = json.loads(line)
            row[str(v["pl"])] = v["speed_tg"]
    # Batch 1 is llama-bench's tg64 (one stream, the usual figure); batched-bench's is also kept.
    row["1_batched"] = row.get("1")
    row["1"] = row.get("tg64", row.get("1"))
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--gguf-prefix", required=True)
    p.add_argument("--llama-bin", required=True)
    p.add_argument("--bench-engine", default="build/release/tools/bench/bench_engine")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pairs", default="int8:q8_0,bf16:f16,f32:f32")
    p.add_argument("--batches", default="1,8,32,64")
    p.add_argument("--json", default="")
    args = p.parse_args()
    pairs = [tuple(x.split(":")) for x in args.pairs.split(",")]
    cols = ["prompt"] + args.batches.split(",")
    results = {f"{a}:{b}": {"ours": [], "llama": [], "engine": []} for a, b in pairs}
    machine = None
    for r in range(args.rounds):
        for a, b in pairs:
            o, d = ours(args, a)
            machine = machine or {k: d[k] for k in ("cpu", "kernels", "threads", "kv_dtype")}
            machine.setdefault("read_bandwidth_gbs", []).append(d["read_bandwidth_gbs"])
            machine.setdefault("peak", []).append(d["peak"])
            l = llama(args, b)
            results[f"{a}:{b}"]["ours"].append(o)
            results[f"{a}:{b}"]["llama"].append(l)
            results[f"{a}:{b}"]["engine"].append(d["dtypes"][a])  # bench_engine's own rows (MB read, GB/s)
            print(f"round {r + 1}: {a} {o}\n         {b} {l}", file=sys.stderr, flush=True)
    print(f"cpu: {machine['cpu']}; our kernels {machine['kernels']}; {machine['threads']} threads; "
          f"our K/V {machine['kv_dtype']}; read bandwidth (median) "
          f"{statistics.median(machine['read_bandwidth_gbs']):.1f} GB/s; rounds {args.rounds}")
    print("| tokens/s (median) | " + " | ".join(c if c == "prompt" else f"batch {c}" for c in cols) + " |")
    print("| --- " * (len(cols) + 1) + "|")
    summary = {}
    for a, b in pairs:
        key = f"{a}:{b}"
        o, l = results[key]["ours"], results[key]["llama"]
        med_o = {c: statistics.median(x[c] for x in o) for c in cols}
        med_l = {c: statistics.median(x[c] for x in l if x.get(c)) for c in cols}
        ratio = {c: statistics.median(x[c] / y[c] for x, y in zip(o, l) if y.get(c)) for c in cols}
        print(f"| lorafleet {a} | " + " | ".join(f"{med_o[c]:.1f}" for c in cols) + " |")
        print(f"| llama.cpp {b} | " + " | ".join(f"{med_l[c]:.1f}" for c in cols) + " |")
        print(f"| ratio (median of rounds) | " + " | ".join(f"{ratio[c]:.2f}x" for c in cols) + " |")
        summary[key] = {"ours": med_o, "llama": med_l, "ratio": ratio, "rounds": results[key]}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "pairs": summary}, f, indent=1)


if __name__ == "__main__":
    main()
