"""The exposition parser: its shape, its strictness, its problems and its cache."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pickle
from pathlib import Path

import pytest

from fleetsim.api import sample_exposition
from inventory.exposition.parser import ExpositionError, Family, LabelCache, Labels, Sample, parse

DATA = Path(__file__).parent.parent / "data"
CONFORMANCE = DATA / "conformance"
EXPECTED = json.loads((CONFORMANCE / "expected.json").read_text())
CASES = sorted(CONFORMANCE.glob("*/*.txt"))


def family(families: list[Family], name: str) -> Family:
    (found,) = [f for f in families if f.name == name]
    return found


# --- conformance cases: must parse, must parse with problems, must fail -----------------------


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conformance_case_behaves_as_its_file_name_says(path: Path) -> None:
    key = f"{path.parent.name}/{path.name}"
    expectation = path.name.split(".")[-2]
    payload = path.read_bytes()
    openmetrics = path.parent.name == "openmetrics"
    if expectation == "fail":
        with pytest.raises(ExpositionError) as raised:
            parse(payload, openmetrics=openmetrics)
        assert raised.value.line == EXPECTED[key]["line"]
        assert EXPECTED[key]["message"] in raised.value.message
        return
    problems = [p for f in parse(payload, openmetrics=openmetrics) for p in f.problems]
    if expectation == "ok":
        assert problems == []
    else:
        for fragment in EXPECTED[key]["problems"]:
            assert any(fragment in problem for problem in problems), problems


def test_every_failing_and_problem_case_has_an_expectation() -> None:
    named = {f"{p.parent.name}/{p.name}" for p in CASES if not p.name.endswith(".ok.txt")}
    assert named == set(EXPECTED)


# --- what comes back ----------------------------------------------------------------------


def test_parse_reads_a_single_engine_vllm_payload_into_families() -> None:
    families = parse(sample_exposition(dp=1, seed=0))
    names = [f.name for f in families]
    assert len(names) == len(set(names))
    running = family(families, "vllm:num_requests_running")
    assert running.type == "gauge"
    assert [dict(s.labels) for s in running.samples] == [
        {"engine": "0", "model_name": running.samples[0].labels["model_name"]}
    ]
    assert all(isinstance(s, Sample) for f in families for s in f.samples)
    assert not [f.name for f in families if f.name.endswith("_created")]


def test_parse_accepts_bytes_and_str_alike() -> None:
    text = (DATA / "vllm_1engine.prom").read_text()
    assert parse(text) == parse(text.encode()) == parse(bytearray(text.encode()))


def test_parse_drops_total_from_counter_family_names_only() -> None:
    families = parse(sample_exposition(dp=1, seed=0))
    tokens = family(families, "vllm:prompt_tokens")
    assert tokens.type == "counter"
    assert {s.name for s in tokens.samples} == {
        "vllm:prompt_tokens_total",
        "vllm:prompt_tokens_created",
    }
    steps = family(families, "vllm:iteration_tokens_total")
    assert steps.type == "histogram"
    assert {s.name for s in steps.samples} == {
        "vllm:iteration_tokens_total_bucket",
        "vllm:iteration_tokens_total_count",
        "vllm:iteration_tokens_total_sum",
        "vllm:iteration_tokens_total_created",
    }


def test_parse_folds_created_gauges_into_their_parent_family() -> None:
    text = (
        "# HELP c_total Help.\n# TYPE c_total counter\nc_total 3\n"
        "# HELP c_created Help.\n# TYPE c_created gauge\nc_created 1.7e9\n"
    )
    (counter,) = parse(text)
    assert [(s.name, s.value) for s in counter.samples] == [("c_total", 3.0), ("c_created", 1.7e9)]


def test_parse_keeps_created_lines_that_are_not_a_gauge_as_their_own_family() -> None:
    text = "# TYPE c_total counter\nc_total 3\n# TYPE c_created counter\nc_created 1\n"
    assert [(f.name, f.type) for f in parse(text)] == [("c", "counter"), ("c_created", "counter")]
    untyped = "# TYPE c_total counter\nc_total 3\n# HELP c_created Help.\nc_created 1\n"
    assert [(f.name, f.type) for f in parse(untyped)] == [
        ("c", "counter"),
        ("c_created", "unknown"),
    ]


def test_parse_groups_samples_without_metadata_into_one_unknown_family() -> None:
    (plain,) = parse('plain 1\nplain{a="b"} 2\n')
    assert (plain.name, plain.type, len(plain.samples)) == ("plain", "unknown", 2)


def test_parse_returns_families_that_have_metadata_but_no_samples() -> None:
    families = parse("# HELP lora LoRA info.\n# TYPE lora gauge\n# TYPE up gauge\nup 1\n")
    assert [(f.name, f.help, f.samples) for f in families] == [
        ("lora", "LoRA info.", ()),
        ("up", "", (Sample("up", {}, 1.0, None),)),
    ]


def test_parse_reads_special_values_timestamps_and_escapes() -> None:
    text = (
        '# HELP g A \\\\ and a\\nnewline.\n# TYPE g gauge\ng{a="x\\"y\\\\z\\n"} NaN 1700000000123\n'
        'g{a="2"} +Inf\ng{a="3"} -Inf -5\n'
    )
    (gauge,) = parse(text)
    assert gauge.help == "A \\ and a\nnewline."
    first, second, third = gauge.samples
    assert first.labels == {"a": 'x"y\\z\n'}
    assert math.isnan(first.value)
    assert first.timestamp == 1700000000.123
    assert (second.value, second.timestamp) == (math.inf, None)
    assert (third.value, third.timestamp) == (-math.inf, -0.005)


def test_parse_reads_a_data_parallel_multiprocess_payload_without_problems() -> None:
    families = parse((DATA / "vllm_dp8.prom").read_text())
    ttft = family(families, "vllm:time_to_first_token_seconds")
    assert ttft.samples[0].name.endswith("_sum")  # the multiprocess collector writes sums first
    assert {s.labels["engine"] for s in ttft.samples} == {str(i) for i in range(8)}
    assert [f.problems for f in families if f.problems] == []


def test_sample_and_family_are_frozen_slotted_dataclasses() -> None:
    (gauge,) = parse("# TYPE g gauge\ng 1\n")
    sample = gauge.samples[0]
    for obj in (gauge, sample):
        assert dataclasses.is_dataclass(obj)
        assert not hasattr(obj, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.name = "other"  # type: ignore[misc]  # the write must fail
    assert type(sample) is Sample
    assert sample == Sample("g", {}, 1.0, None)
    assert hash(sample) == hash(Sample("g", Labels(), 1.0, None))


def test_labels_are_read_only_and_behave_as_a_dict() -> None:
    (gauge,) = parse('# TYPE g gauge\ng{b="2",a="1"} 1\n')
    labels = gauge.samples[0].labels
    assert isinstance(labels, Labels)
    assert labels == {"a": "1", "b": "2"}
    assert list(labels) == ["b", "a"]
    assert json.dumps(labels) == '{"b": "2", "a": "1"}'
    for mutate in (
        lambda: labels.__setitem__("a", "x"),
        lambda: labels.__delitem__("a"),
        lambda: labels.update(a="x"),
        lambda: labels.pop("a"),
        lambda: labels.clear(),
    ):
        with pytest.raises(TypeError):
            mutate()
    assert labels == {"a": "1", "b": "2"}


def test_parsed_families_survive_pickle_and_copy() -> None:
    families = parse((DATA / "vllm_1engine.prom").read_text())
    assert pickle.loads(pickle.dumps(families)) == families
    assert copy.deepcopy(families) == families


# --- errors ------------------------------------------------------------------------------


def test_parse_rejects_an_empty_unquoted_label_value_instead_of_dropping_the_label() -> None:
    with pytest.raises(ExpositionError, match="empty unquoted value for label 'tenant'"):
        parse("vllm:cost{tenant=} 5\n")


def test_parse_rejects_invalid_utf8_with_its_line_number() -> None:
    with pytest.raises(ExpositionError) as raised:
        parse(b'g 1\ng 2\ng{a="caf\xe9"} 3\n')
    assert (raised.value.line, raised.value.message) == (3, "invalid UTF-8 at column 9")


def test_parse_rejects_a_lone_surrogate_in_text_input() -> None:
    with pytest.raises(ExpositionError, match="lone surrogate"):
        parse('g 1\ng{a="\udcff"} 1\n')


def test_parse_rejects_input_that_is_neither_text_nor_bytes() -> None:
    with pytest.raises(TypeError):
        parse(42)  # type: ignore[arg-type]  # bad input on purpose


def test_error_messages_quote_only_a_short_escaped_excerpt_of_the_input() -> None:
    hostile = "<script>" + "\x1b[31m" + "A" * 10_000
    with pytest.raises(ExpositionError) as raised:
        parse(f"g 1\n{hostile} 1\n")
    message = raised.value.message
    assert raised.value.line == 2
    assert len(message) < 120
    assert "\x1b" not in message and "\\x1b" in message
    assert str(raised.value) == f"line 2: {message}"


def test_exposition_error_survives_pickling_for_task_queues() -> None:
    error = ExpositionError(7, "bad value")
    again = pickle.loads(pickle.dumps(error))
    assert (again.line, again.message, str(again)) == (7, "bad value", "line 7: bad value")


def test_nothing_from_a_rejected_payload_is_returned() -> None:
    good = (DATA / "vllm_1engine.prom").read_text()
    with pytest.raises(ExpositionError) as raised:
        parse(good + "broken{\n")
    assert raised.value.line == good.count("\n") + 1


@pytest.mark.parametrize("spelling", ["1_000", "١٢", "1\t", "\x0b1"])
def test_a_value_float_would_accept_is_reported_at_its_own_line(spelling: str) -> None:
    cache = LabelCache()
    parse('# TYPE g gauge\ng{a="1"} 1\n', cache=cache)  # so the bad line takes the fast path
    payload = f'# TYPE g gauge\ng{{a="1"}} {spelling}\n# TYPE g counter\n'
    for attempt in (None, cache):
        with pytest.raises(ExpositionError) as raised:
            parse(payload, cache=attempt)
        assert raised.value.line == 2
        assert "invalid value" in raised.value.message


# --- problems ------------------------------------------------------------------------------


def test_histogram_problems_name_the_series_with_escaped_label_values() -> None:
    text = (
        '# TYPE h histogram\nh_bucket{model="<script>alert(1)</script>",le="1.0"} 1\n'
        'h_count{model="<script>alert(1)</script>"} 1\n'
    )
    (histogram,) = parse(text)
    (problem,) = histogram.problems
    assert problem.startswith("no +Inf bucket in {model='<script>alert(1)</scr")
    assert len(problem) < 130


def test_histogram_checks_tolerate_buckets_out_of_order() -> None:
    text = (
        '# TYPE h histogram\nh_bucket{le="+Inf"} 3\nh_bucket{le="1.0"} 1\nh_bucket{le="2.0"} 2\n'
        "h_count 3\nh_sum 4\n"
    )
    assert parse(text)[0].problems == ()


def test_problems_are_capped_so_one_family_cannot_flood_the_page() -> None:
    lines = "".join(f'c_total{{i="{i}"}} -1\n' for i in range(50))
    (counter,) = parse("# TYPE c_total counter\n" + lines)
    assert len(counter.problems) == 5
    assert counter.problems[-1] == "…and 46 more problems"


def test_negative_counters_keep_their_value_and_gain_a_problem() -> None:
    (counter,) = parse("# TYPE c_total counter\nc_total -3\n")
    assert counter.samples[0].value == -3.0
    assert counter.problems == ("negative counter value in {}",)


# --- the label cache ---------------------------------------------------------------------


def test_a_warm_cache_gives_the_same_families_as_a_cold_parse() -> None:
    before = sample_exposition(dp=8, seed=1, warm_seconds=285.0)
    now = sample_exposition(dp=8, seed=1, warm_seconds=300.0)
    cache = LabelCache()
    parse(before, cache=cache)
    assert parse(now, cache=cache) == parse(now)


def test_a_warm_cache_hands_out_the_same_label_objects_scrape_after_scrape() -> None:
    cache = LabelCache()
    first = parse(sample_exposition(dp=1, seed=1, warm_seconds=285.0), cache=cache)
    second = parse(sample_exposition(dp=1, seed=1, warm_seconds=300.0), cache=cache)
    before = family(first, "vllm:num_requests_running").samples[0].labels
    after = family(second, "vllm:num_requests_running").samples[0].labels
    assert before is after


def test_a_cache_filled_by_the_text_format_cannot_smuggle_text_into_openmetrics() -> None:
    cache = LabelCache()
    parse('# TYPE g gauge\ng{a="1",} 1\n', cache=cache)
    with pytest.raises(ExpositionError, match="trailing comma"):
        parse('# TYPE g gauge\ng{a="1",} 1\n# EOF\n', openmetrics=True, cache=cache)


def test_the_cache_stays_bounded_when_series_keep_changing() -> None:
    cache = LabelCache(max_entries=100)
    for scrape in range(20):
        parse("".join(f'g{{i="{scrape}-{i}"}} 1\n' for i in range(100)), cache=cache)
        assert len(cache.series) <= 200
        assert len(cache.labels) <= 200
    assert parse('g{i="19-5"} 2\n', cache=cache)[0].samples[0].value == 2.0


def test_a_rejected_payload_leaves_the_cache_usable() -> None:
    cache = LabelCache()
    text = sample_exposition(dp=1, seed=2)
    with pytest.raises(ExpositionError):
        parse(text + "oops{\n", cache=cache)
    assert parse(text, cache=cache) == parse(text)


# --- OpenMetrics -------------------------------------------------------------------------


def test_openmetrics_counters_keep_their_family_name_and_hold_created_samples() -> None:
    (counter,) = parse(
        "# TYPE req counter\nreq_total 5\nreq_created 1.7e9\n# EOF\n", openmetrics=True
    )
    assert (counter.name, [s.name for s in counter.samples]) == (
        "req",
        ["req_total", "req_created"],
    )


def test_openmetrics_reads_units_and_timestamps_in_seconds() -> None:
    text = (
        "# TYPE lat_seconds gauge\n# UNIT lat_seconds seconds\nlat_seconds 0.5 1700000000.25\n# EOF"
    )
    (gauge,) = parse(text, openmetrics=True)
    assert (gauge.unit, gauge.samples[0].timestamp) == ("seconds", 1700000000.25)


def test_openmetrics_detects_vllm_names_renamed_by_content_negotiation() -> None:
    # prometheus_client issue #1177: metadata keeps the colon, samples get an underscore.
    text = "# HELP vllm:req Requests.\n# TYPE vllm:req counter\nvllm_req_total 1\n# EOF\n"
    families = parse(text, openmetrics=True)
    assert [(f.name, len(f.samples)) for f in families] == [("vllm:req", 0), ("vllm_req_total", 1)]
