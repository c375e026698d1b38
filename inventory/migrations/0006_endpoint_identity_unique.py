"""Each target once per fleet, and each instance once per fleet (backfilled by 0005)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0005_endpoint_target_identity"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="endpoint",
            constraint=models.UniqueConstraint(
                fields=("fleet", "target"), name="endpoint_unique_target_per_fleet"
            ),
        ),
        migrations.AddConstraint(
            model_name="endpoint",
            constraint=models.UniqueConstraint(
                fields=("fleet", "instance"), name="endpoint_unique_instance_per_fleet"
            ),
        ),
    ]
