"""On every payload our parser accepts, it agrees with prometheus_client (the reference
implementation), modulo the deliberate shape differences `reference_view` undoes."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as reference_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as reference_text

from fleetsim.api import sample_exposition
from fleetsim.config import DIALECTS, DIALECTS_WITH_ENGINE_LABEL
from inventory.exposition.parser import ExpositionError, parse
from tests.inventory.exposition.fuzzing import DATA, FUZZ, mutated_payloads, text_expositions
from tests.inventory.exposition.reference import (
    assert_agrees_with_reference,
    our_view,
    reference_view,
    undo_counter_rename,
)


@FUZZ
@given(text_expositions())
def test_parse_agrees_with_prometheus_client_on_generated_expositions(text: str) -> None:
    assert_agrees_with_reference(text)


# Data parallelism needs the engine label, so only those dialects get dp 8.
FLEETSIM_SHAPES = [(d, 1) for d in DIALECTS] + [(d, 8) for d in DIALECTS_WITH_ENGINE_LABEL]


@pytest.mark.parametrize(("dialect", "dp"), FLEETSIM_SHAPES)
def test_parse_agrees_with_prometheus_client_on_fleetsim_payloads(dialect: str, dp: int) -> None:
    text = sample_exposition(dialect=dialect, dp=dp, seed=3, warm_seconds=120.0)
    assert_agrees_with_reference(text)
    assert not [f.problems for f in parse(text) if f.problems]


@pytest.mark.parametrize("name", ["vllm_1engine.prom", "vllm_dp8.prom"])
def test_parse_agrees_with_prometheus_client_on_recorded_payloads(name: str) -> None:
    assert_agrees_with_reference((DATA / name).read_text())


def test_openmetrics_parse_agrees_with_prometheus_client_on_its_own_output() -> None:
    from prometheus_client import CollectorRegistry, Counter, Enum, Histogram, Info
    from prometheus_client.openmetrics.exposition import generate_latest

    registry = CollectorRegistry()
    Counter("requests", "Requests.", ["code"], registry=registry).labels("200").inc(3)
    histogram = Histogram("latency_seconds", "Latency.", buckets=[0.1, 1], registry=registry)
    histogram.observe(0.5)
    Info("build", "Build.", registry=registry).info({"version": "1"})
    Enum("state", "State.", states=["up", "down"], registry=registry).state("up")
    text = generate_latest(registry).decode()
    ours = [
        (f.name, f.type, [(s.name, dict(s.labels), s.value) for s in f.samples])
        for f in parse(text, openmetrics=True)
    ]
    reference = [
        (f.name, f.type, [(s.name, dict(s.labels), s.value) for s in f.samples])
        for f in reference_openmetrics(text)
    ]
    assert ours == reference


# Lines prometheus_client's text parser reads otherwise than the format (and promtool) do:
# it splits comments at any whitespace and takes the second word as the keyword, so
# `#HELP x y` is a plain comment to it and `#{ TYPE g gauge` a TYPE line; and it needs
# a blank between a metric name and a value the name cannot run into (`x-1`).
_COMMENT_BOTH_READ_ALIKE = re.compile(r"#|# [^ \t][^\t]*")
_VALUE_GLUED_TO_NAME = re.compile(r"[ \t]*[a-zA-Z_:][a-zA-Z0-9_:]*[^a-zA-Z0-9_:{ \t]")


def _prometheus_client_misreads(text: str) -> bool:
    for line in text.split("\n"):
        stripped = line.strip(" \t")
        if stripped[:1] == "#":
            plain = stripped.isascii() and stripped.isprintable() or stripped == "#"
            if not plain or _COMMENT_BOTH_READ_ALIKE.fullmatch(stripped) is None:
                return True
        elif _VALUE_GLUED_TO_NAME.match(line):
            return True
    return False


@FUZZ
@given(mutated_payloads())
@example(b"# TYPE a_total counter\na_total 1\n# HELP a_created x\na_total 2\n")
def test_whatever_we_accept_prometheus_client_reads_the_same_way(payload: bytes) -> None:
    try:
        text = payload.decode()
        ours = our_view(parse(text))
    except (ExpositionError, UnicodeDecodeError):
        return
    if _prometheus_client_misreads(text):
        return
    reference = undo_counter_rename(reference_view(reference_text(text)), ours)
    assert ours == reference
