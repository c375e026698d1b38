"""A series listed twice in one exposition (issue 18, item 8).

The same name and label set on two lines (labels possibly in another order) is one
series. Prometheus does not fail such a scrape: it keeps the first sample and drops
the other (counted in prometheus_target_scrapes_sample_duplicate_timestamp_total).
FleetScope stores the series once and the inventory says so, naming both lines.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from inventory.drift import EndpointSnapshot, fleet_findings
from inventory.exposition import LabelCache, parse
from inventory.scraping.policy import OutboundPolicy
from inventory.scraping.scraper import ScrapeOutcome, Scraper
from inventory.snapshot import inventory_snapshot
from inventory.store.encoding import decode_layout, decode_values
from tests.inventory.badservers import send_body, serving

LOOPBACK = OutboundPolicy(allow_loopback=True)

BODY = (
    b"# HELP vllm:num_requests_running Requests running.\n"
    b"# TYPE vllm:num_requests_running gauge\n"
    b'vllm:num_requests_running{engine="0",model_name="m"} 3\n'
    b'vllm:num_requests_running{engine="1",model_name="m"} 4\n'
    b'vllm:num_requests_running{model_name="m",engine="0"} 9\n'
    b"# HELP vllm:num_requests_waiting Requests waiting.\n"
    b"# TYPE vllm:num_requests_waiting gauge\n"
    b'vllm:num_requests_waiting{model_name="m"} 1\n'
    b'vllm:num_requests_waiting{model_name="m"} 1\n'
)
RUNNING = (
    "series vllm:num_requests_running{engine='0',model_name='m'} is listed on lines 3 "
    "and 5: stored once, with the value of line 3 (Prometheus too keeps the first)"
)
WAITING = (
    "series vllm:num_requests_waiting{model_name='m'} is listed on lines 8 and 9: "
    "stored once, with the value of line 8 (Prometheus too keeps the first)"
)


def scrape_once(scraper: Scraper, url: str) -> ScrapeOutcome:
    return asyncio.run(scraper.scrape_many([url]))[0]


def scraped_once_with_problems(body: bytes, content_type: str | None) -> dict[str, Any]:
    """Scrape `body` three times (cold, then warm caches): each stores the three series
    once, with the first line's values; the inventory's families of the first scrape."""
    send = (
        (lambda h: send_body(h, body))
        if content_type is None
        else (lambda h: send_body(h, body, content_type=content_type))
    )
    with serving(send) as server:
        scraper = Scraper(policy=LOOPBACK)
        outcomes = [scrape_once(scraper, server.url()) for _ in range(3)]
    for outcome in outcomes:
        assert outcome.ok, outcome.error
        assert outcome.sample_count == 3
        assert outcome.frame is not None
        assert list(decode_values(outcome.frame.values_blob)) == [3.0, 4.0, 1.0]
    first = outcomes[0]
    assert first.frame is not None and first.frame.layout_blob is not None
    assert decode_layout(first.frame.layout_blob) == [
        ("vllm:num_requests_running", {"engine": "0", "model_name": "m"}),
        ("vllm:num_requests_running", {"engine": "1", "model_name": "m"}),
        ("vllm:num_requests_waiting", {"model_name": "m"}),
    ]
    assert first.inventory is not None
    return dict(first.inventory.families)


def family_problems(families: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The inventory's findings of families with a problem, as the fleet's page lists them."""
    now = datetime.now(UTC)
    snapshot = EndpointSnapshot(
        endpoint_id=1,
        url="http://127.0.0.1:9230/metrics",
        kind="vllm",
        dialect=None,
        families=families,
        last_run_at=now,
        last_run_ok=True,
        last_error="",
        last_success_at=now,
    )
    findings = fleet_findings([snapshot], now=now, interval_seconds=15, deprecated=lambda n: None)
    return [(f.code, f.family, f.message) for f in findings if f.code == "family-problem"]


def test_a_series_listed_twice_is_stored_once_with_a_finding() -> None:
    families = scraped_once_with_problems(BODY, None)
    assert families["vllm:num_requests_running"]["problems"] == [RUNNING]
    assert families["vllm:num_requests_waiting"]["problems"] == [WAITING]


def test_the_inventory_lists_a_finding_per_repeated_series() -> None:
    assert family_problems(inventory_snapshot(parse(BODY)).families) == [
        ("family-problem", "vllm:num_requests_running", RUNNING),
        ("family-problem", "vllm:num_requests_waiting", WAITING),
    ]


def test_a_repeat_that_appears_on_a_warm_layout_is_found_too() -> None:
    # The cached re-read path (templates): a label value moves so that two lines of a
    # layout already seen without repeats become one series.
    once = (
        BODY[: BODY.rindex(b"vllm:num_requests_waiting")]
        + b'vllm:num_requests_waiting{model_name="n"} 1\n'
    )
    warm = once.replace(b'{model_name="m",engine="0"} 9', b'{model_name="m",engine="2"} 9')
    cache = LabelCache()
    for _ in range(2):
        assert not [f.problems for f in parse(warm, cache=cache) if f.problems]
    assert cache.template is not None
    families = parse(once, cache=cache)
    running = next(f for f in families if f.name == "vllm:num_requests_running")
    assert [s.value for s in running.samples] == [3.0, 4.0]
    assert running.problems == (RUNNING,)
    assert cache.template is None  # its samples no longer match its lines: no layout
    assert parse(warm, cache=cache)[0].problems == ()


def test_every_path_keeps_the_first_of_a_series_listed_three_times() -> None:
    body = (
        "# TYPE h histogram\n"
        'h_bucket{le="1"} 1\n'
        'h_bucket{le="+Inf"} 2\n'
        'h_bucket{le="+Inf"} 5\n'
        "h_count 2\n"
        'h_bucket{le="+Inf"} 7\n'
        "h_sum 3\n"
    )
    expected = (
        "series h_bucket{le='+Inf'} is listed on lines 3, 4 and 6: stored once, "
        "with the value of line 3 (Prometheus too keeps the first)"
    )
    for fast in (True, False):
        (family,) = parse(body, fast=fast)
        assert [(s.name, s.value) for s in family.samples] == [
            ("h_bucket", 1.0),
            ("h_bucket", 2.0),
            ("h_count", 2.0),
            ("h_sum", 3.0),
        ]
        assert family.problems == (expected,)


# OpenMetrics lets a series appear on more than one line only as MetricPoints with
# increasing timestamps (a Metric's points "MUST have monotonically increasing
# timestamps"); one on adjacent lines without a timestamp, or at the same one, is the
# same repeat. Lines of other metrics between two of them interleave metrics, which the
# specification forbids outright: that payload is rejected.
OM_BODY = (
    b"# TYPE vllm:num_requests_running gauge\n"
    b"# HELP vllm:num_requests_running Requests running.\n"
    b'vllm:num_requests_running{engine="0",model_name="m"} 3\n'
    b'vllm:num_requests_running{model_name="m",engine="0"} 9\n'
    b'vllm:num_requests_running{engine="1",model_name="m"} 4\n'
    b"# TYPE vllm:num_requests_waiting gauge\n"
    b'vllm:num_requests_waiting{model_name="m"} 1\n'
    b'vllm:num_requests_waiting{model_name="m"} 1\n'
    b"# EOF\n"
)
OM_RUNNING = RUNNING.replace("lines 3 and 5", "lines 3 and 4")
OM_WAITING = WAITING.replace("lines 8 and 9", "lines 7 and 8").replace("line 8 ", "line 7 ")
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def test_an_openmetrics_series_repeated_on_adjacent_lines_is_stored_once_with_a_finding() -> None:
    families = scraped_once_with_problems(OM_BODY, OPENMETRICS)
    assert families["vllm:num_requests_running"]["problems"] == [OM_RUNNING]
    assert families["vllm:num_requests_waiting"]["problems"] == [OM_WAITING]
    assert family_problems(families) == [
        ("family-problem", "vllm:num_requests_running", OM_RUNNING),
        ("family-problem", "vllm:num_requests_waiting", OM_WAITING),
    ]
