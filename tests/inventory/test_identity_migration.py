"""Migrations 0005 and 0006 give existing endpoints their identity: targets and unique instances,
and of two rows that were one target, the newer disabled and marked, not lost."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("inventory", "0004_sampleframe_token")]
AFTER = [("inventory", "0006_endpoint_identity_unique")]


def test_the_backfill_names_each_target_once_and_keeps_shared_host_ports_apart() -> None:
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps
        fleet = old.get_model("inventory", "Fleet").objects.create(slug="old", name="old")
        Endpoint = old.get_model("inventory", "Endpoint")
        urls = [
            "http://10.0.0.5:8000/metrics",
            "http://10.0.0.5:8000/metrics/",  # the same target: disabled, marked
            "http://10.0.0.5:8000/federate",  # the same host:port, another path
            "HTTP://10.0.0.6/metrics",
        ]
        ids = [Endpoint.objects.create(fleet=fleet, url=url).pk for url in urls]
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("inventory", "Endpoint")
        rows = {e.url: (e.target, e.instance, e.enabled) for e in new.objects.order_by("pk")}
    finally:
        MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())
    assert rows == {
        urls[0]: ("http://10.0.0.5:8000/metrics", "10.0.0.5:8000", True),
        urls[1]: (
            f"http://10.0.0.5:8000/metrics#duplicate-of-{ids[0]}",
            "10.0.0.5:8000/metrics",
            False,
        ),
        urls[2]: ("http://10.0.0.5:8000/federate", "10.0.0.5:8000/federate", True),
        urls[3]: ("http://10.0.0.6:80/metrics", "10.0.0.6:80", True),
    }
