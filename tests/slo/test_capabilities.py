"""SLO objective kinds on the capability map: measurable, on an older name, or not."""

from __future__ import annotations

from inventory.capabilities import CapabilityStatus, Verdict, capability_map
from inventory.models import Fleet


def objective_rows(fleet: Fleet) -> dict[str, CapabilityStatus]:
    return {s.id: s for s in capability_map(fleet=fleet) if s.area == "slo"}


def test_every_objective_kind_is_on_the_map_of_a_current_fleet(fleet: Fleet) -> None:
    rows = objective_rows(fleet)
    assert set(rows) == {"slo.ttft", "slo.itl", "slo.tpot", "slo.e2e", "slo.success"}
    assert all(row.verdict == Verdict.READY for row in rows.values())


def test_an_old_fleet_reads_itl_under_its_old_name_and_cannot_measure_tpot(
    old_fleet: Fleet,
) -> None:
    rows = objective_rows(old_fleet)
    assert rows["slo.itl"].verdict == Verdict.FALLBACK
    tpot = rows["slo.tpot"]
    assert tpot.verdict == Verdict.UNAVAILABLE
    assert tpot.reasons
