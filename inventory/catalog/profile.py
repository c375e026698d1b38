"""Every report on one endpoint's scrape at once, as the inventory stores it.

profile = profile_endpoint(parse(body))
profile.kind, profile.dialect, profile.engines  # "engine", "v1-0.10", ("0", "1")
profile.evidence                                # why, for the UI
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.catalog.buckets import (
    BucketSet,
    MaxModelLen,
    infer_bucket_generation,
    infer_max_model_len,
)
from inventory.catalog.dialects import (
    Dialect,
    DialectReport,
    EndpointKind,
    KindReport,
    detect_dialect,
    detect_kind,
)
from inventory.catalog.families import FamilyLike
from inventory.catalog.layout import (
    DataParallel,
    DcgmLabels,
    detect_data_parallel,
    detect_dcgm_labels,
)


@dataclass(frozen=True, slots=True)
class EndpointProfile:
    """All reports for one endpoint; `kind`, `dialect`, `engines`, `evidence` flatten them."""

    kind_report: KindReport
    dialect_report: DialectReport
    data_parallel: DataParallel
    dcgm: DcgmLabels | None
    max_model_len: MaxModelLen
    buckets: BucketSet

    @property
    def kind(self) -> EndpointKind:
        return self.kind_report.kind

    @property
    def dialect(self) -> Dialect:
        return self.dialect_report.dialect

    @property
    def engines(self) -> tuple[str, ...]:
        return self.data_parallel.engines

    @property
    def evidence(self) -> tuple[str, ...]:
        found = self.kind_report.evidence + self.dialect_report.evidence
        found += self.data_parallel.evidence + (self.dcgm.evidence if self.dcgm else ())
        if self.max_model_len.at_least is not None:
            found += (self.max_model_len.message,)
        if self.buckets.generation != "unknown":
            found += (f"latency buckets: {self.buckets.generation} set",)
        return tuple(dict.fromkeys(found))


def profile_endpoint(families: Iterable[FamilyLike]) -> EndpointProfile:
    """Every report above for one endpoint's scrape."""
    fams = tuple(families)
    kind = detect_kind(fams)
    return EndpointProfile(
        kind_report=kind,
        dialect_report=detect_dialect(fams, kind),
        data_parallel=detect_data_parallel(fams),
        dcgm=detect_dcgm_labels(fams) if kind.kind == "dcgm" else None,
        max_model_len=infer_max_model_len(fams),
        buckets=infer_bucket_generation(fams),
    )


# The name inventory.services and the scrape command call it by.
detect_endpoint = profile_endpoint
