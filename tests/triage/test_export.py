"""The evidence pack and the Markdown of a stored walk."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.test import Client

from tests.triage.factories import HOSTILE, a_fleet, a_walk, an_incident
from triage.export import (
    evidence_markdown,
    evidence_pack,
    number_text,
    walk_markdown,
    walk_tree,
)
from triage.incidents import incident_note, incident_walk_record
from triage.walk.types import Chart


def test_the_tree_nests_nodes_by_parent_and_keeps_orphans_as_roots() -> None:
    walk = a_walk().to_dict()
    walk["nodes"].append({"id": "x.orphan", "parent": "x", "verdict": "ruled_out"})
    roots = walk_tree(walk)
    assert [r.node["id"] for r in roots] == ["ttft", "tpot", "x.orphan"]
    ttft = roots[0]
    assert [c.node["id"] for c in ttft.children] == ["ttft.queue", "ttft.prefill"]
    assert [c.node["id"] for c in ttft.children[0].children] == [
        "ttft.queue.kv_capacity",
        "ttft.queue.load",
    ]
    leaf = ttft.children[0].children[0]
    assert (leaf.verdict, leaf.verdict_class) == ("supported: cause found", "verdict-supported")


def test_a_missing_number_is_a_dash_never_zero() -> None:
    assert number_text(None, "seconds") == "—"
    assert number_text(0.0, "seconds") == "0 seconds"
    assert number_text(0.97312, "ratio") == "0.9731"


def test_the_walk_in_markdown_has_the_tree_figures_changes_and_canary() -> None:
    text = walk_markdown(a_walk().to_dict())
    assert "Window 2026-11-18 10:30 UTC to 2026-11-18 11:00 UTC" in text
    assert "Breach (ttft): TTFT p99 is 2.4 s against 0.8 s, since 2026-11-18 10:42 UTC." in text
    assert "- **ttft** (supported: cause found): Is TTFT breached? TTFT p99 tripled" in text
    assert "    - **ttft.queue.kv_capacity** (supported: cause found)" in text
    assert "  - **ttft.prefill** (insufficient evidence)" in text
    assert "    - missing: vllm:request_prefill_time_seconds on 2 of 2 replicas" in text
    assert (
        "| kv_cache_usage | 0.97 | 0.61 | 0.95 | &gt;= 0.9 | max of vllm:kv_cache_usage_perc "
        "| 1840 | 10.0.0.1:8000, 10.0.0.2:8000 |  |"
    ) in text
    assert "- 2026-11-18 10:40 UTC restart 10.0.0.2:8000: restarted" in text
    assert "Nothing is applied by FleetScope" in text
    assert "```yaml\ncanary:\n  variable: max_num_seqs\n  from: 256\n  to: 192\n```" in text
    assert "```text\nLower max_num_seqs on one replica for 30 minutes.\n```" in text


def test_the_markdown_adds_the_day_before_and_names_the_frozen_charts_when_the_walk_has_them() -> (
    None
):
    walk = a_walk()
    kv = walk.node("ttft.queue.kv_capacity")
    with_day = replace(kv, figures=(replace(kv.figures[0], day_before=0.58),))
    chart = Chart(
        "kv_usage", "ratio", "KV cache usage", (1.0, 2.0), (("10.0.0.1:8000", (0.5, None)),)
    )
    walk = replace(
        walk,
        nodes=tuple(with_day if n.id == kv.id else n for n in walk.nodes),
        day_before=("2026-11-17T10:30:00Z", "2026-11-17T11:00:00Z"),
        charts=(chart,),
    )
    text = walk_markdown(walk.to_dict())
    assert "the same window a day earlier 2026-11-17 10:30 UTC to 2026-11-17 11:00 UTC." in text
    assert "| figure | value | baseline | day_before | peers |" in text
    assert "| kv_cache_usage | 0.97 | 0.61 | 0.58 | 0.95 |" in text
    assert "Charts frozen with this walk (their series are in evidence.json): kv_usage." in text
    assert walk.to_dict()["charts"][0]["series"] == [{"replica": "10.0.0.1:8000", "v": [0.5, None]}]


def test_free_text_in_the_markdown_is_inert() -> None:
    text = walk_markdown(a_walk(reason=HOSTILE, notes=(HOSTILE,)).to_dict())
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_walk_without_canary_or_changes_says_so() -> None:
    walk = a_walk(canary=None).to_dict()
    walk["changes"] = []
    text = walk_markdown(walk)
    assert "No canary suggested." in text and "- none seen" in text


@pytest.mark.django_db
def test_the_evidence_pack_holds_the_incident_its_timeline_and_every_walk() -> None:
    incident = an_incident(a_fleet(), owner="ana", author="ana")
    incident_note(incident=incident, author="ana", text="drained 10.0.0.1")
    incident_walk_record(incident, a_walk())
    incident_walk_record(incident, a_walk(supported=False))
    pack = evidence_pack(incident)
    assert pack["incident"]["fleet"] == "prod" and pack["incident"]["owner"] == "ana"
    assert pack["incident"]["runbook"] == "ttft-queue-kv_capacity"
    assert pack["incident"]["opened_at"].endswith("Z")
    assert [e["kind"] for e in pack["timeline"]] == ["status", "note", "walk", "walk"]
    assert [w["walk"] for w in pack["walks"]] == [
        a_walk().to_dict(),
        a_walk(supported=False).to_dict(),
    ]
    text = evidence_markdown(pack)
    assert text.startswith(f"# Incident #{incident.pk}: TTFT breach on prod\n")
    assert "All times UTC." in text and "- owner: ana" in text
    assert "note (ana): drained 10.0.0.1" in text
    assert text.count("\n## Walk ") == 2


@pytest.mark.django_db
def test_the_exports_are_served_as_markdown_and_json(owner_client: Client) -> None:
    incident = an_incident(a_fleet())
    incident_walk_record(incident, a_walk())
    md = owner_client.get(f"/incidents/{incident.pk}/evidence.md")
    assert md.status_code == 200 and md["Content-Type"] == "text/markdown; charset=utf-8"
    assert "ttft.queue.kv_capacity" in md.content.decode()
    data = owner_client.get(f"/incidents/{incident.pk}/evidence.json").json()
    assert data["walks"][0]["walk"] == a_walk().to_dict()
    assert owner_client.get("/incidents/999999/evidence.json").status_code == 404
