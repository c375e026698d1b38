"""The incident pages: login, CSRF on every form, the walk as a tree, and hostile text
shown as text."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from slo.models import Slo
from tests.roles import user_with_role
from tests.triage.factories import HOSTILE, a_fleet, a_walk, an_incident, walk_substituted
from triage.incidents import incident_note, incident_resolve, incident_walk_record
from triage.models import Incident, IncidentStatus
from triage.walk.thresholds import threshold_table
from triage.walk.types import Chart, NodeResult

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict(owner: User) -> Client:
    """A signed-in browser whose POSTs are CSRF-checked, as in production."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    return client


def csrf_token(client: Client, page: str) -> str:
    assert client.get(page).status_code == 200
    return client.cookies["csrftoken"].value


def test_every_page_requires_login(client: Client) -> None:
    incident = an_incident(a_fleet())
    for path in (
        "/incidents/",
        "/incidents/new/",
        f"/incidents/{incident.pk}/",
        f"/incidents/{incident.pk}/evidence.md",
        f"/incidents/{incident.pk}/evidence.json",
        "/incidents/runbooks/",
        "/incidents/runbooks/healthy/",
    ):
        response = client.get(path)
        assert response.status_code == 302 and "/login/" in response["Location"], path
    response = client.post(f"/incidents/{incident.pk}/notes/", {"text": "x"})
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_list_shows_open_incidents_first(owner_client: Client) -> None:
    fleet = a_fleet()
    done = an_incident(fleet, title="Old and done")
    incident_resolve(incident=done, author="ana")
    an_incident(fleet, title="Burning now")
    page = owner_client.get("/incidents/").content.decode()
    assert page.index("Burning now") < page.index("Old and done")
    assert 'id="incidents-unresolved"' in page and 'id="incidents-resolved"' in page


def test_opening_an_incident_needs_a_csrf_token_then_walks_at_once(
    strict: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = walk_substituted(monkeypatch)
    a_fleet()
    form = {"fleet": "prod", "title": "TTFT up", "severity": "critical"}
    assert strict.post("/incidents/new/", form).status_code == 403
    assert not Incident.objects.exists()
    token = csrf_token(strict, "/incidents/new/")
    response = strict.post("/incidents/new/", {**form, "csrfmiddlewaretoken": token})
    incident = Incident.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/incidents/{incident.pk}/"
    assert (incident.owner, incident.severity) == ("owner", "critical")
    assert incident.walks.count() == 1 and len(calls) == 1


def test_a_link_from_an_slo_fills_in_the_new_incident_form(owner_client: Client) -> None:
    fleet = a_fleet()
    slo = Slo.objects.create(fleet=fleet, slug="chat", name="Chat")
    Slo.objects.create(fleet=a_fleet("other"), slug="chat", name="Other chat")
    page = owner_client.get(
        "/incidents/new/", {"fleet": "prod", "slo": "chat", "title": "SLO Chat: burning"}
    ).content.decode()
    assert '<option value="prod" selected>' in page
    assert f'<option value="{slo.pk}" selected>' in page  # prod's chat, not other's
    assert 'value="SLO Chat: burning"' in page
    unknown = owner_client.get("/incidents/new/", {"fleet": "prod", "slo": "nope"})
    assert unknown.status_code == 200
    assert f'<option value="{slo.pk}" selected>' not in unknown.content.decode()


def test_a_form_error_is_shown_not_a_crash(owner_client: Client) -> None:
    a_fleet()
    response = owner_client.post("/incidents/new/", {"fleet": "nowhere", "title": ""})
    assert response.status_code == 200
    assert "errorlist" in response.content.decode() and not Incident.objects.exists()


def test_the_detail_shows_the_walk_as_a_tree_with_figures_canary_and_changes(
    owner_client: Client,
) -> None:
    incident = an_incident(a_fleet(), started_at=None)
    incident_walk_record(incident, a_walk())
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert 'id="walk-tree"' in page
    assert 'data-node="ttft.queue.kv_capacity" data-verdict="supported"' in page
    assert 'class="verdict verdict-supported">supported: cause found' in page
    assert 'class="verdict verdict-ruled-out">ruled out' in page
    assert "Missing: vllm:request_prefill_time_seconds on 2 of 2 replicas" in page
    assert "max of vllm:kv_cache_usage_perc" in page and "<td>0.61</td>" in page
    assert ", since <strong>2026-11-18 10:42 UTC</strong>." in page
    # Opened without an alert: the start shown is the walk's, and says so.
    assert '<dd>2026-11-18 10:42 UTC <span class="muted">(where the walk\'s figures turned' in page
    assert "Nothing is applied by FleetScope" in page
    assert '<pre class="yaml" id="canary-yaml">canary:\n  variable: max_num_seqs' in page
    assert "10.0.0.2:8000</span>: restarted" in page
    assert 'href="/incidents/runbooks/ttft-queue-kv_capacity/"' in page
    assert 'id="permalink" rel="bookmark">' in page and f'href="/incidents/{incident.pk}/"' in page
    assert "All times UTC" in page


def test_an_earlier_walk_can_be_shown_and_a_foreign_one_is_a_404(owner_client: Client) -> None:
    fleet = a_fleet()
    incident, other = an_incident(fleet), an_incident(fleet, title="other")
    first = incident_walk_record(incident, a_walk(supported=False))
    incident_walk_record(incident, a_walk())
    foreign = incident_walk_record(other, a_walk())
    page = owner_client.get(f"/incidents/{incident.pk}/?walk={first.pk}").content.decode()
    assert 'data-node="ttft.queue.kv_capacity" data-verdict="insufficient"' in page
    assert owner_client.get(f"/incidents/{incident.pk}/?walk={foreign.pk}").status_code == 404
    assert owner_client.get("/incidents/999999/").status_code == 404


def test_notes_and_alert_labels_are_shown_as_text(owner_client: Client) -> None:
    incident = an_incident(
        a_fleet(),
        alert_fingerprint="abcd",
        alert_labels={"alertname": HOSTILE},
        alert_annotations={"summary": HOSTILE},
    )
    incident_note(incident=incident, author="ana", text=HOSTILE)
    incident_walk_record(incident, a_walk(reason=HOSTILE))
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "<script>alert(1)" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4


def test_a_note_needs_a_csrf_token(strict: Client) -> None:
    incident = an_incident(a_fleet())
    url = f"/incidents/{incident.pk}/notes/"
    assert strict.post(url, {"text": "restarted"}).status_code == 403
    token = csrf_token(strict, f"/incidents/{incident.pk}/")
    response = strict.post(url, {"text": "restarted", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert incident.events.get(kind="note").author == "owner"


def test_status_buttons_acknowledge_and_resolve_with_csrf(strict: Client) -> None:
    incident = an_incident(a_fleet())
    url = f"/incidents/{incident.pk}/status/"
    assert strict.post(url, {"action": "resolve"}).status_code == 403
    token = csrf_token(strict, f"/incidents/{incident.pk}/")

    def act(**data: Any) -> Incident:
        assert strict.post(url, {**data, "csrfmiddlewaretoken": token}).status_code == 302
        incident.refresh_from_db()
        return incident

    assert act(action="acknowledge", owner="bo").owner == "bo"
    assert act(action="resolve").status == IncidentStatus.RESOLVED
    assert act(action="reopen").status == IncidentStatus.OPEN
    bad = strict.post(url, {"action": "delete", "csrfmiddlewaretoken": token})
    assert bad.status_code == 400


def test_walking_again_stores_another_walk(
    owner_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    walk_substituted(monkeypatch)
    incident = an_incident(a_fleet())
    assert owner_client.post(f"/incidents/{incident.pk}/walks/").status_code == 302
    assert incident.walks.count() == 1
    assert owner_client.get(f"/incidents/{incident.pk}/walks/").status_code == 405


def test_a_walk_that_finds_the_fleet_healthy_says_no_cause_was_found(
    owner_client: Client,
) -> None:
    walk = a_walk(supported=False)
    healthy = NodeResult("healthy", "Is the fleet healthy?", True, "supported", "no breach")
    incident = an_incident(a_fleet())
    incident_walk_record(incident, replace(walk, nodes=(*walk.nodes, healthy)))
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "No cause found: every side the walk could read is within its baseline" in page
    assert "Cause found:" not in page


def test_the_detail_shows_the_thresholds_the_walk_used(owner_client: Client) -> None:
    incident = an_incident(a_fleet(), started_at=None)
    incident_walk_record(incident, replace(a_walk(), thresholds=threshold_table()))
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert 'id="thresholds"' in page
    assert "<td>kv_full</td><td>&gt;= 0.9 ratio</td>" in page


def test_the_detail_draws_the_frozen_series_and_the_day_before_beside_the_baseline(
    owner_client: Client,
) -> None:
    chart = Chart(
        "kv_usage",
        "ratio",
        "KV cache usage (gauge) (vllm:kv_cache_usage_perc)",
        (1_795_000_000.0, 1_795_000_030.0),
        (("10.0.0.1:8000", (0.61, None)), (HOSTILE, (0.5, 0.52))),
    )
    walk = a_walk()
    kv = walk.node("ttft.queue.kv_capacity")
    with_day = replace(kv, figures=(replace(kv.figures[0], day_before=0.58),))
    walk = replace(
        walk,
        nodes=tuple(with_day if n.id == kv.id else n for n in walk.nodes),
        day_before=("2026-11-17T10:12:00Z", "2026-11-17T10:42:00Z"),
        charts=(chart,),
    )
    incident = an_incident(a_fleet())
    incident_walk_record(incident, walk)
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "also the same window a day earlier, 2026-11-17 10:12 UTC to 2026-11-17 10:42" in page
    assert '<th scope="col">A day earlier</th>' in page and "<td>0.58</td>" in page
    assert '<div class="plot" data-chart="chart-kv_usage"></div>' in page
    assert 'id="incident-charts" type="application/json"' in page
    assert "embedded_charts" in page and 'data-source="incident-charts"' in page
    # The hostile replica name reaches the page only inside the JSON data block, escaped.
    assert HOSTILE not in page


def test_a_walk_without_charts_loads_no_plotting_script(owner_client: Client) -> None:
    incident = an_incident(a_fleet())
    incident_walk_record(incident, a_walk())
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert 'id="charts"' not in page and "plotly" not in page
    assert '<th scope="col">A day earlier</th>' not in page


@pytest.mark.parametrize(("role", "offered"), [("viewer", False), ("oncall", True)])
def test_the_forms_are_offered_only_to_roles_that_may_use_them(role: str, offered: bool) -> None:
    incident = an_incident(a_fleet())
    incident_walk_record(incident, a_walk())
    client = Client()
    client.force_login(user_with_role(f"u-{role}", role))
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert ('id="note-form"' in page) is offered and ('id="status-actions"' in page) is offered
    listing = client.get("/incidents/").content.decode()
    assert ('id="incident-new-link"' in listing) is offered
