"""Probes as the kubelet runs them (pkg/kubelet/prober: worker.go, results; the HTTP prober).

The pure part, tested without sockets or a clock:

- `ProbeSpec.from_manifest`: the Kubernetes defaults (period 10 s, timeout 1 s, success 1,
  failure 3, no initial delay).
- `next_tick`, `probe_due`: a probe worker ticks every period from the moment the pod's worker is
  made (the first probe right away), and a tick is skipped while the container has run for fewer
  whole seconds than initialDelaySeconds. Liveness and readiness ticks are also skipped until the
  startup probe has succeeded, and the startup probe stops once it has; only readiness goes on
  while the pod terminates.
- `ProbeState.record`: a result changes the probe's verdict only after failureThreshold failures
  (successThreshold successes) in a row; readiness starts at failure (not ready), liveness at
  success, startup unknown. A liveness or startup verdict of failure means the container is
  killed and restarted.
- `stop_timeout`: the grace the runtime gives between SIGTERM and SIGKILL once the preStop hook
  has run (kuberuntime killContainer: at least 2 s, less the hook's whole seconds).

`http_get` is the prober's request (and what scrapes /metrics): GET with kube-probe's headers, a
timeout on the whole exchange, HTTPS without verifying the certificate; 200-399 is a success.
"""
import asyncio
import math
import ssl
from dataclasses import dataclass
from enum import Enum
from typing import Dict, Optional, Tuple

MIN_GRACE_S = 2
KUBE_PROBE_AGENT = "kube-probe/1.32"


class Verdict(Enum):
    unknown = "unknown"
    success = "success"
    failure = "failure"


class ProbeKind(Enum):
    startup = "startup"
    liveness = "liveness"
    readiness = "readiness"


@dataclass(frozen=True)
class ProbeSpec:
    initial_delay_s: int = 0
    period_s: int = 10
    timeout_s: int = 1
    success_threshold: int = 1
    failure_threshold: int = 3
    grace_override_s: Optional[int] = None  # probe-level terminationGracePeriodSeconds

    @staticmethod
    def from_manifest(probe: dict) -> "ProbeSpec":
        return ProbeSpec(int(probe.get("initialDelaySeconds", 0)), int(probe.get("periodSeconds", 10)),
                         int(probe.get("timeoutSeconds", 1)), int(probe.get("successThreshold", 1)),
                         int(probe.get("failureThreshold", 3)), probe.get("terminationGracePeriodSeconds"))


def next_tick(worker_start: float, period_s: int, now: float) -> float:
    """The first tick at or after now of a probe worker made at worker_start: it probes right
    away, then every period; ticks missed while a probe ran (timeout > period) are dropped."""
    if now <= worker_start:
        return worker_start
    return worker_start + math.ceil((now - worker_start) / period_s - 1e-9) * period_s


def initial_delay_passed(spec: ProbeSpec, container_start: float, now: float) -> bool:
    """The kubelet compares whole seconds: int32(time.Since(startedAt).Seconds())."""
    return int(now - container_start) >= spec.initial_delay_s


def probe_due(kind: ProbeKind, state: "ProbeState", container_start: Optional[float], now: float,
              started: bool, terminating: bool) -> bool:
    """Whether a tick probes (worker.go doProbe): the container runs, the probe is not on hold, the
    pod is not terminating (readiness goes on), the initial delay has passed, and the startup probe
    runs until the container has started while the others wait for it."""
    if container_start is None or state.on_hold:
        return False
    if terminating and kind != ProbeKind.readiness:
        return False
    if not initial_delay_passed(state.spec, container_start, now):
        return False
    return not started if kind == ProbeKind.startup else started


def initial_verdict(kind: ProbeKind) -> Verdict:
    return {ProbeKind.readiness: Verdict.failure, ProbeKind.liveness: Verdict.success,
            ProbeKind.startup: Verdict.unknown}[kind]


class ProbeState:
    """One probe of one container: its verdict and the run of equal results behind it."""

    def __init__(self, kind: ProbeKind, spec: ProbeSpec):
        self.kind = kind
        self.spec = spec
        self.verdict = initial_verdict(kind)
        self.last_result: Optional[Verdict] = None
        self.run = 0
        self.on_hold = False  # liveness/startup after a kill: nothing until the container restarts

    def record(self, ok: bool) -> Optional[Verdict]:
        """Takes one probe result; returns the new verdict when it changed."""
        result = Verdict.success if ok else Verdict.failure
        if result == self.last_result:
            self.run += 1
        else:
            self.last_result = result
            self.run = 1
        if (result == Verdict.failure and self.run < self.spec.failure_threshold) or \
                (result == Verdict.success and self.run < self.spec.success_threshold):
            return None
        changed = result != self.verdict
        self.verdict = result
        if result == Verdict.failure and self.kind != ProbeKind.readiness:
            self.on_hold = True
            self.run = 0
        return result if changed else None

    def reset(self) -> None:
        """A new container (a restart): the verdict starts over."""
        self.verdict = initial_verdict(self.kind)
        self.last_result = None
        self.run = 0
        self.on_hold = False


def stop_timeout(grace_s: int, prestop_elapsed_s: float) -> int:
    """Seconds between SIGTERM and SIGKILL after a preStop hook that ran prestop_elapsed_s."""
    grace = max(MIN_GRACE_S, grace_s)
    return max(MIN_GRACE_S, grace - int(prestop_elapsed_s))


def probe_succeeded(status: Optional[int]) -> bool:
    return status is not None and 200 <= status < 400


_NO_VERIFY = ssl.create_default_context()
_NO_VERIFY.check_hostname = False
_NO_VERIFY.verify_mode = ssl.CERT_NONE


async def http_get(host: str, port: int, path: str, *, https: bool = False, timeout: float = 1.0,
                   headers: Optional[Dict[str, str]] = None, max_body: int = 1 << 20
                   ) -> Tuple[Optional[int], bytes]:
    """(status, body), or (None, b"") when the connection failed or the timeout passed."""
    try:
        return await asyncio.wait_for(_get(host, port, path, https, headers or {}, max_body), timeout)
    except (OSError, asyncio.TimeoutError, ssl.SSLError, ValueError, asyncio.IncompleteReadError):
        return None, b""


async def _get(host, port, path, https, headers, max_body):
    reader, writer = await asyncio.open_connection(host, port, ssl=_NO_VERIFY if https else None,
                                                   server_hostname="" if https else None)
    try:
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", f"User-Agent: {KUBE_PROBE_AGENT}",
                 "Accept: */*", "Connection: close"] + [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        status_line = await reader.readline()
        parts = status_line.split()
        if len(parts) < 2 or not parts[1].isdigit():
            return None, b""
        length = None
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = await reader.readexactly(min(length, max_body)) if length is not None else \
            await reader.read(max_body)
        return int(parts[1]), body
    finally:
        writer.close()
