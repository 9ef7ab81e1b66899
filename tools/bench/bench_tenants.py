#!/usr/bin/python3
"""Tenants and deadlines, measured in turn (A B A B ...) with `lorafleet loadtest --self-host`.

1. Fairness: four tenants, a sending 10x the load of b, c and d (closed loops, all backlogged:
   more clients than their fair share of the batch slots), under --scheduling fcfs and vtc in turn.
   Per run: each tenant's share of the service, the largest service gap, Jain's index, output
   tokens/s; the vtc / fcfs throughput ratio of each pair.
2. Deadlines: capacity measured by a closed loop, then Poisson arrivals at --overload x that rate
   with --deadline-ms on every request, with deadline-aware admission off and on in turn. Per run:
   goodput (requests done within the deadline per second), the share of computed tokens spent on
   requests that timed out anyway, the errors.

Prints every run and the medians, and writes OUT/summary.json, OUT/fairness.svg (the service
shares), OUT/deadlines-goodput.svg and OUT/deadlines-waste.svg, and keeps the last pair's
per-tenant service pictures (OUT/service-fcfs.svg, OUT/service-vtc.svg).

    tools/bench/bench_tenants.py --lorafleet build/release/tools/lorafleet --model /tmp/m124 \
        --rounds 3 --out docs/bench-tenants
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def loadtest(args, extra, out):
    cmd = [args.lorafleet, "loadtest", "--self-host", "--model", args.model, "--workers", "1",
           "--threads", str(args.threads), "--max-seqs", str(args.slots), "--max-inflight-per-worker",
           str(args.slots), "--quiet", "--out", out] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out + ".json") as f:
        j = json.load(f)
    return j, j["points"][0]


def bars_svg(title, groups, ylabel):
    """groups: [(label, [(name, value, color)])] -> a small SVG bar chart."""
    width, height, left, top, bottom = 720, 360, 70, 40, 300
    vmax = max((v for _, bs in groups for _, v, _ in bs), default=1) or 1
    slot = (width - left - 20) / max(1, len(groups))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<text x="16" y="{(top + bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 {(top + bottom) / 2})">{ylabel}</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{width - 20}" y2="{bottom}" stroke="black"/>']
    for k in range(5):
        y = bottom - (bottom - top) * k / 4
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{vmax * k / 4:.3g}</text>')
    for g, (label, bs) in enumerate(groups):
        x0 = left + g * slot + 10
        w = (slot - 20) / max(1, len(bs))
        for b, (name, v, color) in enumerate(bs):
            h = (bottom - top) * v / vmax
            x = x0 + b * w
            out.append(f'<rect x="{x:.1f}" y="{bottom - h:.1f}" width="{w - 4:.1f}" height="{h:.1f}" fill="{color}"/>'
                       f'<text x="{x + (w - 4) / 2:.1f}" y="{bottom - h - 4:.1f}" text-anchor="middle">{v:.3g}</text>'
                       f'<text x="{x + (w - 4) / 2:.1f}" y="{bottom + 14}" text-anchor="middle">{name}</text>')
        out.append(f'<text x="{x0 + (slot - 20) / 2:.1f}" y="{bottom + 32}" text-anchor="middle" font-weight="bold">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorafleet", default="build/release/tools/lorafleet")
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--slots", type=int, default=16, help="max_seqs = max_inflight_per_worker")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--input", default="64")
    ap.add_argument("--output", default="64")
    ap.add_argument("--concurrency", type=int, default=104, help="closed-loop clients, split 10:1:1:1")
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--overload", type=float, default=2.0)
    ap.add_argument("--deadline-ms", type=int, default=2000)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    lengths = ["--input", args.input, "--output", args.output]
    fair = {"fcfs": [], "vtc": []}
    ratios = []
    dead = {"off": [], "on": []}
    for r in range(args.rounds):
        order = ["fcfs", "vtc"] if r % 2 == 0 else ["vtc", "fcfs"]
        got = {}
        for s in order:
            _, p = loadtest(args, ["--scheduling", s, "--tenants", "a:10,b:1,c:1,d:1", "--concurrency",
                                   str(args.concurrency), "--requests", "1000000", "--duration",
                                   str(args.duration)] + lengths, f"{tmp}/fair-{s}")
            f = p["fairness"]
            total = sum(t["service"] for t in f["tenants"]) or 1
            got[s] = {"jain": f["jain"], "max_gap": f["max_gap"], "out_tok_s": p["output_tokens_per_s"],
                      "shares": {t["name"]: t["service"] / total for t in f["tenants"]},
                      "window_s": f["window_end_s"] - f["window_start_s"]}
            fair[s].append(got[s])
            shutil.copy(f"{tmp}/fair-{s}-tenants.svg", f"{args.out}/service-{s}.svg")
            print(f"round {r + 1} {s}: Jain {f['jain']:.3f}, gap {f['max_gap']:.0f}, "
                  f"out tok/s {p['output_tokens_per_s']:.1f}, shares "
                  + " ".join(f"{k} {v:.3f}" for k, v in got[s]["shares"].items()), flush=True)
        ratios.append(got["vtc"]["out_tok_s"] / got["fcfs"]["out_tok_s"])
        _, cap = loadtest(args, ["--concurrency", str(2 * args.slots), "--requests", "1000000", "--duration",
                                 str(args.duration / 2)] + lengths, f"{tmp}/capacity")
        rate = args.overload * cap["request_throughput"]
        for d in (["off", "on"] if r % 2 == 0 else ["on", "off"]):
            _, p = loadtest(args, ["--deadline-admission", d, "--arrival", "poisson", "--rate", f"{rate:.2f}",
                                   "--requests", "1000000", "--duration", str(args.duration), "--deadline-ms",
                                   str(args.deadline_ms)] + lengths, f"{tmp}/deadline-{d}")
            row = {"capacity_req_s": cap["request_throughput"], "rate": rate, "goodput": p["goodput"],
                   "wasted_share": p["waste"]["wasted_share"], "errors": p["errors"], "sent": p["sent"],
                   "completed": p["completed"]}
            dead[d].append(row)
            print(f"round {r + 1} deadline admission {d}: capacity {cap['request_throughput']:.2f} req/s, "
                  f"rate {rate:.2f}/s, goodput {p['goodput']:.2f}/s, wasted {p['waste']['wasted_share']:.3f}, "
                  f"errors {p['errors']}", flush=True)
    med = statistics.median
    summary = {
        "command": " ".join(sys.argv),
        "fairness": {s: {"jain": med(x["jain"] for x in v), "max_gap": med(x["max_gap"] for x in v),
                         "out_tok_s": med(x["out_tok_s"] for x in v),
                         "shares": {t: med(x["shares"][t] for x in v) for t in "abcd"}, "runs": v}
                     for s, v in fair.items()},
        "throughput_ratio_vtc_fcfs": {"median": med(ratios), "runs": ratios},
        "deadlines": {d: {"goodput": med(x["goodput"] for x in v), "wasted_share": med(x["wasted_share"] for x in v),
                          "runs": v} for d, v in dead.items()},
        "goodput_ratio_on_off": med(on["goodput"] / max(off["goodput"], 1e-9) for on, off in zip(dead["on"], dead["off"])),
    }
    with open(f"{args.out}/summary.json", "w") as f:
        json.dump(summary, f, indent=2)
    colors = {"a": "#1f77b4", "b": "#d62728", "c": "#2ca02c", "d": "#ff7f0e"}
    with open(f"{args.out}/fairness.svg", "w") as f:
        f.write(bars_svg("share of the service, a at 10x the load of b, c, d (medians)",
                         [(s, [(t, summary["fairness"][s]["shares"][t], colors[t]) for t in "abcd"]) for s in ("fcfs", "vtc")],
                         "share of weighted tokens"))
    pair = (("off", "#7f7f7f"), ("on", "#1f77b4"))
    with open(f"{args.out}/deadlines-goodput.svg", "w") as f:
        f.write(bars_svg(f"goodput at {args.overload}x capacity, deadline {args.deadline_ms} ms (medians)",
                         [("deadline-aware admission", [(d, summary["deadlines"][d]["goodput"], c) for d, c in pair])],
                         "requests done within the deadline per s"))
    with open(f"{args.out}/deadlines-waste.svg", "w") as f:
        f.write(bars_svg(f"tokens spent on requests that timed out, {args.overload}x capacity (medians)",
                         [("deadline-aware admission", [(d, 100 * summary["deadlines"][d]["wasted_share"], c) for d, c in pair])],
                         "% of the tokens computed"))
    print(json.dumps({k: v for k, v in summary.items() if k != "command"}, indent=1, default=str)[:3000])
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
