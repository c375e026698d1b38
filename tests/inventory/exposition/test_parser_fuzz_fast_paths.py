"""The parser's fast paths (a warm label cache, the layout template, the bulk read) accept
and read every payload as the line-by-line judge (`fast=False`) does."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from inventory.exposition.parser import ExpositionError, LabelCache, parse
from tests.inventory.exposition.fuzzing import FUZZ, SEEDS, mutated_payloads, text_expositions
from tests.inventory.exposition.reference import our_view


def test_a_warm_cache_never_changes_what_is_accepted() -> None:
    rng = random.Random(7)
    cache = LabelCache(max_entries=64)
    for seed in SEEDS:
        if _accepts(seed):
            parse(seed, cache=cache)
    for _ in range(300):
        mutated = bytearray(rng.choice(SEEDS).encode())
        if mutated:
            mutated[rng.randrange(len(mutated))] = rng.choice(b' {}",=\\\t\n#x0')
        cold = _outcome(bytes(mutated), None)
        warm = _outcome(bytes(mutated), cache)
        assert cold == warm


def _accepts(text: str) -> bool:
    try:
        parse(text)
    except ExpositionError:
        return False
    return True


def _outcome(payload: bytes, cache: LabelCache | None) -> Any:
    try:
        return our_view(parse(payload, cache=cache))
    except ExpositionError as exc:
        return (exc.line, exc.message)


def _outcome_of(payload: str | bytes, **options: Any) -> Any:
    try:
        families = parse(payload, **options)
    except ExpositionError as exc:
        return (exc.line, exc.message)
    return [
        (view, f.help, f.problems) for view, f in zip(our_view(families), families, strict=True)
    ]


@FUZZ
@given(st.one_of(mutated_payloads(), text_expositions().map(str.encode)))
def test_the_fast_paths_read_every_payload_as_the_line_by_line_judge_does(payload: bytes) -> None:
    judged = _outcome_of(payload, fast=False)
    assert _outcome_of(payload) == judged
    cache = LabelCache()
    _outcome_of(payload, cache=cache)
    assert _outcome_of(payload, cache=cache) == judged  # the layout template
    cache.template = None
    assert _outcome_of(payload, cache=cache) == judged  # the label cache, in bulk
