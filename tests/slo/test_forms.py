"""SloForm: milliseconds and percent in, seconds and fractions saved, service errors on the
field the person typed into."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.models import Fleet
from slo.forms import SloForm
from slo.models import Objective, Slo
from tests.slo.conftest import engine_instances, form_data

pytestmark = pytest.mark.django_db


def saved(fleet: Fleet, **given: Any) -> Slo:
    form = SloForm(form_data(**given))
    slo = form.save(fleet)
    assert slo is not None, form.errors
    return slo


def refused(fleet: Fleet, **given: Any) -> SloForm:
    form = SloForm(form_data(**given))
    assert form.save(fleet) is None
    assert not Slo.objects.exists()
    assert not Objective.objects.exists()
    return form


def test_form_saves_thresholds_in_seconds_and_targets_as_fractions(fleet: Fleet) -> None:
    slo = saved(fleet, success_target="99.5", e2e_threshold_ms="3000", e2e_target="99")
    assert {o.kind: (o.threshold_seconds, o.target) for o in slo.objectives.all()} == {
        "ttft": (0.2, 0.999),
        "e2e": (3.0, 0.99),
        "success": (None, 0.995),
    }
    assert (slo.slug, slo.window_days, slo.bad_finish_reasons) == (
        "chat-latency",
        28,
        ["abort", "error"],
    )


def test_form_reads_instances_as_a_comma_separated_list(fleet: Fleet) -> None:
    first, second = engine_instances(fleet)
    slo = saved(fleet, instances=f" {first} ,{second},", model_name="llama", owner="team-a")
    assert (slo.instances, slo.model_name, slo.owner) == ([first, second], "llama", "team-a")


def test_form_puts_a_target_of_100_percent_on_the_target_field(fleet: Fleet) -> None:
    form = refused(fleet, ttft_target="100")
    assert form.errors == {
        "ttft_target": ["a target of 100% leaves no error budget; use at most 99.999%"]
    }


@pytest.mark.parametrize(
    ("threshold", "message"),
    [
        ("0", "must be more than 0 seconds, not 0"),
        ("-5", "must be more than 0 seconds, not -0.005"),
        ("nan", "Enter a number."),
        ("inf", "Enter a number."),
        ("100000000", "100000 s is more than a day; thresholds are in seconds (0.2 for 200 ms)"),
    ],
)
def test_form_puts_a_bad_threshold_on_its_field(fleet: Fleet, threshold: str, message: str) -> None:
    form = refused(fleet, ttft_threshold_ms=threshold)
    (error,) = form.errors["ttft_threshold_ms"]
    assert str(error).startswith(message)


@pytest.mark.parametrize("target", ["0", "-1", "150", "nan"])
def test_form_rejects_a_target_out_of_range(fleet: Fleet, target: str) -> None:
    form = refused(fleet, ttft_target=target)
    assert list(form.errors) == ["ttft_target"]


def test_form_wants_both_halves_of_an_objective(fleet: Fleet) -> None:
    form = refused(fleet, itl_threshold_ms="50", e2e_target="99")
    assert form.errors == {
        "itl_target": ["give a target for this threshold"],
        "e2e_threshold_ms": ["give a threshold for this target"],
    }


def test_form_needs_at_least_one_objective(fleet: Fleet) -> None:
    form = refused(fleet, ttft_threshold_ms=None, ttft_target=None)
    assert form.non_field_errors() == ["give at least one objective"]


def test_form_puts_a_missing_metric_on_the_objective_the_fleet_lacks(old_fleet: Fleet) -> None:
    form = refused(old_fleet, tpot_threshold_ms="40", tpot_target="99")
    (error,) = form.errors["tpot_threshold_ms"]
    assert str(error).startswith("this fleet does not expose tpot: not exposed by any endpoint")


def test_form_puts_a_taken_slug_on_the_slug_field(fleet: Fleet) -> None:
    saved(fleet)
    form = SloForm(form_data())
    assert form.save(fleet) is None
    assert form.errors == {
        "slug": ["fleet prod already has an SLO 'chat-latency'; pick another slug"]
    }
    assert Slo.objects.count() == 1


def test_form_rejects_an_instance_outside_the_fleet(fleet: Fleet) -> None:
    form = refused(fleet, instances="10.0.0.1:8000")
    assert form.errors == {"instances": ["10.0.0.1:8000 is not an enabled endpoint of fleet prod"]}


def test_a_preset_prefills_the_form_in_milliseconds_and_percent() -> None:
    form = SloForm(preset="chat")
    assert form.initial["name"] == "Chat"
    assert (form.initial["ttft_threshold_ms"], form.initial["ttft_target"]) == (200.0, 99.0)
    assert (form.initial["itl_threshold_ms"], form.initial["itl_target"]) == (50.0, 99.0)
    assert "e2e_target" not in form.initial


def test_a_chosen_preset_gives_its_objectives_when_none_are_typed(fleet: Fleet) -> None:
    slo = saved(fleet, preset="batch", name=None, ttft_threshold_ms=None, ttft_target=None)
    assert slo.name == "Batch"
    assert [(o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()] == [
        ("success", None, 0.99)
    ]


def test_typed_objectives_win_over_the_chosen_preset(fleet: Fleet) -> None:
    slo = saved(fleet, preset="batch")
    assert [o.kind for o in slo.objectives.all()] == ["ttft"]


def test_an_unknown_preset_is_a_form_error(fleet: Fleet) -> None:
    form = refused(fleet, preset="realtime")
    assert list(form.errors) == ["preset"]
