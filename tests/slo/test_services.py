"""slo_create and slo_from_preset: every bad input names its field and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.models import Fleet
from slo.models import Objective, Slo
from slo.objectives import MAX_THRESHOLD_SECONDS
from slo.presets import PRESETS
from slo.services import ObjectiveInput, SloDefinitionError, slo_create, slo_from_preset
from tests.slo.conftest import engine_instances

pytestmark = pytest.mark.django_db

TTFT = ObjectiveInput("ttft", 0.2, 0.99)


def create(fleet: Fleet, **given: Any) -> Slo:
    values: dict[str, Any] = {"name": "Chat latency", "objectives": [TTFT]}
    return slo_create(fleet=fleet, **(values | given))


def refused(fleet: Fleet, **given: Any) -> SloDefinitionError:
    """The error `given` raises, after checking nothing was written."""
    before = (Slo.objects.count(), Objective.objects.count())
    with pytest.raises(SloDefinitionError) as caught:
        create(fleet, **given)
    assert (Slo.objects.count(), Objective.objects.count()) == before
    return caught.value


def test_create_saves_the_slo_and_its_objectives(fleet: Fleet) -> None:
    instances = engine_instances(fleet)
    slo = create(
        fleet,
        objectives=[TTFT, ObjectiveInput("success", None, 0.995)],
        window_days=7,
        model_name="llama",
        instances=instances,
        owner="inference-team",
        runbook_url="https://runbooks.example.com/chat",
        bad_finish_reasons=["error", "abort", "length"],
        description="people read the stream",
    )
    slo.refresh_from_db()
    assert (slo.slug, slo.name, slo.window_days) == ("chat-latency", "Chat latency", 7)
    assert slo.instances == instances
    # Stored in the catalog's order of finish reasons, whatever order they came in.
    assert slo.bad_finish_reasons == ["length", "abort", "error"]
    assert sorted((o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()) == [
        ("success", None, 0.995),
        ("ttft", 0.2, 0.99),
    ]


def test_create_takes_a_given_slug_and_refuses_one_the_fleet_already_has(fleet: Fleet) -> None:
    assert create(fleet, slug="chat").slug == "chat"
    error = refused(fleet, name="Another", slug="chat")
    assert str(error) == "slug: fleet prod already has an SLO 'chat'; pick another slug"
    assert error.field == "slug"


def test_a_slug_that_names_a_page_is_refused_so_every_slo_keeps_its_page(fleet: Fleet) -> None:
    error = refused(fleet, name="New")  # slugifies to "new": /slos/prod/new/ is the form
    assert error.field == "slug"
    assert "names a page of the fleet's SLOs" in str(error)
    assert not Slo.objects.filter(fleet=fleet).exists()


def test_the_same_slug_is_free_in_another_fleet(fleet: Fleet, old_fleet: Fleet) -> None:
    create(fleet)
    assert create(old_fleet).slug == "chat-latency"


@pytest.mark.parametrize(
    ("threshold", "message"),
    [
        (0.0, "must be more than 0 seconds, not 0"),
        (-0.2, "must be more than 0 seconds, not -0.2"),
        (float("nan"), "must be a finite number of seconds, not nan"),
        (float("inf"), "must be a finite number of seconds, not inf"),
        (
            200_000.0,
            "200000 s is more than a day; thresholds are in seconds (0.2 for 200 ms), "
            f"at most {MAX_THRESHOLD_SECONDS:g}",
        ),
        (None, "a ttft objective needs a threshold in seconds"),
        ("0.2", "must be a finite number of seconds, not 0.2"),
    ],
)
def test_create_rejects_a_bad_threshold(fleet: Fleet, threshold: Any, message: str) -> None:
    error = refused(fleet, objectives=[ObjectiveInput("ttft", threshold, 0.99)])
    assert str(error) == f"objectives[0].threshold_seconds: {message}"


def test_create_rejects_a_threshold_on_the_success_objective(fleet: Fleet) -> None:
    error = refused(fleet, objectives=[TTFT, ObjectiveInput("success", 1.0, 0.99)])
    assert str(error) == (
        "objectives[1].threshold_seconds: the success objective counts finishes: "
        "it takes no threshold"
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (1.0, "a target of 100% leaves no error budget; use at most 99.999%"),
        (
            1.5,
            "a target of 150% is more than 100%; a target is the fraction of events that must "
            "be good, at most 0.99999 (99.999%)",
        ),
        (0.0, "a target of 0% promises nothing; give a fraction above 0, such as 0.99"),
        (-0.5, "a target of -50% promises nothing; give a fraction above 0, such as 0.99"),
        (float("nan"), "must be a finite number between 0 and 1 (0.999 for 99.9%), not nan"),
        (float("inf"), "must be a finite number between 0 and 1 (0.999 for 99.9%), not inf"),
        (True, "must be a finite number between 0 and 1 (0.999 for 99.9%), not True"),
    ],
)
def test_create_rejects_a_bad_target_naming_the_objective(
    fleet: Fleet, target: Any, message: str
) -> None:
    error = refused(fleet, objectives=[TTFT, ObjectiveInput("e2e", 3.0, target)])
    assert str(error) == f"objectives[1].target: {message}"
    assert error.field == "objectives[1].target"


def test_create_rejects_two_objectives_of_one_kind(fleet: Fleet) -> None:
    error = refused(fleet, objectives=[TTFT, ObjectiveInput("ttft", 0.5, 0.9)])
    assert str(error) == (
        "objectives[1].kind: objectives[0] is already a ttft objective; "
        "an SLO holds at most one objective of each kind"
    )


def test_create_rejects_an_slo_without_objectives(fleet: Fleet) -> None:
    assert str(refused(fleet, objectives=[])) == "objectives: give at least one objective"


def test_create_rejects_an_unknown_objective_kind(fleet: Fleet) -> None:
    error = refused(fleet, objectives=[ObjectiveInput("p99", 0.2, 0.99)])
    assert str(error) == (
        "objectives[0].kind: unknown objective kind 'p99'; use ttft, itl, tpot, e2e, success"
    )


def test_create_rejects_an_objective_the_fleet_does_not_expose(old_fleet: Fleet) -> None:
    error = refused(old_fleet, objectives=[TTFT, ObjectiveInput("tpot", 0.05, 0.99)])
    assert error.field == "objectives[1].kind"
    assert str(error).startswith(
        "objectives[1].kind: this fleet does not expose tpot: not exposed by any endpoint; "
        "vllm:request_time_per_output_token_seconds exists only since 2025-09-24"
    )


def test_an_old_fleet_still_takes_itl_under_its_older_name(old_fleet: Fleet) -> None:
    slo = create(old_fleet, objectives=[ObjectiveInput("itl", 0.05, 0.99)])
    assert [o.kind for o in slo.objectives.all()] == ["itl"]


def test_create_rejects_every_objective_on_a_fleet_with_only_gpu_exporters(
    gpu_only_fleet: Fleet,
) -> None:
    error = refused(gpu_only_fleet, objectives=[ObjectiveInput("success", None, 0.99)])
    assert str(error) == (
        "objectives[0].kind: this fleet does not expose success: not exposed by any endpoint"
    )


def test_create_checks_exposure_on_the_selected_instances_only(fleet: Fleet) -> None:
    dcgm = "127.0.0.1:19000"
    error = refused(fleet, instances=[dcgm])
    assert str(error) == (
        "objectives[0].kind: this fleet does not expose ttft: not exposed by any endpoint"
    )


def test_create_rejects_an_instance_that_is_not_in_the_fleet(fleet: Fleet) -> None:
    error = refused(fleet, instances=["10.9.9.9:8000"])
    assert str(error) == "instances: 10.9.9.9:8000 is not an enabled endpoint of fleet prod"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"window_days": 14},
            "window_days: 14 is not a window FleetScope keeps; use 7, 28, 30 days",
        ),
        (
            {"bad_finish_reasons": []},
            "bad_finish_reasons: give at least one finish reason that counts as bad",
        ),
        (
            {"bad_finish_reasons": ["timeout"]},
            "bad_finish_reasons: 'timeout' is not a vLLM finished_reason; use stop, "
            "length, abort, error, repetition",
        ),
        ({"bad_finish_reasons": "abort"}, "bad_finish_reasons: must be a list of finish reasons"),
        ({"name": "  "}, "name: must not be empty"),
        ({"name": "x" * 201}, "name: at most 200 characters, not 201"),
        ({"name": "!!!"}, "slug: cannot make a slug of '!!!'; give one"),
        (
            {"slug": "Not A Slug"},
            "slug: 'Not A Slug' is not a slug (lower-case letters, digits, - and _, at most 64)",
        ),
        (
            {"runbook_url": "ftp://runbooks/x"},
            "runbook_url: 'ftp://runbooks/x' is not an http(s) URL",
        ),
        ({"min_bad_events": -1}, "min_bad_events: must be a whole number, 0 or more, not -1"),
    ],
)
def test_create_rejects_bad_slo_fields(fleet: Fleet, given: dict[str, Any], message: str) -> None:
    assert str(refused(fleet, **given)) == message


@pytest.mark.parametrize("key", sorted(PRESETS))
def test_each_preset_creates_its_objectives_over_the_whole_fleet(fleet: Fleet, key: str) -> None:
    slo = slo_from_preset(fleet, key)
    preset = PRESETS[key]
    assert slo.name == preset.name
    assert (slo.window_days, slo.instances, slo.model_name) == (28, [], "")
    assert sorted((o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()) == sorted(
        (o.kind, o.threshold_seconds, o.target) for o in preset.objectives
    )


def test_chat_preset_asks_for_a_fast_first_token_and_a_steady_pace(fleet: Fleet) -> None:
    slo = slo_from_preset(fleet, "chat", name="Support bot")
    assert (slo.slug, slo.name) == ("support-bot", "Support bot")
    assert {o.kind: (o.threshold_seconds, o.target) for o in slo.objectives.all()} == {
        "ttft": (0.2, 0.99),
        "itl": (0.05, 0.99),
    }


def test_an_unknown_preset_is_refused_and_writes_nothing(fleet: Fleet) -> None:
    with pytest.raises(SloDefinitionError) as caught:
        slo_from_preset(fleet, "realtime")
    assert (
        str(caught.value)
        == "preset: unknown preset 'realtime'; use chat, rag, code, content, batch"
    )
    assert not Slo.objects.exists()


def test_a_preset_needing_a_metric_the_fleet_lacks_writes_nothing(gpu_only_fleet: Fleet) -> None:
    with pytest.raises(SloDefinitionError, match=r"^objectives\[0\]\.kind: this fleet does not"):
        slo_from_preset(gpu_only_fleet, "chat")
    assert not Slo.objects.exists()
    assert not Objective.objects.exists()
