#!/usr/bin/python3
"""Cache-aware routing (issue 31, item 4): every placement policy, in turn, on a multi-turn chat
workload (shared system prompts, each turn resending the whole history) and on a workload with
nothing to share, medians of `--rounds` rounds (the policies' order rotates each round).

Each run is one self-hosted cluster (router + `--workers` workers + the ZeroMQ gateway in one
process, `lorafleet loadtest --self-host`), fresh per run, so no run inherits another's caches:

    lorafleet loadtest --self-host --workers 4 --threads 1 --policy P --workload chat \\
        --conversations C --turns T --group-size G --system S --user U --output O \\
        --rate R --think-s K --goodput-ttft-ms SLO --out DIR/P-W-rN

The no-sharing workload is the same command with --turns 1 --group-size 1 (every prompt its own
system prompt, no history) and --conversations scaled to send as many prompt tokens.

    tools/bench/bench_routing.py --rounds 3 --out /tmp/routing --svg docs/bench-routing/routing.svg

A policy may carry router flags, `+`-separated: `cache_aware+balance-abs=8+balance-rel=3` runs
cache_aware with `--balance-abs 8 --balance-rel 3` (the label in the table is the whole string).

`--via http` drives the cluster through its OpenAI HTTP gateway (/v1/chat/completions, the history
as messages) instead of the ZeroMQ one. `--config FILE` runs every point on a config-file cluster
instead (`lorafleet launch FILE`: separate processes; the file's [router] placement and the
policy's flags are replaced per run, an [http] gateway added for --via http, relative paths made
absolute), fresh per run too; the worker settings are then the file's.
"""

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

POLICIES = ["round_robin", "least_loaded", "adapter_affinity", "priced", "cache_aware"]
COLORS = {"round_robin": "#c9a", "least_loaded": "#c44", "adapter_affinity": "#48c", "priced": "#2a7",
          "cache_aware": "#e90"}


def split_policy(spec):
    """'cache_aware+balance-abs=8' -> ('cache_aware', ['--balance-abs', '8'])."""
    name, *opts = spec.split("+")
    flags = []
    for o in opts:
        k, _, v = o.partition("=")
        flags += ["--" + k, v]
    return name, flags


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_for(args, spec, tmp):
    """The --config file with this run's placement (and flags as [router] keys), an [http]
    gateway when --via http, and absolute paths; returns (path, endpoint)."""
    name, flags = split_policy(spec)
    base = os.path.dirname(os.path.abspath(args.config))
    text = open(args.config).read()
    text = re.sub(r'^(\s*(?:model_dir|adapter_dir|tokenizer_dir)\s*=\s*)"([^"]+)"',
                  lambda m: m.group(1) + json.dumps(os.path.normpath(os.path.join(base, m.group(2)))), text,
                  flags=re.M)
    keys = {"placement": json.dumps(name)}
    for k, v in zip(flags[::2], flags[1::2]):
        keys[k[2:].replace("-", "_")] = v if re.fullmatch(r"[0-9.]+", v) else json.dumps(v)
    for k, v in keys.items():
        text, n = re.subn(r"^%s\s*=.*$" % k, f"{k} = {v}", text, flags=re.M)
        if n == 0:
            text = text.replace("[router]\n", f"[router]\n{k} = {v}\n", 1)
    endpoint = re.search(r'^listen\s*=\s*"(tcp://[^"]+)"', text, flags=re.M).group(1)
    if args.via == "http":
        port = free_port()
        text += f'\n[http]\nlisten = "127.0.0.1:{port}"\n'
        endpoint = f"http://127.0.0.1:{port}"
    path = os.path.join(tmp, "cluster.toml")
    with open(path, "w") as f:
        f.write(text)
    return path, endpoint


def launched(args, spec, tmp):
    """Starts `lorafleet launch` on the run's config; returns (process, endpoint) once ready."""
    path, endpoint = config_for(args, spec, tmp)
    ready = os.path.join(tmp, "ready")
    log = open(os.path.join(tmp, "launch.log"), "w")
    p = subprocess.Popen([args.lorafleet, "launch", path, "--ready-file", ready, "--log-level", "warn"],
                         stdout=log, stderr=subprocess.STDOUT)
    t0 = time.time()
    while not os.path.exists(ready):
        if p.poll() is not None or time.time() - t0 > 180:
            p.kill()
            raise RuntimeError("launch failed, see " + log.name)
        time.sleep(0.2)
    time.sleep(0.5)
    return p, endpoint


def run(args, spec, workload, rnd):
    policy, flags = split_policy(spec)
    out = os.path.join(args.out, f"{spec}-{workload}-r{rnd}")
    chat = workload == "chat"
    launch = None
    if args.config:
        tmp = tempfile.mkdtemp(prefix="bench-routing-")
        launch, endpoint = launched(args, spec, tmp)
        target = [endpoint]
    else:
        target = ["--self-host", "--workers", str(args.workers), "--threads", str(args.threads), "--policy", policy,
                  "--via", args.via] + flags
        if args.model:
            target += ["--model", args.model]
        if args.kv_cache_mb:
            target += ["--kv-cache-mb", str(args.kv_cache_mb)]
    rate = args.rate if chat else args.rate * args.turns
    cmd = [args.lorafleet, "loadtest"] + target + ["--workload", "chat", "--quiet",
           "--conversations", str(args.conversations if chat else args.conversations * args.turns),
           "--turns", str(args.turns if chat else 1), "--group-size", str(args.group if chat else 1),
           "--system", str(args.system), "--user", str(args.user), "--output", str(args.output),
           "--rate", str(rate), "--think-s", str(args.think),
           "--goodput-ttft-ms", str(args.slo), "--seed", str(rnd + 1), "--out", out]
    if args.block_size and not args.config:
        cmd += ["--block-size", str(args.block_size)]
    if args.max_seqs and not args.config:
        cmd += ["--max-seqs", str(args.max_seqs)]
    print(" ".join(cmd), file=sys.stderr, flush=True)
    try:
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
    finally:
        if launch:
            launch.send_signal(signal.SIGTERM)
            try:
                launch.wait(60)
            except subprocess.TimeoutExpired:
                launch.kill()
                launch.wait()
    with open(out + ".json") as f:
        j = json.load(f)
    return {"ttft_p50": j["ttft_ms"]["p50"], "ttft_p99": j["ttft_ms"]["p99"], "goodput": j["goodput"],
            "out_tok_s": j["output_tokens_per_s"], "computed": j["computed_tokens"], "cached": j["cached_input_tokens"],
            "refused": j["refused_share"], "sent": j["sent"], "completed": j["completed"]}


def color(p, k):
    return COLORS.get(p, ["#777", "#a6d", "#5bb", "#db5", "#b55", "#46a"][k % 6])


def svg(med, path, policies, title=""):
    """Two panels per workload: TTFT p50 (ms) and goodput (req/s) per policy, bars = medians."""
    POLICIES = policies
    w, h, pad = max(760, 150 * len(policies) + 60), 330 if title else 300, 50
    panels = [("chat", "ttft_p50", "chat: TTFT p50 ms"), ("chat", "goodput", "chat: goodput req/s"),
              ("nosharing", "ttft_p50", "no sharing: TTFT p50 ms"), ("nosharing", "goodput", "no sharing: goodput req/s")]
    pw = (w - pad) / len(panels)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
         f'<rect width="{w}" height="{h}" fill="white"/>']
    for i, (wl, key, label) in enumerate(panels):
        x0 = pad / 2 + i * pw
        vals = [med[(p, wl)][key] for p in POLICIES]
        top = max(vals) * 1.15 or 1
        s.append(f'<text x="{x0 + pw / 2}" y="18" text-anchor="middle">{label}</text>')
        bw = (pw - 20) / len(POLICIES)
        for k, p in enumerate(POLICIES):
            v = med[(p, wl)][key]
            bh = (h - 80) * v / top
            x = x0 + 10 + k * bw
            s.append(f'<rect x="{x:.1f}" y="{h - 40 - bh:.1f}" width="{bw - 4:.1f}" height="{bh:.1f}" fill="{color(p, k)}"/>')
            s.append(f'<text x="{x + (bw - 4) / 2:.1f}" y="{h - 44 - bh:.1f}" text-anchor="middle" font-size="9">'
                     f'{v:.3g}</text>')
    for k, p in enumerate(POLICIES):
        s.append(f'<rect x="{pad / 2 + k * 150}" y="{h - 22}" width="10" height="10" fill="{color(p, k)}"/>')
        s.append(f'<text x="{pad / 2 + k * 150 + 14}" y="{h - 13}" font-size="9">{p}</text>')
    if title:
        s.append(f'<text x="{w / 2}" y="{h - 2}" text-anchor="middle" font-size="10">{title}</text>')
    s.append("</svg>")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lorafleet", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "release",
                                                        "tools", "lorafleet"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--conversations", type=int, default=24)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--system", type=int, default=96)
    ap.add_argument("--user", type=int, default=12)
    ap.add_argument("--output", type=int, default=12)
    ap.add_argument("--rate", type=float, default=2, help="conversations per second (chat)")
    ap.add_argument("--think", type=float, default=0.5)
    ap.add_argument("--slo", type=float, default=200, help="goodput: TTFT at most this (ms)")
    ap.add_argument("--model", default="", help="model folder for --self-host (default: the embedded default model)")
    ap.add_argument("--threads", type=int, default=1, help="threads per worker (--self-host)")
    ap.add_argument("--kv-cache-mb", type=int, default=0, help="K/V pool per worker (--self-host; 0: the default)")
    ap.add_argument("--block-size", type=int, default=0)
    ap.add_argument("--max-seqs", type=int, default=0)
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated; flags with + (see above)")
    ap.add_argument("--via", default="zmq", choices=["zmq", "http"])
    ap.add_argument("--config", default="", help="run on `lorafleet launch FILE` instead of --self-host")
    ap.add_argument("--svg-title", default="")
    ap.add_argument("--workloads", default="chat,nosharing")
    ap.add_argument("--out", default="/tmp/bench-routing")
    ap.add_argument("--svg", default="")
    ap.add_argument("--replot", action="store_true", help="no runs: redraw --svg from --out's summary.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    pols = args.policies.split(",")
    wls = args.workloads.split(",")
    runs = {}
    if args.replot:
        with open(os.path.join(args.out, "summary.json")) as f:
            for k, v in json.load(f).items():
                p, wl = k.rsplit("/", 1)
                runs[(p, wl)] = v["rounds"]
    for rnd in range(0 if args.replot else args.rounds):
        order = pols[rnd % len(pols):] + pols[:rnd % len(pols)]
        for wl in wls:
            for p in order:
                runs.setdefault((p, wl), []).append(run(args, p, wl, rnd))
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({f"{p}/{wl}": {"median": med[(p, wl)], "rounds": runs[(p, wl)]} for (p, wl) in runs}, f, indent=2)
    print("| workload | policy | TTFT p50 ms (rounds) | TTFT p99 ms | goodput req/s (rounds) | output tok/s | "
          "prompt tokens computed / cached | refused |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for wl in wls:
        for p in pols:
            m, rs = med[(p, wl)], runs[(p, wl)]
            ttfts = " / ".join("%.0f" % r["ttft_p50"] for r in rs)
            goods = " / ".join("%.2f" % r["goodput"] for r in rs)
            print(f"| {wl} | {p} | {m['ttft_p50']:.0f} ({ttfts}) | {m['ttft_p99']:.0f} | {m['goodput']:.2f} ({goods}) | "
                  f"{m['out_tok_s']:.0f} | {m['computed']:.0f} / {m['cached']:.0f} | {100 * m['refused']:.1f}% |")
    if args.svg and all((p, wl) in med for p in pols for wl in ("chat", "nosharing")):
        svg(med, args.svg, pols, args.svg_title)


if __name__ == "__main__":
    main()
