"""The figures every capacity and cost answer is made of: a quantity with its unit and
where it came from, ledger lines with their formula, and byte sizes in binary units.

Plain frozen dataclasses, so the pages, `manage.py capacity --json` and the tests read
the same objects. A quantity with no value is never shown as zero: `value is None`
means "needs measurement" (or unknown), and `origin` says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

# Where a number came from. "needs measurement" is an input nobody may guess; "example" is
# a seeded profile (an example GPU's price), never presented as a measured fact.
Origin = Literal["entered", "model config", "measured", "example", "derived", "needs measurement"]

KIB = 1024
MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class Quantity:
    key: str  # with its unit in the name: "kv_bytes_per_token", "lambda_peak_requests_per_second"
    value: float | None  # None: needs measurement, or not derivable from what was given
    unit: str  # "bytes", "tokens", "requests_per_second", "replicas", "fraction", "usd", ...
    origin: Origin
    source: str = ""  # "entered", "config.json num_hidden_layers", "vllm:... p95 over <window>"
    note: str = ""

    @property
    def known(self) -> bool:
        return self.value is not None and math.isfinite(self.value)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            self.key: self.value if self.known else None,
            "unit": self.unit,
            "origin": self.origin,
            "source": self.source,
        }
        if self.unit == "bytes" and self.known:
            found.update(binary_units(self.key, float(self.value or 0.0)))
        if self.note:
            found["note"] = self.note
        return found


@dataclass(frozen=True)
class Line:
    """One ledger line: what it is, its quantity, and the formula that made it."""

    label: str
    quantity: Quantity
    formula: str = ""


@dataclass(frozen=True)
class Ledger:
    name: str  # "weights", "kv", "service demand", "replicas"
    lines: tuple[Line, ...]
    notes: tuple[str, ...] = field(default=())
    lower_bound: bool = False  # the weights ledger is a floor: true memory use is higher

    def get(self, key: str) -> Quantity | None:
        return next((ln.quantity for ln in self.lines if ln.quantity.key == key), None)


def binary_units(key: str, value_bytes: float) -> dict[str, float]:
    """`weights_bytes` -> {"weights_gib": .., "weights_mib": .., "weights_kib": ..}."""
    stem = key.removesuffix("_bytes") if key.endswith("_bytes") else key.replace("_bytes", "")
    if "_bytes_" in key:  # kv_bytes_per_token -> kv_kib_per_token
        head, tail = key.split("_bytes_", 1)
        return {
            f"{head}_gib_{tail}": value_bytes / GIB,
            f"{head}_mib_{tail}": value_bytes / MIB,
            f"{head}_kib_{tail}": value_bytes / KIB,
        }
    return {
        f"{stem}_gib": value_bytes / GIB,
        f"{stem}_mib": value_bytes / MIB,
        f"{stem}_kib": value_bytes / KIB,
    }


def bytes_text(value_bytes: float | None) -> str:
    """A byte count in the largest binary unit that keeps it >= 1: "15.0 GiB", "320 KiB"."""
    if value_bytes is None or not math.isfinite(value_bytes):
        return "needs measurement"
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(value_bytes) >= size:
            return f"{value_bytes / size:,.{1 if value_bytes / size < 100 else 0}f} {unit}"
    return f"{value_bytes:,.0f} B"


def needs_measurement(key: str, unit: str, source: str = "", note: str = "") -> Quantity:
    """An input nobody may guess: no value, and the reason it has none."""
    return Quantity(key, None, unit, "needs measurement", source, note)


def entered(key: str, value: float, unit: str, source: str = "entered", note: str = "") -> Quantity:
    return Quantity(key, value, unit, "entered", source, note)


def derived(key: str, value: float | None, unit: str, source: str = "", note: str = "") -> Quantity:
    """A figure computed from others. When an input is missing (`None`, or a non-finite
    result) the figure inherits "needs measurement" rather than becoming a number."""
    if value is None or not math.isfinite(value):
        return Quantity(key, None, unit, "needs measurement", source, note)
    return Quantity(key, value, unit, "derived", source, note)
