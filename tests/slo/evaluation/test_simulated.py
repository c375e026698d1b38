"""SLOs on simulated fleets: a burst burns and pages, a steady fleet does not, and both
backends agree with each other and with the simulator's own requests.

Each history is simulated once, loaded into the embedded store through `import_history`
and into a real Prometheus by remote write (as its scrape loop would have written it).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import override_settings

from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import feed_scrapes
from fleetsim.history import History
from fleetsim.request import Request
from inventory.history import history_import
from inventory.models import Fleet
from slo.evaluation import SloStatus, slo_status
from slo.models import Objective, Slo

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]

STEP = 15.0
END = math.floor(1_764_000_000 / STEP) * STEP
# Half an hour keeps the suite quick; the 1 h pair reads what is held and says so.
HOURS = 0.5
# TTFT edges of the current dialect: 2.5 s is one, 1.5 s lies between 1 s and 2.5 s.
ON_EDGE, BETWEEN = 2.5, 1.5


class Recorded(History):
    """A History that keeps its scrape steps (for remote write) and each request's TTFT."""

    def __init__(self, **options: Any) -> None:
        super().__init__(hours=HOURS, step=STEP, end=END, **options)
        self.recorded: list[Any] = []
        self.first_tokens: list[tuple[float, float]] = []  # (unix time of first token, TTFT)
        self.model.request_observers.append(self._observe)

    def _observe(self, req: Request, t: float, outcome: str) -> None:
        if req.t_first >= 0:
            self.first_tokens.append((self.model.unix(req.t_first), req.t_first - req.t_arrival))

    def scrapes(self) -> Iterator[tuple[float, list[Any]]]:
        for unix, scrapes in super().scrapes():
            self.recorded.append((unix, scrapes))
            yield unix, scrapes


@dataclass
class Loaded:
    history: Recorded
    fleet: Fleet
    prometheus: str


CASES = {
    "steady": dict(replicas=2, scenario="steady", at=600.0, duration=600.0, seed=21),
    # The burst runs to the end of the history: the long and the 5 min windows both burn.
    "traffic-burst": dict(replicas=2, scenario="traffic-burst", at=600.0, duration=1200.0,
                          seed=22),
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(CASES))
def loaded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
    django_db_setup: None, django_db_blocker: Any,
) -> Iterator[Loaded]:  # fmt: skip
    name: str = request.param
    base = tmp_path_factory.mktemp(name)
    history = Recorded(**CASES[name])
    history.write_openmetrics(base / "history.om")
    with django_db_blocker.unblock():
        fleet = history_import(fleet_slug=f"slo-{name}", path=base / "history.om").fleet
    with running_remote_write_prometheus(base) as url:
        feed_scrapes(url, history.recorded)
        yield Loaded(history, fleet, url)
    with django_db_blocker.unblock():
        fleet.delete()


def _slo(fleet: Fleet, threshold: float) -> Slo:
    # Simulated clients abort now and then; only engine errors count against this SLO.
    slo, _ = Slo.objects.get_or_create(
        fleet=fleet, slug=f"ttft-{threshold:g}",
        defaults={"name": f"TTFT {threshold:g}", "bad_finish_reasons": ["error"]},
    )  # fmt: skip
    slo.objectives.all().delete()
    Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=threshold, target=0.99)
    Objective.objects.create(slo=slo, kind="success", threshold_seconds=None, target=0.99)
    return slo


def _at() -> datetime:
    return datetime.fromtimestamp(END, UTC)


def _both(loaded: Loaded, threshold: float) -> tuple[SloStatus, SloStatus]:
    slo = _slo(loaded.fleet, threshold)
    local = slo_status(slo, backend="local", at=_at())
    with override_settings(PROMETHEUS_URL=loaded.prometheus):
        remote = slo_status(slo, backend="prometheus", at=_at())
    return local, remote


def test_a_burst_pages_on_the_fast_pair_and_a_steady_fleet_does_not(loaded: Loaded) -> None:
    status = slo_status(_slo(loaded.fleet, ON_EDGE), backend="local", at=_at())
    ttft = next(o for o in status.objectives if o.kind == "ttft")
    fast = ttft.burn[0]
    assert fast.pair == "1h/5m"
    if loaded.fleet.slug == "slo-traffic-burst":
        assert fast.firing == "firing", fast
        assert status.state in ("burning", "exhausted")
    else:
        assert fast.firing in ("quiet", "too-few"), fast
        assert status.state not in ("burning", "exhausted")


@pytest.mark.parametrize("threshold", [ON_EDGE, BETWEEN])
def test_both_backends_agree_on_attainment_and_burn(loaded: Loaded, threshold: float) -> None:
    local, remote = _both(loaded, threshold)
    assert remote.backend == "prometheus"
    for mine, theirs in zip(local.objectives, remote.objectives, strict=True):
        assert mine.attainment is not None and theirs.attainment is not None
        assert mine.attainment.lower == pytest.approx(theirs.attainment.lower, abs=2e-3)
        assert mine.attainment.upper == pytest.approx(theirs.attainment.upper, abs=2e-3)
        assert mine.verdict == theirs.verdict
        assert [r.firing for r in mine.burn] == [r.firing for r in theirs.burn]
        assert theirs.provenance.queries, "Prometheus figures say which PromQL they came from"


@pytest.mark.parametrize("threshold", [ON_EDGE, BETWEEN])
def test_attainment_contains_the_fraction_the_simulated_requests_really_had(
    loaded: Loaded, threshold: float
) -> None:
    local = slo_status(_slo(loaded.fleet, threshold), backend="local", at=_at())
    ttft = next(o for o in local.objectives if o.kind == "ttft")
    assert ttft.attainment is not None
    start = END - local.held_seconds
    inside = [ttft_s for t, ttft_s in loaded.history.first_tokens if start < t <= END]
    truth = sum(v <= threshold for v in inside) / len(inside)
    # Requests whose first token straddles a scrape sit on the window's edge: 0.5% slack.
    assert ttft.attainment.lower - 5e-3 <= truth <= ttft.attainment.upper + 5e-3
    assert ttft.attainment.is_exact == (threshold == ON_EDGE)
