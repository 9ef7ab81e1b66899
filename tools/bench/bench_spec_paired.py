#!/usr/bin/env python3
# bench_spec_paired: per-round ratios to `off` from bench_spec --json files (in each round the modes
# run in turn, so a mode divided by the same round's off is steadier on a shared machine than a ratio of
# medians), and their median. Usage: bench_spec_paired.py FILE.json...
import json, sys, statistics
for f in sys.argv[1:]:
    rows = json.load(open(f))
    print("==", f)
    by = {}
    for r in rows:
        by.setdefault(r["streams"], {})[r["mode"]] = r
    for s, modes in sorted(by.items()):
        off = modes["off"]["runs"]
        line = f"streams {s:2d} off {statistics.median(off):7.1f}"
        for m, r in modes.items():
            if m == "off": continue
            ratios = [a / b for a, b in zip(r["runs"], off)]
            line += f" | {m} x{statistics.median(ratios):.2f} (rounds {' '.join(f'{x:.2f}' for x in ratios)}) acc {r['acceptance']:.2f} tok/row {r['tokens_per_row']:.2f} draft {r.get('draft_time_share',0):.2f}"
        print(line)
