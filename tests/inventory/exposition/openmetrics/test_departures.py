"""Where prometheus_client departs from the OpenMetrics 1.0 specification, we follow the
specification, and each departure is shown to be real."""

from __future__ import annotations

import pytest

from inventory.exposition.parser import parse
from tests.inventory.exposition.openmetrics.compare import H, oracle, oracle_view, ours

DEPARTURES = [
    # The ABNF has no blanks in label sets, no `:` in label names, one SP before and after.
    ("blank_in_label_set", 'a{ b="c"} 1\n# EOF\n', False),
    ("colon_in_label_name", 'a{b:c="d"} 1\n# EOF\n', False),
    ("space_before_label_set", 'a {b="c"} 1\n# EOF\n', False),
    ("no_space_after_label_set", 'a{b="c"}\t1\n# EOF\n', False),
    ("runs_of_spaces_in_metadata", "# TYPE a  gauge\n# EOF\n", False),
    # number = [SIGN] ("inf" / "infinity") / "nan": no signed NaN; floats fit a float64.
    ("signed_nan", "a -nan\n# EOF\n", False),
    ("value_out_of_range", "a 1e400\n# EOF\n", False),
    # Bucket thresholds MUST NOT equal NaN (it refuses only the spelling "NaN").
    (
        "threshold_nan_in_lower_case",
        H + 'h_bucket{le="nan"} 0\nh_bucket{le="+Inf"} 0\n# EOF\n',
        False,
    ),
    # escaped-char = BS ("n" / DQUOTE / BS) / BS normal-char: a backslash needs a character.
    ("help_ending_in_a_lone_backslash", "# HELP a x\\\n# EOF\n", False),
    # A Summary's Metric's LabelSet MUST NOT have a "quantile" label.
    ("quantile_on_a_summary_count", '# TYPE s summary\ns_count{quantile="0.5"} 1\n# EOF\n', False),
    # Valid expositions it refuses: its exemplar scanner trips over an escaped quote,
    # and comparing an integer timestamp with an exponent one raises TypeError.
    (
        "escaped_quote_in_exemplar_label",
        '# TYPE a counter\na_total 1 # {t="x\\"y"} 1\n# EOF\n',
        True,
    ),
    ("integer_and_exponent_timestamps_in_one_metric", "a 1 1\na 1 1e1\n# EOF\n", True),
    # It drops a later point's samples whose series an earlier point had, so the second
    # point of this histogram loses its +Inf bucket.
    (
        "a_histogram_with_two_points",
        H + 'h_bucket{le="1"} 0 1\nh_bucket{le="+Inf"} 0 1\n'
        'h_bucket{le="1"} 0 2\nh_bucket{le="+Inf"} 1 2\n# EOF\n',
        True,
    ),
]


@pytest.mark.parametrize(
    ("text", "valid"), [pytest.param(t, v, id=rule) for rule, t, v in DEPARTURES]
)
def test_openmetrics_follows_the_specification_where_the_oracle_departs_from_it(
    text: str, valid: bool
) -> None:
    assert (ours(text) is not None) is valid
    assert (oracle_view(text) is not None) is not valid  # the departure is real


def test_openmetrics_keeps_every_point_of_a_metric_where_the_oracle_drops_some() -> None:
    text = "# TYPE a counter\na_total 1 1\na_created 0 1\na_total 2 2\na_created 0 2\n# EOF\n"
    (family,) = parse(text, openmetrics=True)
    assert [(s.name, s.timestamp) for s in family.samples] == [
        ("a_total", 1.0),
        ("a_created", 1.0),
        ("a_total", 2.0),
        ("a_created", 2.0),
    ]
    (theirs,) = oracle(text)
    assert len(theirs.samples) == 3  # the second a_created is gone
