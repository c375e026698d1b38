"""The DCGM exporter: its fields, and what a failing NVLink looks like on them."""

from __future__ import annotations

from fleetsim.dcgm import FIELDS, NVLINK_ERRORS
from fleetsim.families import Family
from fleetsim.fleet import FleetModel
from fleetsim.scenarios import FAILING_LINK_GPUS, install


def per_gpu(families: list[Family], name: str) -> dict[str, float]:
    (fam,) = [f for f in families if f.name == name]
    return {dict(labels)["gpu"]: value for _, labels, value in fam.samples}


def test_the_nvlink_error_totals_sit_where_the_exporters_csv_lists_them() -> None:
    names = [name for name, _, _ in FIELDS]
    bandwidth = names.index("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
    assert tuple(names[bandwidth - 4 : bandwidth]) == NVLINK_ERRORS
    assert all(type_ == "counter" for name, type_, _ in FIELDS if name in NVLINK_ERRORS)


def test_a_healthy_fleet_counts_no_nvlink_errors_and_a_few_pcie_replays_since_boot() -> None:
    fleet = FleetModel(replicas=2, seed=121)
    fleet.advance_to(600.0)
    for index in range(2):
        families = fleet.dcgm_families(index)
        for name in NVLINK_ERRORS:
            assert set(per_gpu(families, name).values()) == {0}
        replays = per_gpu(families, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
        assert all(0 < value < 1000 for value in replays.values())


def test_a_failing_nvlink_counts_errors_on_both_of_its_ends_and_detours_over_pcie() -> None:
    fleet = FleetModel(replicas=2, seed=122, epoch=1_767_225_600.0 + 13 * 3600)
    install(fleet, "collective-degradation", at=300.0, duration=300.0)
    fleet.advance_to(300.0)
    before = fleet.dcgm_families(1)
    fleet.advance_to(590.0)  # the last collection inside the window
    during = fleet.dcgm_families(1)
    slots = [str(fleet.configs[1].gpus[pos].index) for pos in range(4)]
    failing = {slots[pos] for pos in FAILING_LINK_GPUS}
    for name in NVLINK_ERRORS:
        grew = {
            gpu
            for gpu, value in per_gpu(during, name).items()
            if value > per_gpu(before, name)[gpu]
        }
        assert grew == failing, name
    xid = per_gpu(during, "DCGM_FI_DEV_XID_ERRORS")
    assert {gpu for gpu, code in xid.items() if code == 74} == failing
    pcie = per_gpu(during, "DCGM_FI_PROF_PCIE_TX_BYTES")
    assert min(pcie[g] for g in failing) > 100 * max(pcie[g] for g in set(slots) - failing)
