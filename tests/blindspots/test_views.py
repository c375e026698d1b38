"""The blind-spot pages: access through the one access rule, the upload that stores and
audits (CSRF, size cap, bad files refused per file), the stored sources with their delete
buttons, the re-run buttons, the JSON, everything escaped, and the overview's badge."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from blindspots.models import AuditRun, AuditSource
from inventory.models import Fleet
from tests.blindspots.audit_fleets import DASHBOARD, REPLICAS, RULES, steady_fleet
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def steady(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return steady_fleet(tmp_path_factory)


def upload(client: Client, slug: str, *files: tuple[str, bytes]) -> tuple[int, str]:
    response = client.post(
        f"/blindspots/{slug}/upload/",
        {"files": [SimpleUploadedFile(name, content) for name, content in files]},
    )
    return response.status_code, response.content.decode()


def test_the_pages_require_login_and_a_fleet_the_viewer_may_see(
    client: Client, owner_client: Client, steady: Fleet
) -> None:
    for path in ("/blindspots/", "/blindspots/steady/", "/blindspots/steady.json"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert owner_client.get("/blindspots/nowhere/").status_code == 404
    assert owner_client.get("/blindspots/nowhere.json").status_code == 404
    assert owner_client.post("/blindspots/nowhere/run/").status_code == 404


def test_a_fleet_not_audited_yet_says_how_and_offers_the_upload_form(
    owner_client: Client, steady: Fleet
) -> None:
    page = owner_client.get("/blindspots/steady/").content.decode()
    assert "has not been audited yet" in page
    form = re.search(
        r'<form method="post" enctype="multipart/form-data"[^>]*>(.*?)</form>', page, re.DOTALL
    )
    assert form is not None and "csrfmiddlewaretoken" in form.group(1)
    assert 'name="files" multiple' in form.group(1)
    assert "Re-run with Prometheus rules" not in page
    listing = owner_client.get("/blindspots/").content.decode()
    assert "not audited yet" in listing and 'href="/blindspots/steady/"' in listing


def test_an_upload_stores_the_source_and_shows_each_item_with_its_verdict_escaped(
    owner_client: Client, steady: Fleet
) -> None:
    status, page = upload(
        owner_client,
        "steady",
        ("serving.json", DASHBOARD.read_bytes()),
        ("rules.yml", RULES.read_bytes()),
    )
    assert status == 200
    assert "Stored and audited" in page
    assert AuditSource.objects.filter(fleet=steady).count() == 2
    counts = dict(re.findall(r'data-verdict="([a-z ]+)"><span class="bs-n">(\d+)</span>', page))
    assert int(counts["blind"]) >= 3 and int(counts["live"]) >= 4
    assert re.search(r'data-verdict="errors"><span class="bs-n">3<', page) or "errors" in page
    # Each item: the verdict as a word and a colour, why, where, the rewrite as a diff.
    row = re.search(r'<tr data-verdict="blind" data-kind="rule">(.*?)</tr>', page, re.DOTALL)
    assert row is not None
    assert 'class="bs-verdict bs-blind">blind</span>' in row.group(1)
    assert "KvCacheAlmostFull" in row.group(1) and "group vllm-capacity, rule 1" in row.group(1)
    assert "renamed" in row.group(1)
    assert '<pre class="bs-diff">--- before' in row.group(1)
    assert "-vllm:gpu_cache_usage_perc &gt; 0.9" in row.group(1)
    assert "missing on" in row.group(1) and REPLICAS[0] in row.group(1)
    # A panel title and a label value with markup are text, never markup.
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;panel&#x27;)&lt;/script&gt;" in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    # Errors per item: the broken query and the Loki panel, with their position.
    assert "unclosed left parenthesis" in page and "datasource loki" in page
    sources = re.findall(r'<tr data-source="(\d+)">', page)
    assert len(sources) == 2 and page.count(">Delete</button>") == 2


def test_bad_uploads_are_refused_per_file_and_the_page_keeps_working(
    owner_client: Client, steady: Fleet
) -> None:
    status, page = upload(
        owner_client,
        "steady",
        ("broken.json", b'{"panels": [ {"title": '),
        ("proxy.json", b"<html><script>alert(1)</script></html>"),
        ("huge.json", b"{" + b" " * (11 * 1024 * 1024) + b"}"),
    )
    assert status == 400
    alert = re.search(
        r'<div class="bs-alert" role="alert" id="upload-errors">(.*?)</div>', page, re.DOTALL
    )
    assert alert is not None
    reasons = alert.group(1)
    assert "broken.json" in reasons and "proxy.json" in reasons and "huge.json" in reasons
    assert "HTML" in reasons and "10 MiB" in reasons
    assert "<script>" not in page
    assert not AuditSource.objects.exists() and not AuditRun.objects.exists()
    assert 'id="upload-form"' in page
    status, page = upload(owner_client, "steady")
    assert status == 400 and "choose a file" in page
    assert owner_client.get("/blindspots/steady/").status_code == 200


def test_forms_are_posts_with_csrf_and_delete_runs_the_audit_again(steady: Fleet) -> None:
    user_with_role("csrf", "oncall", password="csrf-password-1")
    client = Client(enforce_csrf_checks=True)
    client.login(username="csrf", password="csrf-password-1")

    def files() -> dict[str, SimpleUploadedFile]:
        return {"files": SimpleUploadedFile("rules.yml", RULES.read_bytes())}

    assert client.post("/blindspots/steady/upload/", files()).status_code == 403
    page = client.get("/blindspots/steady/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    with_token = {**files(), "csrfmiddlewaretoken": token.group(1)}
    assert client.post("/blindspots/steady/upload/", with_token).status_code == 200
    source = AuditSource.objects.get(fleet=steady)
    delete = f"/blindspots/steady/sources/{source.pk}/delete/"
    assert client.get(delete).status_code == 405
    assert client.post(delete).status_code == 403
    response = client.post(delete, {"csrfmiddlewaretoken": token.group(1)})
    assert response.status_code == 302 and response["Location"] == "/blindspots/steady/"
    assert not AuditSource.objects.exists() and AuditRun.objects.count() == 2
    assert client.post(delete, {"csrfmiddlewaretoken": token.group(1)}).status_code == 404


def test_the_prometheus_button_shows_only_when_prometheus_is_configured(
    owner_client: Client, steady: Fleet
) -> None:
    with override_settings(PROMETHEUS_URL="http://127.0.0.1:9"):
        page = owner_client.get("/blindspots/steady/").content.decode()
        assert "Re-run with Prometheus rules" in page
        # Nothing answers on port 9: the run is stored with that one error.
        response = owner_client.post("/blindspots/steady/run/", {"prometheus_rules": "1"})
    assert response.status_code == 302
    run = AuditRun.objects.get(fleet=steady)
    assert run.with_prometheus_rules
    (error,) = run.report["errors"]
    assert error["name"] == "Prometheus rules API" and "unreachable" in error["reason"]
    page = owner_client.get("/blindspots/steady/").content.decode()
    assert "Prometheus rules API" in page


def test_the_json_is_the_latest_run(owner_client: Client, steady: Fleet) -> None:
    assert owner_client.get("/blindspots/steady.json").json()["run"] is None
    upload(owner_client, "steady", ("rules.yml", RULES.read_bytes()))
    data = owner_client.get("/blindspots/steady.json").json()
    assert data["fleet"] == "steady" and data["new_blind_24h"] == []
    names = {row["name"]: row for row in data["run"]["items"]}
    assert names["KvCacheAlmostFull"]["verdict"] == "blind"
    assert names["KvCacheAlmostFull"]["rewrite"]["after"].startswith("(vllm:kv_cache_usage_perc")
    json.dumps(data)


def test_the_overview_badge_counts_items_that_were_live_in_the_last_24_hours(
    owner_client: Client, steady: Fleet
) -> None:
    overview = owner_client.get("/fleets/steady/").content.decode()
    assert "blind-spots-badge" not in overview
    upload(owner_client, "steady", ("rules.yml", RULES.read_bytes()))
    # An earlier run, an hour ago, in which the renamed metric's rule was still live.
    run = AuditRun.objects.get(fleet=steady)
    earlier = dict(run.report)
    earlier["items"] = [{**row, "verdict": "live"} for row in run.report["items"]]
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    AuditRun.objects.create(
        fleet=steady,
        started_at=hour_ago,
        finished_at=hour_ago,
        report=earlier,
        live_keys=[row["key"] for row in earlier["items"]],
    )
    blind_now = sum(1 for row in run.report["items"] if row["verdict"] != "live")
    overview = owner_client.get("/fleets/steady/").content.decode()
    badge = re.search(
        r'<a class="badge badge-bad" id="blind-spots-badge" href="([^"]+)">'
        r"([^<]+)</a>",
        overview,
    )
    assert badge is not None
    assert badge.group(1) == "/blindspots/steady/"
    assert badge.group(2) == f"{blind_now} blind spots new in 24 h"
    page = owner_client.get("/blindspots/steady/").content.decode()
    assert 'id="new-blind"' in page and "KvCacheAlmostFull" in page
