"""The preemption incident as the walk meets it: a TTFT spike that the window mean does
not carry is not split into queue and prefill, and step work needs every replica of the
model slowed about equally, not one far ahead of a peer's ordinary swing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.walk.scenario_walks import history_of, walk_history
from triage.walk.thresholds import THRESHOLDS

DAY = 1_767_225_600  # 2026-01-01T00:00Z
AT_14H = DAY + 14 * 3600 + 1800  # the busiest hour, where the batch's peaks swing most


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback")
def test_a_ttft_spike_alone_is_not_split_into_queue_prefill_or_frontend(tmp_path: Path) -> None:
    walk = walk_history(history_of("preemption", seed=0), tmp_path)
    assert walk.supported == ("tpot.preemption",)
    (mean,) = [f for f in walk.node("ttft").figures if f.name == "ttft_mean"]
    assert mean.value is not None and mean.baseline is not None
    # TTFT spiked in one grid step, but the window mean stayed inside the breach bound.
    assert walk.node("ttft").verdict == "supported"
    assert "TTFT spiked on" in walk.node("ttft").reason
    assert not THRESHOLDS["ttft_breach"].holds(mean.value, mean.baseline)
    for node in ("ttft.queue", "ttft.prefill", "ttft.frontend"):
        found = walk.node(node)
        assert found.verdict == "ruled_out", (node, found.reason)
        assert "a spike alone is not split" in found.reason


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback")
def test_step_work_needs_every_replica_of_the_model_slowed_about_equally(
    tmp_path: Path,
) -> None:
    # At 14:00 on seed 13 the peer serving the same model swung on its own: its batch grew
    # and its ITL rose past `itl_alike`, as step work would have it, but by a fraction of
    # the preempting replica's rise.
    walk = walk_history(history_of("preemption", seed=13, end=AT_14H), tmp_path)
    step = walk.node("tpot.step_work")
    assert step.verdict == "ruled_out", step.reason
    assert walk.supported == ("tpot.preemption",)
    rises = {
        f.replicas[0]: f.value / f.baseline - 1.0
        for f in step.figures
        if f.name == "itl_mean" and f.value is not None and f.baseline
    }
    assert len(rises) == 2
    alike = THRESHOLDS["itl_alike"]
    assert all(rise >= alike.ratio - 1.0 for rise in rises.values())
    assert min(rises.values()) < THRESHOLDS["itl_alike_spread"].delta * max(rises.values())
