"""The test's verdicts (pure functions over what the run recorded) and its tables.

Each check returns a list of violations, one line each, grouped by kind with a few examples, so
a failing run says what went wrong without reading the logs first.
"""
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

EXAMPLES = 4


def _grouped(found: Dict[str, List[str]]) -> List[str]:
    return [f"{kind}: {len(items)} (e.g. {'; '.join(items[:EXAMPLES])})" for kind, items in found.items() if items]


def check_replies(records: Sequence[dict]) -> List[str]:
    """Every request ended with exactly one terminal reply, `done`, and nothing after it; one
    `accepted` before its tokens; token indices 0, 1, 2, ... without a gap or a repeat."""
    found: Dict[str, List[str]] = defaultdict(list)
    for r in records:
        rid = f"request {r['i']}"
        if r["terminal"] is None:
            kind = "lost (accepted, never finished)" if r["accepted"] else "no reply at all"
            found[kind].append(f"{rid} after {len(r['tokens'])} tokens")
            continue
        if r["terminal"] != "done":
            found[f"ended with {r['terminal']}"].append(f"{rid}: {r['code']} {r['message']}".strip())
        if r["after_terminal"]:
            found["frames after the terminal reply"].append(f"{rid}: {r['after_terminal']}")
        if r["accepted"] > 1 or (r["terminal"] == "done" and r["accepted"] != 1):
            found["accepted not exactly once"].append(f"{rid}: {r['accepted']}")
        indices = [t[0] for t in r["tokens"]]
        if indices != list(range(len(indices))):
            found["token indices not 0, 1, 2, ..."].append(f"{rid}: {indices[:12]}")
    return _grouped(found)


def check_replay(replay: dict) -> List[str]:
    out = []
    for d in replay["differences"][:EXAMPLES]:
        out.append(f"request {d['i']} (moved {d['resumed']} times) differs from its calm replay at token "
                   f"{d['first_difference']} (calm: {d['calm_terminal']} {d['calm_code']}):\n"
                   f"      under load: {d['under_load']!r}\n      calm:       {d['calm']!r}")
    if len(replay["differences"]) > EXAMPLES:
        out.append(f"... {len(replay['differences'])} requests differ in all")
    return out


@dataclass
class StopView:
    """One container's stop, as the checks need it."""
    pod: str
    reason: str
    grace_s: int
    rc: Optional[int]
    sigkilled: bool
    exit_after_s: Optional[float]
    said_not_ready: bool
    ready_again: bool
    ready_codes: Sequence[Optional[int]]


def check_stops(stops: Iterable[StopView]) -> List[str]:
    """A deleted worker said 503 on /ready before it exited, never 200 after that, and exited 0 on
    its own within its grace period."""
    found: Dict[str, List[str]] = defaultdict(list)
    for s in stops:
        if not s.said_not_ready:
            found["no 503 on /ready before exiting"].append(f"{s.pod} ({s.reason}; saw {compress(s.ready_codes)})")
        if s.ready_again:
            found["/ready said 200 again after 503"].append(f"{s.pod} (saw {compress(s.ready_codes)})")
        if s.sigkilled or s.rc != 0:
            found["did not exit 0 on SIGTERM"].append(f"{s.pod} ({s.reason}): rc {s.rc}, sigkilled {s.sigkilled}")
        elif s.exit_after_s is None or s.exit_after_s > s.grace_s:
            found["exited after its grace period"].append(f"{s.pod}: {s.exit_after_s} s > {s.grace_s} s")
    return _grouped(found)


def check_restarts(restarts: Dict[str, Sequence[str]]) -> List[str]:
    return [f"pod {pod} restarted {len(causes)} times: {', '.join(causes)}"
            for pod, causes in restarts.items() if causes]


def compress(codes: Sequence[Optional[int]]) -> str:
    """[200, 200, 503, None, None] -> '200 x2, 503, refused x2'."""
    out: List[List] = []
    for c in codes:
        label = "refused" if c is None else str(c)
        if out and out[-1][0] == label:
            out[-1][1] += 1
        else:
            out.append([label, 1])
    return ", ".join(f"{label} x{n}" if n > 1 else label for label, n in out) or "nothing"


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    rows = [[_cell(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _cell(c: object) -> str:
    if c is None:
        return "-"
    if isinstance(c, float):
        return f"{c:.2f}"
    return str(c)
