"""A series repeated within one metric point is kept once, with a problem naming its lines;
points of a series at increasing timestamps are no repeat."""

from __future__ import annotations

from inventory.exposition.parser import parse
from tests.inventory.exposition.openmetrics.compare import H, oracle_view, ours


def test_openmetrics_drops_a_sample_that_repeats_its_series_at_the_same_timestamp() -> None:
    (family,) = parse("a 1\na 2\n# EOF\n", openmetrics=True)
    assert [s.value for s in family.samples] == [1.0]
    assert ours("a 1\na 2\n# EOF\n") == oracle_view("a 1\na 2\n# EOF\n")


def repeat(series: str, lines: list[int]) -> str:
    """The problem the parser names a repeated series by (as in the text format)."""
    *before, last = map(str, lines)
    return (
        f"series {series} is listed on lines {', '.join(before)} and {last}: stored once, "
        f"with the value of line {lines[0]} (Prometheus too keeps the first)"
    )


def test_openmetrics_names_the_lines_of_a_series_repeated_within_one_metric_point() -> None:
    # The specification lets a series have several lines only as MetricPoints whose
    # timestamps increase; a repeat at the same timestamp (or with none) is kept once.
    text = (
        "# TYPE a gauge\n"
        'a{x="1"} 1 5\n'
        'a{x="1"} 2 5\n'
        'a{x="1"} 3 6\n'
        'a{x="1"} 4 6.0\n'
        'a{x="1"} 5 7\n'
        "# TYPE b gauge\n"
        "b 1\n"
        "b 2\n"
        "b 3\n"
        "# EOF\n"
    )
    a, b = parse(text, openmetrics=True)
    assert [(s.value, s.timestamp) for s in a.samples] == [(1.0, 5.0), (3.0, 6.0), (5.0, 7.0)]
    assert a.problems == (repeat("a{x='1'}", [2, 3]), repeat("a{x='1'}", [4, 5]))
    assert [s.value for s in b.samples] == [1.0]
    assert b.problems == (repeat("b{}", [8, 9, 10]),)


def test_openmetrics_checks_a_histogram_point_with_a_repeated_bucket_by_its_first_line() -> None:
    text = (
        H
        + 'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_bucket{le="+Inf"} 5\n'
        + "h_count 2\nh_sum 3\n# EOF\n"
    )
    (family,) = parse(text, openmetrics=True)
    assert [(s.name, s.value) for s in family.samples] == [
        ("h_bucket", 1.0),
        ("h_bucket", 2.0),
        ("h_count", 2.0),
        ("h_sum", 3.0),
    ]
    assert family.problems == (repeat("h_bucket{le='+Inf'}", [3, 4]),)


def test_openmetrics_points_of_a_series_at_increasing_timestamps_are_no_repeat() -> None:
    (family,) = parse("# TYPE a gauge\na 1 5\na 2 6\n# EOF\n", openmetrics=True)
    assert [s.value for s in family.samples] == [1.0, 2.0]
    assert family.problems == ()
