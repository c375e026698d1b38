"""Endpoints get their identity (the normalised target) and an `instance` unique in the fleet.

Backfill, fleet by fleet in order of creation: each endpoint's target from its URL
(inventory.identity), and its instance as registration assigns it (host:port, or
host:port/path when an older endpoint of the fleet holds host:port). Two existing
endpoints that turn out to be one target (`/metrics` and `/metrics/`) cannot both keep
it: the older keeps the target; the newer is disabled, keeps its rows and history, and is
marked `...#duplicate-of-<id>` (no registered URL has a fragment) for an admin to delete.
The unique constraints follow in 0006: PostgreSQL refuses to alter a table in the
transaction that updated its rows while foreign-key checks are pending.
"""

from typing import Any

from django.db import migrations, models

from inventory.identity import instance_candidates, normalised_target


def backfill(apps: Any, schema_editor: Any) -> None:
    Endpoint = apps.get_model("inventory", "Endpoint")
    fleet_ids = Endpoint.objects.values_list("fleet_id", flat=True).distinct()
    for fleet_id in list(fleet_ids):
        targets: dict[str, int] = {}
        instances: set[str] = set()
        for endpoint in Endpoint.objects.filter(fleet_id=fleet_id).order_by("pk"):
            target = normalised_target(endpoint.url)
            if target in targets:
                target = f"{target}#duplicate-of-{targets[target]}"
                endpoint.enabled = False
            else:
                targets[target] = endpoint.pk
            candidates = instance_candidates(target)
            instance = next((c for c in candidates if c not in instances), candidates[-1])
            instances.add(instance)
            endpoint.target, endpoint.instance = target, instance
            endpoint.save(update_fields=["target", "instance", "enabled"])


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0004_sampleframe_token"),
    ]

    operations = [
        migrations.AddField(
            model_name="endpoint",
            name="target",
            field=models.CharField(default="", editable=False, max_length=520),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="endpoint",
            name="instance",
            field=models.CharField(default="", editable=False, max_length=520),
            preserve_default=False,
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
