#!/usr/bin/env python3
"""Draws bench_spec's --json outputs as one SVG: per run (a label=file pair), the output tok/s of
each speculation mode relative to `off`, by stream count.

    tools/bench/bench_spec_svg.py OUT.svg "124M int8 grounded=a.json" "124M f32 grounded=b.json" ...
"""
import json
import sys

COLORS = {"off": "#999999", "on": "#1f77b4", "auto": "#ff7f0e"}


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    out, pairs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    runs = [(label, json.load(open(path))) for label, path in pairs]
    panel_w, h, top, bottom = 230, 300, 40, 50
    w = panel_w * len(runs) + 60
    ymax = max(max(r["ratio"] for r in rows) for _, rows in runs)
    ymax = max(2.0, round(ymax + 0.25, 1))
    y = lambda v: top + (h - top - bottom) * (1 - v / ymax)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
         f'<text x="{w / 2}" y="16" text-anchor="middle" font-size="13">speculative decoding (n-gram): '
         f'output tok/s relative to off, by streams</text>']
    for v in [0.5 * k for k in range(int(ymax / 0.5) + 1)]:
        s.append(f'<line x1="40" x2="{w - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        s.append(f'<text x="35" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}x</text>')
    s.append(f'<line x1="40" x2="{w - 10}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="#666" stroke-dasharray="3,3"/>')
    for p, (label, rows) in enumerate(runs):
        x0 = 50 + p * panel_w
        s.append(f'<text x="{x0 + panel_w / 2 - 10}" y="{h - 10}" text-anchor="middle">{label}</text>')
        streams = sorted({r["streams"] for r in rows})
        modes = [m for m in ("off", "on", "auto") if any(r["mode"] == m for r in rows)]
        gw = (panel_w - 30) / len(streams)
        bw = gw / (len(modes) + 1)
        for i, n in enumerate(streams):
            s.append(f'<text x="{x0 + i * gw + gw / 2 - bw / 2:.1f}" y="{h - 30}" text-anchor="middle">{n}</text>')
            for j, m in enumerate(modes):
                r = next((r for r in rows if r["streams"] == n and r["mode"] == m), None)
                if r is None:
                    continue
                bx = x0 + i * gw + j * bw
                s.append(f'<rect x="{bx:.1f}" y="{y(r["ratio"]):.1f}" width="{bw - 1:.1f}" '
                         f'height="{y(0) - y(r["ratio"]):.1f}" fill="{COLORS[m]}"/>')
                s.append(f'<text x="{bx + bw / 2:.1f}" y="{y(r["ratio"]) - 3:.1f}" text-anchor="middle" '
                         f'font-size="9">{r["ratio"]:.2f}</text>')
    for j, m in enumerate(("off", "on", "auto")):
        s.append(f'<rect x="{w - 170 + j * 55}" y="24" width="10" height="10" fill="{COLORS[m]}"/>')
        s.append(f'<text x="{w - 157 + j * 55}" y="33">{m}</text>')
    s.append("</svg>")
    open(out, "w").write("\n".join(s) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
