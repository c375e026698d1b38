"""OpenMetrics 1.0, one hand-written case per rule of the specification: what it allows is
read, and what it forbids is refused at the offending line with a message naming it."""

from __future__ import annotations

import pytest

from inventory.exposition.parser import ExpositionError, parse
from tests.inventory.exposition.openmetrics.compare import H, ours

OK = [
    ("exposition_ends_with_eof_and_an_optional_line_feed", "a 1\n# EOF"),
    ("an_empty_metricset_is_valid", "# EOF\n"),
    ("unknown_escapes_are_kept_in_label_values", 'a{b="x\\z\\t"} 1\n# EOF\n'),
    ("unknown_escapes_are_kept_in_help_text", "# HELP a he\\tl\\fp\n# EOF\n"),
    ("nul_is_a_character_of_help_text", "# HELP a x\x00y\n# EOF\n"),
    ("nul_and_cr_are_characters_of_label_values", 'a{b="\x00\r"} 1\n# EOF\n'),
    ("numbers_are_case_insensitive_inf_infinity_nan", "a NaN\nb +INF\nc -infinity\nd nan\n# EOF\n"),
    ("leading_zeros_are_fine", "a 0042\n# EOF\n"),
    ("timestamps_are_decimal_seconds", "# TYPE a gauge\na 1 1.5\na 2 1.5e3\n# EOF\n"),
    ("timestamps_may_repeat_within_a_metric", "# TYPE a gauge\na 1 5\na 2 5\n# EOF\n"),
    ("counter_total_may_be_plus_inf", "# TYPE a counter\na_total +Inf\n# EOF\n"),
    ("counter_with_created", "# TYPE a counter\na_total 1\na_created 1.7e9\n# EOF\n"),
    ("exemplar_on_counter_total", '# TYPE a counter\na_total 1 # {t="x"} 0.5 123\n# EOF\n'),
    (
        "exemplar_label_value_may_hold_an_escaped_quote",
        '# TYPE a counter\na_total 1 # {t="x\\"y"} 1\n# EOF\n',
    ),
    (
        "exemplar_labels_of_exactly_128_characters",
        '# TYPE a counter\na_total 1 # {t="' + "x" * 127 + '"} 1\n# EOF\n',
    ),
    (
        "histogram_with_sum_count_created_and_exemplars",
        H
        + 'h_bucket{le="1.0"} 0 # {} 0.5\nh_bucket{le="+Inf"} 2\n'
        + "h_count 2\nh_sum 3\nh_created 1\n# EOF\n",
    ),
    ("histogram_buckets_only", H + 'h_bucket{le="+Inf"} 0\n# EOF\n'),
    (
        "histogram_with_negative_thresholds_and_no_sum",
        H + 'h_bucket{le="-1"} 0\nh_bucket{le="+Inf"} 1\n# EOF\n',
    ),
    (
        "gaugehistogram_negative_gsum_with_negative_threshold",
        '# TYPE g gaugehistogram\ng_bucket{le="-1"} 0\ng_bucket{le="+Inf"} 1\n'
        "g_gcount 1\ng_gsum -2\n# EOF\n",
    ),
    (
        "summary_quantiles_count_and_sum",
        '# TYPE s summary\ns{quantile="0.5"} NaN\ns_count 3\ns_sum 1\n# EOF\n',
    ),
    ("info_value_one", '# TYPE i info\ni_info{v="1"} 1.0\n# EOF\n'),
    ("stateset_one_sample_per_state", '# TYPE s stateset\ns{s="a"} 1\ns{s="b"} 0\n# EOF\n'),
    (
        "unit_is_the_name_suffix",
        "# TYPE a_seconds gauge\n# UNIT a_seconds seconds\na_seconds 1\n# EOF\n",
    ),
    ("empty_unit_and_help", "# TYPE a gauge\n# UNIT a \n# HELP a \na 1\n# EOF\n"),
    ("metadata_in_any_order", "# HELP a_b h\n# UNIT a_b b\n# TYPE a_b gauge\n# EOF\n"),
    (
        "a_metric_with_two_points_in_order",
        "# TYPE a counter\na_total 1 1\na_created 0 1\na_total 2 2\na_created 0 2\n# EOF\n",
    ),
]
FAIL = [
    ("missing_eof", "a 1\n", 1, "missing '# EOF'"),
    ("nothing_after_eof", "# EOF\na 1\n", 2, "after '# EOF'"),
    ("no_blank_lines", "a 1\n\n# EOF\n", 2, "blank line"),
    ("no_comments", "# hello\n# EOF\n", 1, "comment lines"),
    ("eof_is_exact", "# EOF \n", 1, "EOF line"),
    ("one_space_between_tokens", "a  1\n# EOF\n", 1, "expected"),
    ("no_tabs", "a\t1\n# EOF\n", 1, ""),
    ("no_trailing_space", "a 1 \n# EOF\n", 1, "expected"),
    ("no_trailing_comma_in_labels", 'a{b="c",} 1\n# EOF\n', 1, "trailing comma"),
    ("no_blanks_in_labels", 'a{ b="c"} 1\n# EOF\n', 1, "whitespace"),
    ("no_blank_before_labels", 'a {b="c"} 1\n# EOF\n', 1, "blank between"),
    ("a_space_after_the_labels", 'a{b="c"}\t1\n# EOF\n', 1, "single space"),
    ("label_names_have_no_colon", 'a{b:c="d"} 1\n# EOF\n', 1, "expected"),
    ("label_names_with_two_underscores_are_reserved", 'a{__b="c"} 1\n# EOF\n', 1, "reserved"),
    ("label_names_are_unique", 'a{b="1",b="2"} 1\n# EOF\n', 1, "duplicate"),
    ("quoted_names_are_not_1_0", '{"a"} 1\n# EOF\n', 1, "quoted"),
    ("nan_has_no_sign", "a +nan\n# EOF\n", 1, "invalid value"),
    ("numbers_fit_a_float64", "a 1e400\n# EOF\n", 1, "out of range"),
    ("no_digit_separators", "a 1_0\n# EOF\n", 1, "invalid value"),
    ("timestamps_are_not_nan", "a 1 NaN\n# EOF\n", 1, "invalid timestamp"),
    ("help_ends_without_a_lone_backslash", "# HELP a x\\\n# EOF\n", 1, "lone backslash"),
    ("untyped_is_not_a_type", "# TYPE a untyped\n# EOF\n", 1, "unknown metric type"),
    ("one_help_per_family", "# HELP a x\n# HELP a y\n# EOF\n", 2, "second HELP"),
    ("metadata_before_samples", "# TYPE a gauge\na 1\n# HELP a x\n# EOF\n", 3, "after its samples"),
    (
        "unit_is_the_name_suffix_or_nothing",
        "# TYPE a gauge\n# UNIT a seconds\n# EOF\n",
        2,
        "does not end with its unit",
    ),
    ("info_has_no_unit", "# TYPE a_u info\n# UNIT a_u u\n# EOF\n", 2, "cannot have a unit"),
    ("stateset_has_no_unit", "# TYPE a_u stateset\n# UNIT a_u u\n# EOF\n", 2, "cannot have a unit"),
    ("counter_samples_have_suffixes", "# TYPE a counter\na 1\n# EOF\n", 2, "not part of counter"),
    ("family_names_do_not_clash", "# TYPE a counter\n# TYPE a_total gauge\n# EOF\n", 2, "clashes"),
    (
        "families_are_not_interleaved",
        "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n# EOF\n",
        5,
        "belongs to family",
    ),
    (
        "metrics_are_not_interleaved",
        'a{x="1"} 1\na{x="2"} 1\na{x="1"} 2\n# EOF\n',
        3,
        "not contiguous",
    ),
    (
        "metric_points_are_not_interleaved",
        "# TYPE s summary\ns_count 0 1\ns_count 0 2\ns_sum 0 1\n# EOF\n",
        4,
        "go backwards",
    ),
    ("timestamps_all_or_none", "a 1 1\na 2\n# EOF\n", 2, "mixes"),
    ("counter_total_is_not_nan", "# TYPE a counter\na_total NaN\n# EOF\n", 2, "NaN"),
    ("counter_total_is_not_negative", "# TYPE a counter\na_total -1\n# EOF\n", 2, "negative"),
    ("histogram_has_a_plus_inf_bucket", H + 'h_bucket{le="1"} 0\n# EOF\n', 2, "+Inf bucket"),
    ("histogram_plus_inf_is_spelled_plus_inf", H + 'h_bucket{le="+inf"} 0\n# EOF\n', 2, "+Inf"),
    ("histogram_bucket_has_an_le", H + "h_bucket 0\n# EOF\n", 2, "without an le"),
    ("histogram_threshold_is_not_nan", H + 'h_bucket{le="nan"} 0\n# EOF\n', 2, "not a number"),
    (
        "histogram_thresholds_increase",
        H + 'h_bucket{le="2"} 0\nh_bucket{le="1"} 0\n# EOF\n',
        3,
        "increasing",
    ),
    (
        "histogram_thresholds_are_unique",
        H + 'h_bucket{le="1"} 0\nh_bucket{le="1.0"} 0\n# EOF\n',
        3,
        "increasing",
    ),
    (
        "histogram_buckets_are_cumulative",
        H + 'h_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\n# EOF\n',
        3,
        "decrease",
    ),
    (
        "histogram_bucket_values_are_integers",
        H + 'h_bucket{le="+Inf"} 1.5\n# EOF\n',
        2,
        "not an integer",
    ),
    (
        "histogram_bucket_values_are_not_negative",
        H + 'h_bucket{le="+Inf"} -1\n# EOF\n',
        2,
        "negative",
    ),
    (
        "histogram_count_equals_the_plus_inf_bucket",
        H + 'h_bucket{le="+Inf"} 2\nh_count 3\nh_sum 1\n# EOF\n',
        4,
        "differs",
    ),
    (
        "histogram_count_is_an_integer",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2.5\nh_sum 1\n# EOF\n',
        3,
        "not an integer",
    ),
    (
        "histogram_sum_needs_the_count",
        H + 'h_bucket{le="+Inf"} 2\nh_sum 1\n# EOF\n',
        3,
        "needs its count",
    ),
    (
        "histogram_count_needs_the_sum",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2\n# EOF\n',
        3,
        "needs its sum",
    ),
    (
        "histogram_sum_is_not_negative",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2\nh_sum -1\n# EOF\n',
        4,
        "negative",
    ),
    (
        "histogram_sum_is_not_nan",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2\nh_sum NaN\n# EOF\n',
        4,
        "NaN",
    ),
    (
        "histogram_with_negative_thresholds_has_no_sum",
        H + 'h_bucket{le="-1"} 0\nh_bucket{le="+Inf"} 2\nh_count 2\nh_sum 0\n# EOF\n',
        5,
        "cannot have a _sum",
    ),
    (
        "histogram_metric_labels_have_no_le",
        H + 'h_bucket{le="+Inf"} 2\nh_count{le="1"} 2\nh_sum{le="1"} 1\n# EOF\n',
        3,
        "only _bucket samples",
    ),
    (
        "gaugehistogram_negative_gsum_needs_a_negative_threshold",
        '# TYPE g gaugehistogram\ng_bucket{le="+Inf"} 1\ng_gcount 1\ng_gsum -1\n# EOF\n',
        4,
        "negative _gsum",
    ),
    (
        "gaugehistogram_gsum_is_not_nan",
        '# TYPE g gaugehistogram\ng_bucket{le="+Inf"} 1\ng_gcount 1\ng_gsum NaN\n# EOF\n',
        4,
        "NaN",
    ),
    ("summary_quantile_label_is_required", "# TYPE s summary\ns 1\n# EOF\n", 2, "quantile label"),
    (
        "summary_quantile_is_between_0_and_1",
        '# TYPE s summary\ns{quantile="1.5"} 1\n# EOF\n',
        2,
        "quantile label",
    ),
    (
        "summary_quantile_values_are_not_negative",
        '# TYPE s summary\ns{quantile="0.5"} -1\n# EOF\n',
        2,
        "negative",
    ),
    ("summary_count_is_an_integer", "# TYPE s summary\ns_count 1.5\n# EOF\n", 2, "not an integer"),
    ("summary_sum_is_not_negative", "# TYPE s summary\ns_sum -1\n# EOF\n", 2, "negative"),
    (
        "summary_metric_labels_have_no_quantile",
        '# TYPE s summary\ns_count{quantile="0.5"} 1\n# EOF\n',
        2,
        "only quantile samples",
    ),
    ("info_value_is_one", '# TYPE i info\ni_info{v="1"} 2\n# EOF\n', 2, "info value"),
    ("info_samples_have_the_info_suffix", "# TYPE i info\ni 1\n# EOF\n", 2, "not part of info"),
    (
        "stateset_sample_has_the_family_label",
        '# TYPE s stateset\ns{x="a"} 1\n# EOF\n',
        2,
        "lacks the label",
    ),
    ("stateset_value_is_0_or_1", '# TYPE s stateset\ns{s="a"} 2\n# EOF\n', 2, "stateset value"),
    (
        "exemplars_only_on_total_and_bucket",
        '# TYPE a gauge\na 1 # {t="x"} 1\n# EOF\n',
        2,
        "exemplars are only",
    ),
    (
        "exemplar_labels_at_most_128_characters",
        '# TYPE a counter\na_total 1 # {t="' + "x" * 128 + '"} 1\n# EOF\n',
        2,
        "128",
    ),
    (
        "exemplar_value_is_a_number",
        "# TYPE a counter\na_total 1 # {} x\n# EOF\n",
        2,
        "exemplar value",
    ),
]


@pytest.mark.parametrize("text", [pytest.param(t, id=rule) for rule, t in OK])
def test_openmetrics_accepts_what_the_specification_allows(text: str) -> None:
    assert ours(text) is not None


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [pytest.param(t, n, m, id=rule) for rule, t, n, m in FAIL]
)
def test_openmetrics_refuses_what_the_specification_forbids(
    text: str, line: int, fragment: str
) -> None:
    with pytest.raises(ExpositionError) as raised:
        parse(text, openmetrics=True)
    assert raised.value.line == line, raised.value
    assert fragment in raised.value.message
