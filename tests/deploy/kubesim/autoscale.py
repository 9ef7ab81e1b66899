"""The autoscaling signal as the autoscaler computes it from the worker pods' /metrics.

`scale_metrics` reads the manifests' autoscaler objects: a HorizontalPodAutoscaler (autoscaling/v2;
`Pods` metrics with an AverageValue target, or `External` ones) or a KEDA ScaledObject with
prometheus triggers whose query is one aggregation of one metric (`sum(m{l="v"})`, `avg(...)`,
`max(...)`). `figure` is what the controller compares with the threshold (the per-pod average for
AverageValue targets, the whole value for Value), and `desired_replicas` the HPA's answer
(ceil(replicas x figure / threshold), unchanged within the 10% tolerance).
"""
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Sequence, Tuple

from .manifest import Manifests, ManifestError, parse_quantity

HPA_TOLERANCE = 0.1

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> List[Tuple[str, Dict[str, str], float]]:
    """(name, labels, value) of every sample of a text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = {k: v for k, v in _LABEL.findall(m.group(3) or "")}
        try:
            out.append((m.group(1), labels, float(m.group(4))))
        except ValueError:
            continue
    return out


def metric_value(samples: Sequence[Tuple[str, Dict[str, str], float]], name: str,
                 selector: Mapping[str, str]) -> float:
    """The sum of a pod's series of `name` that match `selector` (what the metrics adapter serves
    for the pod)."""
    return sum(v for n, labels, v in samples if n == name and all(labels.get(k) == x for k, x in selector.items()))


@dataclass(frozen=True)
class ScaleMetric:
    source: str            # "HorizontalPodAutoscaler/NAME" or "ScaledObject/NAME"
    metric: str
    per_pod: bool          # AverageValue: the value per replica is compared with the threshold
    threshold: float
    selector: Mapping[str, str] = field(default_factory=dict)
    aggregate: str = "sum"  # how the pods' values make the metric's value

    def value(self, pods: Sequence[float]) -> float:
        if not pods:
            return 0.0
        if self.aggregate == "avg":
            return statistics.fmean(pods)
        if self.aggregate == "max":
            return max(pods)
        return sum(pods)

    def figure(self, pods: Sequence[float]) -> float:
        """What the controller compares with the threshold."""
        if self.aggregate == "pods_average":
            return statistics.fmean(pods) if pods else 0.0
        value = self.value(pods)
        return value / max(1, len(pods)) if self.per_pod else value

    def desired_replicas(self, pods: Sequence[float], replicas: int) -> int:
        ratio = self.figure(pods) / self.threshold
        if abs(ratio - 1.0) <= HPA_TOLERANCE:
            return replicas
        return math.ceil(ratio * replicas)


@dataclass(frozen=True)
class Autoscaler:
    target: str  # the Deployment it scales
    metrics: Tuple[ScaleMetric, ...]


def _hpa(obj: dict) -> Autoscaler:
    name = f"HorizontalPodAutoscaler/{obj['metadata']['name']}"
    metrics = []
    for m in obj["spec"].get("metrics") or []:
        kind = m["type"]
        if kind == "Pods":
            target = m["pods"]["target"]
            if target.get("type") != "AverageValue":
                raise ManifestError(f"{name}: a Pods metric needs an AverageValue target")
            selector = (m["pods"]["metric"].get("selector") or {}).get("matchLabels") or {}
            metrics.append(ScaleMetric(name, m["pods"]["metric"]["name"], True,
                                       parse_quantity(target["averageValue"]), selector, "pods_average"))
        elif kind == "External":
            target = m["external"]["target"]
            per_pod = target.get("type") == "AverageValue"
            threshold = parse_quantity(target["averageValue" if per_pod else "value"])
            selector = (m["external"]["metric"].get("selector") or {}).get("matchLabels") or {}
            metrics.append(ScaleMetric(name, m["external"]["metric"]["name"], per_pod, threshold, selector))
        # Resource metrics (cpu, memory) and Object metrics are not about the queue: not evaluated.
    return Autoscaler(obj["spec"]["scaleTargetRef"]["name"], tuple(metrics))


_QUERY = re.compile(r"^\s*(sum|avg|max)\s*(?:by\s*\([^)]*\)\s*)?\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*\)\s*$")


def _scaled_object(obj: dict) -> Autoscaler:
    name = f"ScaledObject/{obj['metadata']['name']}"
    metrics = []
    for t in obj["spec"].get("triggers") or []:
        if t.get("type") != "prometheus":
            continue
        meta = t["metadata"]
        m = _QUERY.match(meta["query"])
        if not m:
            raise ManifestError(f"{name}: cannot evaluate the query {meta['query']!r} (one sum/avg/max of one metric)")
        selector = {k: v for k, v in _LABEL.findall(m.group(3) or "")}
        per_pod = t.get("metricType", "AverageValue") == "AverageValue"
        metrics.append(ScaleMetric(name, m.group(2), per_pod, float(meta["threshold"]), selector, m.group(1)))
    return Autoscaler(obj["spec"]["scaleTargetRef"]["name"], tuple(metrics))


def autoscalers(manifests: Manifests) -> List[Autoscaler]:
    return [_hpa(o) for o in manifests.of_kind("HorizontalPodAutoscaler")] + \
        [_scaled_object(o) for o in manifests.of_kind("ScaledObject")]
