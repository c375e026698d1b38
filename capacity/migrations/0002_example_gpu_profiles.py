"""Seeds a few GPU profiles, each marked as an example: a starting point to copy and
correct, never a measured figure. The values are copied here (not imported) so the
migration keeps meaning what it meant when it ran."""

from __future__ import annotations

from typing import Any

from django.db import migrations

GIB = 1024**3
NOTE = (
    "example: usable memory is what CUDA exposes on a typical driver, the price a "
    "placeholder; replace both with your own"
)
EXAMPLES = (
    ("H100-80GB", 79.1, 4.00),
    ("H200-141GB", 139.8, 5.00),
    ("A100-80GB", 79.1, 2.50),
    ("A100-40GB", 39.4, 1.60),
    ("L40S-48GB", 44.4, 1.50),
    ("L4-24GB", 22.0, 0.80),
)


def seed(apps: Any, schema_editor: Any) -> None:
    GpuProfile = apps.get_model("capacity", "GpuProfile")
    for name, usable_gib, price in EXAMPLES:
        GpuProfile.objects.get_or_create(
            name=name,
            defaults={
                "usable_memory_bytes": round(usable_gib * GIB),
                "price_per_hour_usd": price,
                "example": True,
                "note": NOTE,
            },
        )


def unseed(apps: Any, schema_editor: Any) -> None:
    GpuProfile = apps.get_model("capacity", "GpuProfile")
    GpuProfile.objects.filter(example=True, name__in=[n for n, _, _ in EXAMPLES]).delete()


class Migration(migrations.Migration):
    dependencies = [("capacity", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
