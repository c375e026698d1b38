"""OpenMetrics 1.0 against prometheus_client as the oracle: on every generated exposition
we accept exactly what it accepts and read what it reads. Where it departs from the 1.0
specification we follow the specification: those breakages are tagged when generated,
left out of the comparison, and each has a hand-written case in test_departures."""

from __future__ import annotations

from hypothesis import given

from tests.inventory.exposition.fuzzing import fuzz_settings
from tests.inventory.exposition.openmetrics.compare import H, oracle_view, ours
from tests.inventory.exposition.openmetrics.expositions import Exposition, expositions

CHECKS = fuzz_settings(200)


@CHECKS
@given(expositions())
def test_openmetrics_accepts_exactly_what_the_oracle_accepts(exposition: Exposition) -> None:
    text = exposition.text()
    mine = ours(text)
    if exposition.spec_refuses:
        assert mine is None, f"accepted what OpenMetrics 1.0 forbids: {exposition.spec_refuses}"
        return
    if exposition.spec_accepts:
        assert mine is not None, f"refused a valid exposition: {exposition.spec_accepts}"
        return
    assert mine == oracle_view(text), text


def test_openmetrics_reads_the_same_families_as_the_oracle_on_a_full_exposition() -> None:
    text = (
        '# TYPE a_seconds counter\n# UNIT a_seconds seconds\n# HELP a_seconds A \\"c\\".\n'
        'a_seconds_total{x="1"} 3 # {t="u"} 1\na_seconds_created{x="1"} 1.7e9\n'
        + H
        + 'h_bucket{le="0.5"} 1\nh_bucket{le="+Inf"} 2\nh_count 2\nh_sum 0.75\n'
        '# TYPE s stateset\ns{s="on"} 1\ns{s="off"} 0\n# TYPE i info\ni_info{v="2"} 1\n'
        "u 5 1.5\n# EOF\n"
    )
    assert ours(text) == oracle_view(text)
