"""A light metric-family representation shared by every exporter, and its renderings.

vLLM, the gateway and the prober are rendered by prometheus_client itself
(`to_metric` + `generate_latest`), so names, label order and number formatting
are the client's. dcgm-exporter is a Go program with its own template, so it
gets its own text renderer. History files use OpenMetrics with timestamps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from fleetsim.histogram import Hist

Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]  # (suffix, labels, value)


class Family:
    __slots__ = ("name", "type", "help", "samples")

    def __init__(self, name: str, type_: str, help_: str) -> None:
        self.name = name  # counters without `_total`, as prometheus_client declares them
        self.type = type_
        self.help = help_
        self.samples: list[Sample] = []

    def add(self, labels: Labels, value: float, suffix: str = "") -> None:
        self.samples.append((suffix, labels, value))

    def add_counter(self, labels: Labels, value: float, created: float | None) -> None:
        self.samples.append(("_total", labels, value))
        if created is not None:
            self.samples.append(("_created", labels, created))

    def add_histogram(
        self, labels: Labels, hist: Hist, created: float | None, *, sum_first: bool = False
    ) -> None:
        """Buckets, count, sum (then `_created`); `sum_first` mimics the multiprocess collector."""
        samples = self.samples
        if sum_first:
            samples.append(("_sum", labels, hist.sum))
        acc = 0
        for le_labels, n in zip(
            _bucket_labels(labels, tuple(hist.edges)), hist.counts, strict=True
        ):
            acc += n
            samples.append(("_bucket", le_labels, acc))
        samples.append(("_count", labels, acc))
        if not sum_first:
            samples.append(("_sum", labels, hist.sum))
        if created is not None:
            samples.append(("_created", labels, created))

    def add_summary(
        self, labels: Labels, count: float, total: float, created: float | None
    ) -> None:
        self.samples.append(("_count", labels, count))
        self.samples.append(("_sum", labels, total))
        if created is not None:
            self.samples.append(("_created", labels, created))


@lru_cache(maxsize=4096)
def _bucket_labels(labels: Labels, edges: tuple[float, ...]) -> list[Labels]:
    les = [floatToGoString(e) for e in edges] + ["+Inf"]
    return [(*labels, ("le", le)) for le in les]


def to_metric(family: Family) -> Metric:
    metric = Metric(family.name, family.help, family.type)
    for suffix, labels, value in family.samples:
        metric.add_sample(family.name + suffix, dict(labels), value)
    return metric


class FamiliesCollector(Collector):
    """Hands freshly built families to prometheus_client on every scrape."""

    def __init__(self, build: Callable[[], Iterable[Family]]) -> None:
        self._build = build

    def collect(self) -> Iterator[Metric]:
        for family in self._build():
            yield to_metric(family)


def render_go_style(families: Iterable[Family]) -> str:
    """Text format as dcgm-exporter writes it: labels in template order, integers bare."""
    out: list[str] = []
    for fam in families:
        out.append(f"# HELP {fam.name} {fam.help}\n# TYPE {fam.name} {fam.type}\n")
        for suffix, labels, value in fam.samples:
            inner = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
            out.append(f"{fam.name}{suffix}{{{inner}}} {format_value(value)}\n")
    return "".join(out)


def format_value(value: float) -> str:
    """Integers bare, floats in Python's shortest round-trip form (valid in both formats)."""
    if type(value) is int:
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
