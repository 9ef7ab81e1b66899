"""The autoscaling signal as the autoscaler computes it from the worker pods' /metrics.

`autoscalers` reads the manifests' autoscaler objects: a HorizontalPodAutoscaler (autoscaling/v2;
`Pods` metrics with an AverageValue target; `External` ones read as the sum of the pods' series)
or a KEDA ScaledObject with prometheus triggers whose query is a sum of aggregations of one metric
each (`sum(m{l="v", pod=~"w-.*"}) + sum(n)`; `sum`, `avg`, `max`; matchers =, !=, =~, !~, where
`pod` and `namespace` are the scraped pod's, as Prometheus labels its targets). `figure` is what
the controller compares with the threshold (the per-pod average for AverageValue targets, the
whole value for Value), and `desired_replicas` the HPA's answer (ceil(replicas x figure /
threshold), unchanged within the 10% tolerance).
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
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_TERM = re.compile(r"\s*(sum|avg|max)\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*\)\s*")

Samples = List[Tuple[str, Dict[str, str], float]]


def parse_prometheus(text: str) -> Samples:
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


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str

    def ok(self, labels: Mapping[str, str]) -> bool:
        v = labels.get(self.label, "")
        if self.op in ("=~", "!~"):
            return bool(re.fullmatch(self.value, v)) == (self.op == "=~")
        return (v == self.value) == (self.op == "=")


def parse_matchers(text: str) -> Tuple[Matcher, ...]:
    return tuple(Matcher(*m) for m in _MATCHER.findall(text or ""))


@dataclass(frozen=True)
class Scrape:
    """One pod's /metrics, with the target labels Prometheus would add."""
    pod: str
    namespace: str
    samples: Samples

    def series(self, metric: str, matchers: Sequence[Matcher]) -> List[float]:
        target = {"pod": self.pod, "namespace": self.namespace}
        return [v for n, labels, v in self.samples
                if n == metric and all(m.ok({**labels, **target}) for m in matchers)]


@dataclass(frozen=True)
class Term:
    """aggregate(metric{matchers}) over every series of every pod."""
    aggregate: str
    metric: str
    matchers: Tuple[Matcher, ...] = ()

    def value(self, scrapes: Sequence[Scrape]) -> float:
        values = [v for s in scrapes for v in s.series(self.metric, self.matchers)]
        if not values:
            return 0.0
        return {"sum": sum, "avg": statistics.fmean, "max": max}[self.aggregate](values)


def parse_query(query: str) -> Tuple[Term, ...]:
    """A sum of aggregations (`sum(a{x="y"}) + avg(b)`), or ManifestError."""
    terms = []
    for part in query.split("+"):
        m = _TERM.fullmatch(part)
        if not m:
            raise ManifestError(f"cannot evaluate the query {query!r} (sums of sum/avg/max of one metric each)")
        terms.append(Term(m.group(1), m.group(2), parse_matchers(m.group(3))))
    return tuple(terms)


@dataclass(frozen=True)
class ScaleMetric:
    source: str            # "HorizontalPodAutoscaler/NAME" or "ScaledObject/NAME"
    name: str              # the metric's name, or the trigger's
    per_pod: bool          # AverageValue: the value per replica is compared with the threshold
    threshold: float
    terms: Tuple[Term, ...]
    pods_metric: bool = False  # an HPA Pods metric: the average of each pod's value

    @property
    def compared(self) -> str:
        """How the pods' values make the figure, in words."""
        return "average over pods" if self.pods_metric else "total / replicas" if self.per_pod else "total"

    @property
    def metrics(self) -> frozenset:
        return frozenset(t.metric for t in self.terms)

    def figure(self, scrapes: Sequence[Scrape]) -> float:
        """What the controller compares with the threshold."""
        if not scrapes:
            return 0.0
        if self.pods_metric:
            return statistics.fmean(sum(t.value([s]) for t in self.terms) for s in scrapes)
        value = sum(t.value(scrapes) for t in self.terms)
        return value / len(scrapes) if self.per_pod else value

    def desired_replicas(self, scrapes: Sequence[Scrape], replicas: int) -> int:
        ratio = self.figure(scrapes) / self.threshold
        if abs(ratio - 1.0) <= HPA_TOLERANCE:
            return replicas
        return math.ceil(ratio * replicas)


@dataclass(frozen=True)
class Autoscaler:
    target: str  # the Deployment it scales
    metrics: Tuple[ScaleMetric, ...] = field(default_factory=tuple)


def _selector(metric: dict) -> Tuple[Matcher, ...]:
    labels = (metric.get("selector") or {}).get("matchLabels") or {}
    return tuple(Matcher(k, "=", v) for k, v in labels.items())


def _hpa(obj: dict) -> Autoscaler:
    name = f"HorizontalPodAutoscaler/{obj['metadata']['name']}"
    metrics = []
    for m in obj["spec"].get("metrics") or []:
        if m["type"] == "Pods":
            target = m["pods"]["target"]
            if target.get("type") != "AverageValue":
                raise ManifestError(f"{name}: a Pods metric needs an AverageValue target")
            metric = m["pods"]["metric"]
            metrics.append(ScaleMetric(name, metric["name"], True, parse_quantity(target["averageValue"]),
                                       (Term("sum", metric["name"], _selector(metric)),), pods_metric=True))
        elif m["type"] == "External":
            target = m["external"]["target"]
            per_pod = target.get("type") == "AverageValue"
            metric = m["external"]["metric"]
            metrics.append(ScaleMetric(name, metric["name"], per_pod,
                                       parse_quantity(target["averageValue" if per_pod else "value"]),
                                       (Term("sum", metric["name"], _selector(metric)),)))
        # Resource metrics (cpu, memory) and Object metrics are not about the queue: not evaluated.
    return Autoscaler(obj["spec"]["scaleTargetRef"]["name"], tuple(metrics))


def _scaled_object(obj: dict) -> Autoscaler:
    name = f"ScaledObject/{obj['metadata']['name']}"
    metrics = []
    for t in obj["spec"].get("triggers") or []:
        if t.get("type") != "prometheus":
            continue
        meta = t["metadata"]
        per_pod = t.get("metricType", "AverageValue") == "AverageValue"
        metrics.append(ScaleMetric(name, t.get("name") or meta["query"], per_pod, float(meta["threshold"]),
                                   parse_query(meta["query"])))
    return Autoscaler(obj["spec"]["scaleTargetRef"]["name"], tuple(metrics))


def autoscalers(manifests: Manifests) -> List[Autoscaler]:
    return [_hpa(o) for o in manifests.of_kind("HorizontalPodAutoscaler")] + \
        [_scaled_object(o) for o in manifests.of_kind("ScaledObject")]
