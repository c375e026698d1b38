"""The seeded runbooks (one per leaf, real metric names only), their inert rendering, and
their pages."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from inventory.catalog import entries_for_name
from triage.models import Runbook
from triage.runbooks import LEAVES, RUNBOOK_SEEDS, markdown_inert, runbooks_seed

pytestmark = pytest.mark.django_db

TREE_LEAVES = (
    "ttft.queue.load", "ttft.queue.kv_capacity", "ttft.queue.lora_deferred",
    "ttft.prefill.long_prompts", "ttft.prefill.cache_miss", "ttft.frontend", "tpot.step_work",
    "tpot.preemption", "tpot.straggler.gpu_throttle", "tpot.collective",
    "availability.replica_down", "availability.retry_storm", "availability.gateway_errors",
    "quality.artifact_regression", "inventory.version_skew", "healthy",
)  # fmt: skip
METRIC = re.compile(r"\b((?:vllm:|DCGM_|http_|process_)[A-Za-z0-9_:]+)")


def test_one_runbook_per_leaf_is_seeded_under_its_slug() -> None:
    assert sorted(LEAVES) == sorted(TREE_LEAVES)
    slugs = set(Runbook.objects.values_list("slug", flat=True))
    assert slugs == {leaf.replace(".", "-") for leaf in TREE_LEAVES}


def test_every_runbook_explains_the_signal_the_checks_and_the_safe_actions() -> None:
    for runbook in Runbook.objects.all():
        body = runbook.body_markdown
        assert body.startswith("# Signal"), runbook.slug
        assert "# Checks" in body and "# Safe actions" in body, runbook.slug
        assert "FleetScope never applies anything" in body, runbook.slug


def test_every_metric_a_runbook_names_is_in_the_catalog() -> None:
    named = {m for seed in RUNBOOK_SEEDS for m in METRIC.findall(seed.body_markdown)}
    assert len(named) > 30
    assert [name for name in sorted(named) if not entries_for_name(name)] == []


def test_seeding_again_leaves_edited_runbooks_alone() -> None:
    Runbook.objects.filter(slug="healthy").update(body_markdown="our own words")
    Runbook.objects.filter(slug="tpot-collective").delete()
    assert runbooks_seed(Runbook) == 1
    assert Runbook.objects.get(slug="healthy").body_markdown == "our own words"
    assert Runbook.objects.filter(slug="tpot-collective").exists()


def test_markdown_is_rendered_inert() -> None:
    html = markdown_inert(
        '# Signal <b>\n<script>alert(1)</script> and `<img src=x onerror="y">`\n\n'
        "- a **strong** point\n1. first\n```\n<b>kept as text</b>\n```"
    )
    assert "<script>" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<code>&lt;img src=x onerror=&quot;y&quot;&gt;</code>" in html
    assert '<h2 id="signal-b">Signal &lt;b&gt;</h2>' in html
    assert "<ul>\n<li>a <strong>strong</strong> point</li>\n</ul>" in html
    assert "<ol>\n<li>first</li>\n</ol>" in html
    assert "<pre><code>&lt;b&gt;kept as text&lt;/b&gt;</code></pre>" in html


def test_an_indented_line_continues_its_list_item() -> None:
    html = str(markdown_inert("1. Compare the clocks; if they\n   are missing, say so.\n2. Next"))
    assert "<li>Compare the clocks; if they are missing, say so.</li>" in html
    assert "<li>Next</li>" in html
    assert "<p>" not in html


def test_the_list_links_each_leaf_with_an_anchor(owner_client: Client) -> None:
    page = owner_client.get("/incidents/runbooks/").content.decode()
    assert 'id="ttft-queue-kv_capacity"' in page
    assert 'href="/incidents/runbooks/ttft-queue-kv_capacity/"' in page
    assert "ttft.queue.kv_capacity" in page


def test_a_runbook_page_has_linkable_sections(owner_client: Client) -> None:
    response = owner_client.get("/incidents/runbooks/tpot-preemption/")
    assert response.status_code == 200
    page = response.content.decode()
    assert '<h2 id="signal">Signal</h2>' in page and '<h2 id="safe-actions">' in page
    assert "<code>vllm:num_preemptions_total</code>" in page


def test_an_edited_runbook_body_stays_inert_on_its_page(owner_client: Client) -> None:
    Runbook.objects.filter(slug="healthy").update(body_markdown="<script>alert(1)</script>")
    page = owner_client.get("/incidents/runbooks/healthy/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


def test_an_unknown_runbook_is_a_404(owner_client: Client) -> None:
    assert owner_client.get("/incidents/runbooks/no-such-leaf/").status_code == 404


def test_direction_controls_in_markdown_are_shown_not_applied() -> None:
    html = str(markdown_inert("# a\u202eb\n\nx\u202ey `c\u202ed`\n```\ne\u2066f\n```"))
    assert "\u202e" not in html and "\u2066" not in html
    assert '<h2 id="ab">a<span class="bidi-control"' in html  # the anchor stays plain
    assert html.count("U+202E</span>") == 3 and "U+2066</span>" in html


@pytest.mark.parametrize(
    ("url", "link"),
    [
        ("https://wiki.example/kv", "https://wiki.example/kv"),
        ("http://wiki.example/kv", "http://wiki.example/kv"),
        ("javascript:alert(1)", ""),
        (" JavaScript:alert(1)", ""),
        ("java\tscript:alert(1)", ""),
        ("data:text/html,<script>alert(1)</script>", ""),
    ],
)
def test_only_a_web_address_is_linked_from_a_runbook(url: str, link: str) -> None:
    assert Runbook(slug="x", title="x", external_url=url).external_link == link
