#!/usr/bin/env python3
"""Two builds or kernel tables of the engine against each other, in turn, with bench_engine.

Each side is a bench_engine binary and an LF_ISA value (empty: the CPU's own table). Every round
runs A then B for each dtype (the order flips on odd rounds), so a ratio is taken within a round
and the medians of the rounds are reported: machines here are shared and drift.

    tools/bench/bench_engine_ab.py --model M124 --a build/release/tools/bench/bench_engine --a-isa avx2 \\
        --b build/release/tools/bench/bench_engine --b-isa "" [--dtypes int8,bf16,f32] [--rounds 3] \\
        [--threads 2] [--batches 1,8,32,64] [--json out.json]

The table printed is A's and B's tokens/s (median of rounds) per column (a 128-token prompt's
prefill, then decode steps at each batch size with 128 cached tokens) and B/A, the median of the
per-round ratios, with the rounds' ratios in brackets.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bench(binary, isa, args, dtype):
    env = dict(os.environ)
    env.pop("LF_ISA", None)
    if isa:
        env["LF_ISA"] = isa
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [binary, "--model", args.model, "--dtype", dtype, "--quality-model", "",
               "--threads", str(args.threads), "--batches", args.batches, "--json", f.name]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if out.returncode != 0:
            sys.exit(f"bench_engine_ab: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
        d = json.load(open(f.name))
    r = d["dtypes"][dtype]
    row = {"prompt": r["prefill"]["tokens_per_s"]}
    for b, v in r["decode"].items():
        row[b] = v["tokens_per_s"]
    return row, d.get("kernels", "?")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--a", required=True, help="bench_engine binary of side A")
    p.add_argument("--a-isa", default="", help="LF_ISA for side A (empty: the CPU's own table)")
    p.add_argument("--b", required=True, help="bench_engine binary of side B")
    p.add_argument("--b-isa", default="", help="LF_ISA for side B")
    p.add_argument("--dtypes", default="int8,bf16,f32")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batches", default="1,8,32,64")
    p.add_argument("--json", default="")
    args = p.parse_args()
    cols = ["prompt"] + args.batches.split(",")
    sides = {"A": (args.a, args.a_isa), "B": (args.b, args.b_isa)}
    runs = {dt: {"A": [], "B": []} for dt in args.dtypes.split(",")}
    tables = {}
    for r in range(args.rounds):
        for dt in runs:
            for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
                row, table = bench(*sides[side], args, dt)
                tables[side] = table
                runs[dt][side].append(row)
                print(f"round {r + 1} {dt} {side} ({table}): " +
                      " ".join(f"{c}={row[c]:.1f}" for c in cols), file=sys.stderr, flush=True)
    print(f"A: {args.a} ({tables['A']}); B: {args.b} ({tables['B']}); {args.threads} threads; "
          f"rounds {args.rounds}")
    print("| tokens/s (median) | " + " | ".join(c if c == "prompt" else f"batch {c}" for c in cols) + " |")
    print("| --- " * (len(cols) + 1) + "|")
    summary = {}
    for dt, v in runs.items():
        med = {s: {c: statistics.median(x[c] for x in v[s]) for c in cols} for s in ("A", "B")}
        per = {c: [b[c] / a[c] for a, b in zip(v["A"], v["B"])] for c in cols}
        for s in ("A", "B"):
            print(f"| {dt} {s} | " + " | ".join(f"{med[s][c]:.1f}" for c in cols) + " |")
        print(f"| {dt} B/A | " + " | ".join(
            f"{statistics.median(per[c]):.2f}x [{' '.join(f'{x:.2f}' for x in per[c])}]" for c in cols) + " |")
        summary[dt] = {"median": med, "ratios": per, "rounds": v}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tables": tables, "dtypes": summary}, f, indent=1)


if __name__ == "__main__":
    main()
