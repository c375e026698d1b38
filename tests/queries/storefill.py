"""Hand-made scrapes written into the embedded store through its face, for exact backend
tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from inventory.exposition import Family
from inventory.exposition import Sample as ParsedSample
from inventory.models import Endpoint, EndpointInventory, Fleet
from inventory.store import FrameWrite, LayoutMemo, frame_encode, frames_write

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
Sample = tuple[str, Mapping[str, str], float]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fleet_named(slug: str = "hand-made") -> Fleet:
    return Fleet.objects.create(slug=slug, name=slug)


def _family(sample_name: str, types: Mapping[str, str]) -> str:
    for suffix in ("_bucket", "_count", "_sum"):
        base = sample_name.removesuffix(suffix)
        if base != sample_name and types.get(base) == "histogram":
            return base
    if sample_name.endswith("_total") and types.get(sample_name.removesuffix("_total")):
        return sample_name.removesuffix("_total")
    return sample_name


def endpoint_with_scrapes(
    fleet: Fleet,
    instance: str,
    scrapes: Sequence[tuple[float, Sequence[Sample]]],
    *,
    types: Mapping[str, str],
    kind: str = "engine",
) -> Endpoint:
    """An endpoint whose store holds `scrapes` ((seconds after T0, samples) each), and an
    inventory made from them; `types` maps family names (counters without _total) to types."""
    endpoint = Endpoint.objects.create(fleet=fleet, url=f"http://{instance}/metrics")
    memo = LayoutMemo()
    series_set_id = None
    families: dict[str, dict] = {}
    for offset, samples in scrapes:
        # One untyped family holds the scrape: the frame keeps every sample, in this order.
        parsed = tuple(ParsedSample(n, dict(labels), v) for n, labels, v in samples)
        scrape = Family(name="", type="untyped", help="", unit="", samples=parsed)
        write = FrameWrite(endpoint.pk, at(offset), frame_encode(endpoint.pk, [scrape], memo))
        series_set_id = frames_write([write], resolution=timedelta(0)).series_sets[endpoint.pk]
        for name, labels, _ in samples:
            family = _family(name, types)
            entry = families.setdefault(
                family,
                {"type": types.get(family, "gauge"), "help": "", "unit": "", "label_names": [],
                 "series": 1, "buckets": None, "problems": []},
            )  # fmt: skip
            if name.endswith("_bucket") and labels.get("le") not in (None, "+Inf"):
                edges = set(entry["buckets"] or []) | {float(labels["le"])}
                entry["buckets"] = sorted(edges)
    assert series_set_id is not None
    EndpointInventory.objects.create(
        endpoint=endpoint,
        series_set_id=series_set_id,
        scraped_at=at(scrapes[-1][0]),
        dialect="current",
        detected_kind=kind,
        families=families,
    )
    return endpoint


def histogram(
    name: str, labels: Mapping[str, str], cumulative: Mapping[str, float], total: float = 0.0
) -> list[Sample]:
    """Bucket, count and sum samples of one histogram; `cumulative` maps le text -> count."""
    samples: list[Sample] = [
        (f"{name}_bucket", {**labels, "le": le}, count) for le, count in cumulative.items()
    ]
    count = cumulative.get("+Inf", max(cumulative.values()))
    return samples + [(f"{name}_count", dict(labels), count), (f"{name}_sum", dict(labels), total)]
