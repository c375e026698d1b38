"""How an endpoint's engines and GPUs are laid out: the data-parallel ranks it reports (and
whether its registry is multiprocess), and a dcgm-exporter's label spellings and GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from inventory.catalog.dialects import DCGM_PREFIXES
from inventory.catalog.families import (
    FamilyLike,
    few,
    is_created_family,
    rank_order,
    vllm_samples,
)

PROCESS_PREFIXES = ("process_", "python_")


@dataclass(frozen=True, slots=True)
class DataParallel:
    """`engines` are the `engine` label values (global DP ranks) this endpoint reports.

    `multiprocess` is None when there is nothing to judge by (no vllm: counters or
    histograms, as on DCGM or gateway endpoints).
    """

    engines: tuple[str, ...]
    multiprocess: bool | None
    evidence: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.engines)


@dataclass(frozen=True, slots=True)
class DcgmLabels:
    """Which spelling of the host and UUID labels a dcgm-exporter uses, and what it covers."""

    host_labels: tuple[str, ...]
    uuid_labels: tuple[str, ...]
    gpus: tuple[str, ...]
    driver_versions: tuple[str, ...]
    evidence: tuple[str, ...]


def detect_data_parallel(families: Sequence[FamilyLike]) -> DataParallel:
    """DP ranks from the `engine` label, and whether /metrics is in multiprocess mode."""
    engines = tuple(
        sorted(
            {s.labels["engine"] for s in vllm_samples(families) if "engine" in s.labels},
            key=rank_order,
        )
    )
    evidence = [f"engine label values: {', '.join(engines)}"] if engines else []
    if engines and "0" not in engines:
        evidence.append("no engine 0: an externally load-balanced replica owning some DP ranks")
    if not any(f.name.startswith(("vllm:", "http_")) for f in families):
        # Not a vLLM API server, so whether its registry is multiprocess means nothing here.
        return DataParallel(engines, None, tuple(evidence))
    process = sorted(f.name for f in families if f.name.startswith(PROCESS_PREFIXES))
    created = any(
        is_created_family(f) or any(s.name.endswith("_created") for s in f.samples)
        for f in families
    )
    # Only a vLLM server's own cumulative families say anything about its registry mode.
    cumulative = any(
        f.samples and f.type in ("counter", "histogram", "summary") and f.name.startswith("vllm:")
        for f in families
    )
    multiprocess: bool | None = None
    if process or created:
        multiprocess = False
        found = [f"process families ({few(process)})"] if process else []
        found += ["_created series"] if created else []
        evidence.append("single-process: " + " and ".join(found))
    elif cumulative:
        multiprocess = True
        evidence.append("multiprocess: no python_*/process_* families and no _created series")
    return DataParallel(engines, multiprocess, tuple(evidence))


def dcgm_host(labels: Mapping[str, str]) -> str | None:
    """The host of a DCGM series: released exporters say `Hostname`, main says `hostname`."""
    return labels.get("Hostname") or labels.get("hostname")


def dcgm_uuid(labels: Mapping[str, str]) -> str | None:
    """The GPU UUID: `UUID`, `uuid` with the old-style flag, `gpu_uuid` on NVLink series."""
    return labels.get("UUID") or labels.get("uuid") or labels.get("gpu_uuid")


def detect_dcgm_labels(families: Sequence[FamilyLike]) -> DcgmLabels:
    """Label spellings and coverage of a dcgm-exporter endpoint."""
    keys: set[str] = set()
    gpus: set[str] = set()
    drivers: set[str] = set()
    for family in families:
        if not family.name.startswith(DCGM_PREFIXES):
            continue
        for sample in family.samples:
            keys.update(sample.labels)
            if "gpu" in sample.labels:
                gpus.add(sample.labels["gpu"])
            if "DCGM_FI_DRIVER_VERSION" in sample.labels:
                drivers.add(sample.labels["DCGM_FI_DRIVER_VERSION"])
    hosts = tuple(k for k in ("Hostname", "hostname") if k in keys)
    uuids = tuple(k for k in ("UUID", "uuid") if k in keys)
    evidence = []
    if hosts == ("Hostname",):
        evidence.append("host label Hostname, as in every released dcgm-exporter")
    elif hosts == ("hostname",):
        evidence.append("host label hostname: dcgm-exporter main after 2026-05-12")
    elif hosts:
        evidence.append("both Hostname and hostname: exporters of different versions")
    if uuids == ("uuid",):
        evidence.append("lowercase uuid: the exporter runs with the old-style label flag")
    if "GPU_I_ID" in keys:
        evidence.append("MIG instances present (GPU_I_ID)")
    if keys & {"pod", "pod_name"}:
        evidence.append("Kubernetes pod mapping on: join to vLLM by pod/namespace")
    return DcgmLabels(
        hosts, uuids, tuple(sorted(gpus, key=rank_order)), tuple(sorted(drivers)), tuple(evidence)
    )
