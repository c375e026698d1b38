"""Each endpoint's layouts over time (`layout_runs`), as runs of consecutive frames, and
the layout of its newest frame (`current_layouts`): what the blind-spot audit reads to say
since when a metric is gone."""

from __future__ import annotations

import pytest

from inventory.store import current_layouts, layout_runs
from tests.inventory.store.storecache import new_endpoint, new_series_set, values_for, write_frame
from tests.queries.storefill import at

pytestmark = pytest.mark.django_db

OLD = (("vllm:gpu_cache_usage_perc", {"model_name": "m"}),)
NEW = (("vllm:kv_cache_usage_perc", {"model_name": "m", "engine": "0"}),)


def test_a_flip_and_back_gives_three_runs_with_their_first_and_last_frames() -> None:
    endpoint, first = new_endpoint("r0", 2)
    old = new_series_set(endpoint, OLD, 60)
    times = {first: [0, 15, 30, 45], old: [60, 75], "back": [90, 105]}
    for seconds in times[first]:
        write_frame(endpoint, first, seconds, values_for(1, 2))
    for seconds in times[old]:
        write_frame(endpoint, old, seconds, values_for(2, 1))
    for seconds in times["back"]:
        write_frame(endpoint, first, seconds, values_for(3, 2))

    runs = layout_runs(endpoint_ids=[endpoint.pk])[endpoint.pk]

    assert [(r.series_set_id, r.first_at, r.last_at, r.frames) for r in runs] == [
        (first.pk, at(0), at(45), 4),
        (old.pk, at(60), at(75), 2),
        (first.pk, at(90), at(105), 2),
    ]
    assert [name for name, _ in runs[1].series] == ["vllm:gpu_cache_usage_perc"]


def test_a_single_frame_run_and_several_endpoints_are_kept_apart() -> None:
    a, a_set = new_endpoint("a", 2)
    b, b_set = new_endpoint("b", 2)
    b_new = new_series_set(b, NEW, 30)
    write_frame(a, a_set, 0, values_for(1, 2))
    write_frame(b, b_set, 0, values_for(1, 2))
    write_frame(b, b_new, 15, values_for(1, 1))
    write_frame(b, b_set, 30, values_for(1, 2))

    runs = layout_runs(endpoint_ids=[a.pk, b.pk])

    assert [(r.series_set_id, r.frames) for r in runs[a.pk]] == [(a_set.pk, 1)]
    assert [(r.series_set_id, r.first_at, r.last_at) for r in runs[b.pk]] == [
        (b_set.pk, at(0), at(0)),
        (b_new.pk, at(15), at(15)),
        (b_set.pk, at(30), at(30)),
    ]


def test_a_window_keeps_only_its_frames_and_an_endpoint_without_any_is_left_out() -> None:
    endpoint, first = new_endpoint("r0", 2)
    idle, _ = new_endpoint("idle", 2)
    for seconds in (0, 15, 30, 45):
        write_frame(endpoint, first, seconds, values_for(1, 2))

    runs = layout_runs(endpoint_ids=[endpoint.pk, idle.pk], start=at(15), end=at(30))

    assert list(runs) == [endpoint.pk]
    assert (runs[endpoint.pk][0].first_at, runs[endpoint.pk][0].frames) == (at(15), 2)


def test_the_current_layout_is_the_newest_frames_not_the_newest_layouts() -> None:
    endpoint, first = new_endpoint("r0", 2)
    idle, _ = new_endpoint("idle", 2)
    old = new_series_set(endpoint, OLD, 15)
    write_frame(endpoint, old, 15, values_for(1, 1))
    write_frame(endpoint, first, 30, values_for(1, 2))

    layouts = current_layouts(endpoint_ids=[endpoint.pk, idle.pk])

    assert list(layouts) == [endpoint.pk]
    assert {name for name, _ in layouts[endpoint.pk]} == {
        "vllm:num_requests_waiting",
        "vllm:num_requests_running",
    }
